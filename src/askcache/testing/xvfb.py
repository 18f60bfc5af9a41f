"""A virtual X display (Xvfb) for tests and the demo.

``VirtualDisplay`` starts ``Xvfb`` on a free display number (``-displayfd`` lets the server
choose) and stops it on exit. It needs Debian's ``xvfb`` package.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence

from askcache.foundation.errors import AskCacheError
from askcache.testing._process import stop_process

__all__ = ["VirtualDisplay", "accepts_connections"]


def accepts_connections(display: str) -> bool:
    """True when the local X server of ``display`` (``:N`` or ``:N.S``) answers on its socket
    file, the one Xlib and Tk connect to. A stale socket file answers nothing."""
    number = display.rsplit(":", maxsplit=1)[-1].split(".", maxsplit=1)[0]
    if not display.startswith(":") or not number.isdigit():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(f"/tmp/.X11-unix/X{number}")
        except OSError:
            return False
    return True


class VirtualDisplay:
    """An Xvfb server of the given size; ``display`` is its name, e.g. ``":3"``.
    ``without``: X extensions the server leaves out (``("DAMAGE",)``: a server that does not
    report its drawing)."""

    def __init__(
        self,
        width: int = 1280,
        height: int = 800,
        *,
        depth: int = 24,
        without: Sequence[str] = (),
    ) -> None:
        self.width, self.height, self.depth = width, height, depth
        self.without = tuple(without)
        self.display = ""
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> VirtualDisplay:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 15.0) -> None:
        """Start the server and wait until it accepts connections."""
        binary = shutil.which("Xvfb")
        if binary is None:
            raise AskCacheError("Xvfb is not installed (Debian: apt-get install xvfb)")
        read_end, write_end = os.pipe()
        self._process = subprocess.Popen(
            [
                binary,
                "-displayfd",
                str(write_end),
                "-screen",
                "0",
                f"{self.width}x{self.height}x{self.depth}",
                # without -noreset the server regenerates whenever its last client leaves, and a
                # connection arriving meanwhile is dropped ("connection reset by peer")
                "-noreset",
                "-nolisten",
                "tcp",
                *(arg for name in self.without for arg in ("-extension", name)),
            ],
            pass_fds=(write_end,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write_end)
        try:
            number = self._read_line(read_end, timeout)
        finally:
            os.close(read_end)  # only after the whole line: Xvfb dies if it cannot write it
        if not number:
            self.stop()
            raise AskCacheError(f"Xvfb did not start within {timeout} s")
        self.display = f":{number}"
        deadline = time.monotonic() + timeout
        while not accepts_connections(self.display):
            if time.monotonic() > deadline:
                self.stop()
                raise AskCacheError(f"Xvfb {self.display} does not accept connections")
            time.sleep(0.05)

    @staticmethod
    def _read_line(fd: int, timeout: float) -> str:
        """What Xvfb writes to its ``-displayfd`` up to the newline ('' on timeout or exit)."""
        data = b""
        deadline = time.monotonic() + timeout
        while not data.endswith(b"\n"):
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 64) if ready else b""
            if not chunk:
                return ""
            data += chunk
        return data.decode().strip()

    def stop(self) -> None:
        """Stop the server."""
        stop_process(self._process)
        self._process = None
