"""The progress bar: drawn on a terminal only, after its delay, cleared when done."""

from __future__ import annotations

import io
import os
import pty

from askcache.cli.progress import ProgressBar


def _read_until(fd: int, wanted: bytes) -> bytes:
    seen = b""
    while wanted not in seen:
        chunk = os.read(fd, 4096)
        assert chunk, f"the terminal closed before {wanted!r}: {seen!r}"
        seen += chunk
    return seen


def test_a_bar_is_drawn_on_a_terminal_and_cleared_at_the_end() -> None:
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w", encoding="utf-8") as terminal:
        with ProgressBar("reading", stream=terminal, delay=0) as bar:
            bar.update(5, 10)
            seen = _read_until(leader, b"5/10")
        assert b"reading [###############...............]  50% 5/10" in seen
        assert _read_until(leader, b"\r\x1b[2K").endswith(b"\r\x1b[2K")
    os.close(leader)


def test_without_a_total_it_counts() -> None:
    bar = ProgressBar("reading", stream=io.StringIO())
    bar.update(1234)
    assert bar.line().startswith("reading: 1,234 (")


def test_nothing_is_drawn_off_a_terminal_or_when_disabled() -> None:
    stream = io.StringIO()
    with ProgressBar("reading", stream=stream, delay=0) as bar:
        bar.update(1, 2)
        bar.echo("a line")
    assert stream.getvalue() == ""
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w", encoding="utf-8") as terminal:
        with ProgressBar("reading", stream=terminal, delay=0, enabled=False) as bar:
            assert not bar.enabled
        terminal.write("end\n")
        terminal.flush()
        assert _read_until(leader, b"end").startswith(b"end")
    os.close(leader)
