"""Child processes the testing helpers start: one way to start an X program, one to stop."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

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
def run_on_display(display: str, *command: str, startup_seconds: float = 1.0) -> Iterator[None]:
    """Run ``command`` (an X program such as ``xcalc``) on ``display``, give it
    ``startup_seconds`` to draw, and stop it when the block ends."""
    process = subprocess.Popen(
        list(command),
        env={**os.environ, "DISPLAY": display},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(startup_seconds)
        yield
    finally:
        stop_process(process)
