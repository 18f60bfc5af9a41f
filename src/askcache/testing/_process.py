"""Child processes the testing helpers start: one way to start an X program, one to stop."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from askcache.foundation.errors import AskCacheError

__all__ = ["run_on_display", "stop_process"]


def stop_process(process: subprocess.Popen[Any] | None, timeout: float = 5.0) -> None:
    """Terminate ``process``, kill it if it does not exit within ``timeout``, close its pipes."""
    if process is None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


@contextmanager
def run_on_display(display: str, *command: str, timeout: float = 180.0) -> Iterator[None]:
    """Run ``command`` (an X program such as ``xcalc``) on ``display``, wait until it has drawn
    its window (a new top-level window is viewable and shows more than one colour), and stop
    it when the block ends. ``timeout`` only guards against a program that never draws."""
    from Xlib import X

    from askcache.foundation.screen.xserver import connect

    connection = connect(display)
    try:
        root = connection.screen().root
        before = {window.id for window in root.query_tree().children}
        process = subprocess.Popen(
            list(command),
            env={**os.environ, "DISPLAY": display},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + timeout
            while not _drawn(root, before, X.IsViewable, X.ZPixmap):
                if process.poll() is not None:
                    raise AskCacheError(f"{command[0]} exited at start ({process.returncode})")
                if time.monotonic() > deadline:
                    raise AskCacheError(f"{command[0]} drew no window within {timeout} s")
                time.sleep(0.02)
            yield
        finally:
            stop_process(process)
    finally:
        connection.close()


def _drawn(root: Any, before: set[int], viewable: int, zpixmap: int) -> bool:
    """True when a top-level window not in ``before`` is viewable and not of one colour."""
    for window in root.query_tree().children:
        if window.id in before or window.get_attributes().map_state != viewable:
            continue
        box = window.get_geometry()
        pixels = window.get_image(0, 0, box.width, box.height, zpixmap, 0xFFFFFFFF).data
        if pixels.count(pixels[:4]) * 4 != len(pixels):
            return True
    return False
