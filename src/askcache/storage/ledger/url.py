"""A ledger URL's password, never shown: :func:`redact_url` and :func:`hide_password`.

A driver's message about a URL it could not read or connect to may quote any part of the URL
(libpq quotes a password with a space in it, and a host name that holds the rest of a
password with an ``@`` in it). Every message a ledger engine raises about its URL goes
through :func:`hide_password`: each way the password may be read from the URL, and each
piece a parser may cut it into at a URL delimiter (:func:`url_passwords`), is masked in
every rendered form (:func:`askcache.foundation.redaction.mask_values`), and a message that still
holds half of it in a row is not shown at all; so does every record of the driver's own loggers
(:class:`PasswordFilter`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from askcache.foundation.parameters import SECRET_FRAGMENT_CHARS
from askcache.foundation.redaction import mask_values

__all__ = ["HIDDEN", "PasswordFilter", "hide_password", "redact_url", "url_passwords"]

HIDDEN = "***"
"""What a password is replaced with."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_PASSWORD_KEYS = frozenset({"password", "passwd", "pass", "pwd"})
"""Query keys whose value is a password (``?password=``, as libpq takes it)."""
_DELIMITERS = re.compile(r"[@:/?#]")
"""Where a URL parser may cut a password that holds them unencoded."""


def url_passwords(url: str, *, pieces: bool = False) -> list[str]:
    """The password ``url`` holds, in each way a reader may take it, longest first: between
    the user's ``:`` and the last ``@`` before the path (Python's reading) or the first,
    or the first ``@`` before any ``/`` (libpq's: a ``?`` or ``#`` stays in the password);
    when none of these finds one, all after the user's ``:`` up to the last ``@`` of the
    URL (a ``/`` in the password); and the values of a ``?password=`` query; each as
    written, percent-decoded and percent-encoded; ``[]`` when it has none. With
    ``pieces``, also the parts each is cut into at ``@ : / ? #`` (a parser that cut it there
    quotes the rest as a host, a port or a path)."""
    rest = _SCHEME.sub("", url, count=1)
    authority = rest.split("?", 1)[0].split("#", 1)[0]
    if "/" in authority:  # the path starts at the first / after the last @ (a / may be in it)
        at = authority.rfind("@")
        slash = authority.find("/", max(at, 0))
        authority = authority[:slash] if slash >= 0 else authority
    found: set[str] = set()
    libpq = rest.split("/", 1)[0]  # libpq reads the user's part up to an @ before any /,
    userinfos = [libpq.split("@", 1)[0]] if "@" in libpq else []  # a ? or # kept in it
    if "@" in authority:
        userinfos += [authority.rsplit("@", 1)[0], authority.split("@", 1)[0]]
    for userinfo in userinfos:
        if ":" in userinfo:
            found.add(userinfo.split(":", 1)[1])
    if not found and "@" in rest:  # no reader found one: all before the last @ (fail closed)
        userinfo = rest.rsplit("@", 1)[0]
        if ":" in userinfo:
            found.add(userinfo.split(":", 1)[1])
    query = url.split("?", 1)[1] if "?" in url else ""
    for key, value in parse_qsl(query.split("#", 1)[0], keep_blank_values=False):
        if key.lower() in _PASSWORD_KEYS:
            found.add(value)
    if pieces:
        found |= {piece for raw in found for piece in _DELIMITERS.split(raw)}
    for raw in list(found):
        found.add(unquote(raw))
        found.add(quote(unquote(raw), safe=""))
    return sorted((value for value in found if value), key=lambda value: (-len(value), value))


def hide_password(text: str, url: str, *, instead: str) -> str:
    """``text`` (a driver's message, or a URL shown in one) with ``url``'s password, and
    each piece of it, masked as ``***`` in every rendered form (:func:`url_passwords`);
    ``instead`` when ``text`` would still hold half of it in a row (at least
    :data:`~askcache.foundation.parameters.SECRET_FRAGMENT_CHARS` characters): fail closed."""
    passwords = url_passwords(url)
    if not passwords:
        return text
    masked = mask_values(text, url_passwords(url, pieces=True), HIDDEN)
    for password in passwords:
        run = min(len(password), max(SECRET_FRAGMENT_CHARS, (len(password) + 1) // 2))
        if any(password[i : i + run] in masked for i in range(len(password) - run + 1)):
            return instead
    return masked


def redact_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***`` (for messages and logs); only
    its scheme (``postgresql://...``) when the password cannot be told from the rest."""
    scheme = _SCHEME.match(url)
    unknown = f"{scheme.group(1)}://..." if scheme else "(a URL not shown)"
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return unknown if url_passwords(url) else url
    shown = url
    if password:
        netloc = parts.netloc.rsplit("@", 1)
        user = netloc[0].split(":", 1)[0]
        shown = urlunsplit(parts._replace(netloc=f"{user}:{HIDDEN}@{netloc[1]}"))
    return hide_password(shown, url, instead=unknown)


class PasswordFilter(logging.Filter):
    """A logging filter that hides the password of each URL in :attr:`urls`
    (:func:`hide_password`) in the records of a driver's loggers (psycopg's pool logs why each
    connection failed, as libpq said); one filter per logger, however many ledgers are
    opened (:meth:`add`)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: dict[str, str] = {}
        """URL -> what a record that would still show part of its password says instead."""

    def add(self, url: str, instead: str, loggers: Iterable[str]) -> None:
        """Hide ``url``'s password from now on in the records of ``loggers``."""
        self.urls[url] = instead
        for name in loggers:
            logger = logging.getLogger(name)
            if self not in logger.filters:
                logger.addFilter(self)

    def _hide(self, text: str) -> str:
        for url, instead in list(self.urls.items()):
            text = hide_password(text, url, instead=instead)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.urls:
            return True
        message = record.getMessage()
        hidden = self._hide(message)
        if hidden != message:
            record.msg, record.args = hidden, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._hide(record.exc_text)
        return True
