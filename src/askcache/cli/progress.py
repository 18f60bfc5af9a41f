"""A progress bar on stderr for reads that take a while (``stats``, ``list``).

:class:`ProgressBar` shows nothing for the first second, nor ever when stderr is not a
terminal or the output is ``--json``; after that it redraws one line a few times a second:
a bar and a count when the total is known, the seconds spent otherwise. Leaving it clears the
line, so what the command prints next starts clean; lines printed meanwhile go through
:meth:`ProgressBar.echo`, above the bar.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO

__all__ = ["SHOW_AFTER_SECONDS", "ProgressBar"]

SHOW_AFTER_SECONDS = 1.0
"""A read shorter than this shows no bar."""

_WIDTH = 30


class ProgressBar:
    """A context manager drawing ``label``'s progress (see the module docstring)."""

    def __init__(
        self,
        label: str,
        *,
        stream: TextIO | None = None,
        enabled: bool = True,
        delay: float = SHOW_AFTER_SECONDS,
        interval: float = 0.2,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and _is_terminal(self.stream)
        self.delay = delay
        self.interval = interval
        self.done = 0
        self.total: int | None = None
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._drawn = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def update(self, done: int, total: int | None = None) -> None:
        """Record how far the work is (``total``: ``None`` while unknown)."""
        self.done, self.total = done, total

    def echo(self, text: str) -> None:
        """Print ``text`` on stdout, above the bar (which is redrawn after it)."""
        with self._lock:
            self._clear()
            print(text, flush=True)

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._drawn = False

    def __enter__(self) -> ProgressBar:
        self._started = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="askcache-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            self._clear()

    def line(self) -> str:
        """The line as drawn now."""
        seconds = time.monotonic() - self._started
        if not self.total:
            return f"{self.label}: {self.done:,} ({seconds:.0f} s)"
        share = min(self.done / self.total, 1.0)
        filled = round(share * _WIDTH)
        bar = "#" * filled + "." * (_WIDTH - filled)
        return f"{self.label} [{bar}] {share:4.0%} {self.done:,}/{self.total:,} ({seconds:.0f} s)"

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            with self._lock:
                self.stream.write("\r\x1b[2K" + self.line())
                self.stream.flush()
                self._drawn = True
            if self._stop.wait(self.interval):
                return


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
