"""Window titles without the recording machine in them.

An editor names its window after the document's full path (``/home/ada/notes/plan.txt -
Editor``), a terminal after the user, the host and the folder (``ada@build-07: ~/src``).
Stored as they are, such titles put a user's home path, user name and host name into a cache
file shared with a fleet, and a replay on another machine could never find the window by
them. :func:`neutral_title` is what is stored instead, and what a replay compares a live
title as (:func:`askcache.foundation.screen.windows.find_window`):

- every absolute path (``/...``, ``~/...``, ``~user/...``, ``file:///...``, ``C:\\...``) is
  cut to its last part, the document's name: ``plan.txt - Editor``; also right after a
  ``:`` (a terminal's ``ada@build-07:/srv/acme``; a URL's ``//`` is no path);
- the user name of this machine becomes ``<user>``, its host name (and the host name's first
  label) ``<host>``, each as a whole word (the user name exactly, the host name in any case):
  ``<user>@<host>: src``.

The same window on two machines then has the same title, and two documents in windows of one
class still differ by their names. A path with a space in a folder's name loses only its part
before the space; a user or host name of one character is left as it is (it would replace a
word in every title). A title that holds a word equal to the recording machine's user or
host name reads differently on a machine whose names differ: that window is then found by
its size, as any window whose title changed.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
from collections.abc import Iterable
from contextlib import suppress
from functools import cache

__all__ = ["HOST_PLACEHOLDER", "USER_PLACEHOLDER", "machine_names", "neutral_title"]

USER_PLACEHOLDER = "<user>"
"""What the user name of the machine becomes in a stored title."""

HOST_PLACEHOLDER = "<host>"
"""What the host name of the machine becomes in a stored title."""

_PATH = re.compile(
    r"""(?<![\w.~/\\-])"""  # a path starts a word, or after a : (user@host:/srv/x),
    # not inside a URL (its // is no part) or a relative path
    r"""(?:file://)?(?:~[\w.-]*|[A-Za-z]:)?"""  # file://, ~ or ~user, a drive letter
    r"""(?:[/\\][^\s/\\"'<>|*?]+)+[/\\]?"""  # one part or more, each after a separator
)
"""An absolute path in a title."""

_SEPARATOR = re.compile(r"[/\\]")


def _basename(match: re.Match[str]) -> str:
    parts = [part for part in _SEPARATOR.split(match.group(0)) if part]
    return parts[-1] if parts else match.group(0)


def _word(names: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern matching any of ``names`` as a whole word (longest first)."""
    kept = sorted({name for name in names if len(name) > 1}, key=len, reverse=True)
    if not kept:
        return None
    choices = "|".join(re.escape(name) for name in kept)
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{choices})(?![A-Za-z0-9_])")


def neutral_title(
    title: str | None,
    *,
    users: Iterable[str] | None = None,
    hosts: Iterable[str] | None = None,
) -> str | None:
    """``title`` without the machine in it (see the module docstring); ``users`` and
    ``hosts``: the names to replace, by default this machine's (:func:`machine_names`).
    Applying it again changes nothing."""
    if title is None:
        return None
    if users is None or hosts is None:
        own_users, own_hosts = machine_names()
        users = own_users if users is None else users
        hosts = own_hosts if hosts is None else hosts
    text = _PATH.sub(_basename, title)
    user = _word(users)
    if user is not None:
        text = user.sub(USER_PLACEHOLDER, text)
    host = _word(hosts)
    if host is not None:
        text = re.compile(host.pattern, re.IGNORECASE).sub(HOST_PLACEHOLDER, text)
    return text


@cache
def machine_names() -> tuple[frozenset[str], frozenset[str]]:
    """This machine's user names (the login name and the account of this process) and host
    names (the host name and its first label), looked up once."""
    users: set[str] = set()
    with suppress(KeyError, OSError):  # no name for this user id
        users.add(getpass.getuser())
    try:
        import pwd

        users.add(pwd.getpwuid(os.getuid()).pw_name)
    except (ImportError, KeyError, AttributeError):
        pass
    host = socket.gethostname()
    hosts = {host, host.split(".", 1)[0]}
    return frozenset(n for n in users if n), frozenset(n for n in hosts if n)
