"""Connecting to an X server with python-xlib: the authority file it insists on and the
noise it prints.

python-xlib (an optional dependency: ``pip install 'askcache[desktop]'``) fails without an
authority file even when the server needs none (as Xvfb started without ``-auth``), prints
its authority warnings to stdout and leaves the authority file open (a ResourceWarning).
:func:`connect` opens a connection with all three taken care of; the desktop backend, the
screen's damage stream (:mod:`askcache.foundation.screen.damage`) and the testing helpers connect
through it.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

__all__ = ["connect", "ensure_xauthority", "quiet_xlib"]


@contextlib.contextmanager
def quiet_xlib() -> Iterator[None]:
    """Connecting, python-xlib prints auth warnings to stdout and leaves the authority file
    open (a ResourceWarning); neither is ours to show."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        yield


def ensure_xauthority() -> None:
    """python-xlib fails without an authority file even when the server needs none (as
    Xvfb started without ``-auth``): point ``XAUTHORITY`` at an empty one in that case."""
    current = os.environ.get("XAUTHORITY") or os.path.expanduser("~/.Xauthority")
    if not os.path.exists(current):
        handle, path = tempfile.mkstemp(prefix="askcache-", suffix=".Xauthority")
        os.close(handle)
        os.environ["XAUTHORITY"] = path


def connect(display: str) -> Any:
    """A python-xlib ``Display`` connected to ``display`` (``":N"``). Raises what
    python-xlib raises when the server cannot be reached (``Xlib.error.DisplayError``,
    ``OSError``), ``ImportError`` without python-xlib."""
    from Xlib.display import Display

    ensure_xauthority()
    with quiet_xlib():
        return Display(display)
