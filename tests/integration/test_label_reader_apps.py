"""The label under a point read by OCR on real programs with no accessibility under Xvfb:
xcalc (Xaw) with its 7 key relabelled 9 by an X resource, and the project's Tk form with its
Save button relabelled Save As. Each relabel must read differently, each re-read of the same
pixels the same, and a blank place must give no reading."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from bench.faults import xcalc_buttons
from PIL import Image

from askcache.fingerprint.label_reader import read_label, same_label
from askcache.testing import TkFormApp, VirtualDisplay, run_on_display
from askcache.tools.desktop import DesktopBackend

pytestmark = pytest.mark.integration

SEVEN = 37
"""xcalc's 7 key, in app-defaults order (TI layout)."""


def _settled(backend: DesktopBackend, ready: Callable[[Image.Image], bool]) -> Image.Image:
    """A screenshot once two in a row are the same and ``ready`` says the program has drawn
    what the test needs (no time margin: a guard against a program that never draws)."""
    deadline = time.monotonic() + 120
    last = b""
    while True:
        shot = backend.screenshot()
        if shot.tobytes() == last and ready(shot):
            return shot
        if time.monotonic() > deadline:
            raise AssertionError("the screen did not settle")
        last = shot.tobytes()
        time.sleep(0.05)


def _centre(box: tuple[int, int, int, int]) -> tuple[int, int]:
    return ((box[0] + box[2]) // 2, (box[1] + box[3]) // 2)


def test_an_xcalc_key_relabelled_reads_differently() -> None:
    command = ["xcalc", "-geometry", "260x360+0+0"]
    with VirtualDisplay(1280, 800) as display:
        backend = DesktopBackend(display.display)
        try:
            with run_on_display(display.display, *command):
                keys = xcalc_buttons(display.display)
                seven = _centre(keys[SEVEN - 1])
                sine = _centre(keys[6])

                def drawn(shot: Image.Image) -> bool:
                    return read_label(shot, seven) is not None

                before = _settled(backend, drawn)
            relabel = ["-xrm", f"XCalc*ti.button{SEVEN}.label: 9"]
            with run_on_display(display.display, *command, *relabel):
                after = _settled(backend, drawn)
        finally:
            backend.close()
    recorded = read_label(before, seven)
    assert recorded is not None
    assert read_label(before.copy(), seven) == recorded  # the same pixels, the same reading
    now = read_label(after, seven)
    assert now is not None
    assert not same_label(recorded.text, now.text)
    sin, sin_after = read_label(before, sine), read_label(after, sine)
    assert sin is not None
    assert sin_after is not None
    assert sin.text == "sin"
    assert same_label(sin.text, sin_after.text)
    assert read_label(before, (900, 600)) is None  # the empty root window


def test_a_tk_button_relabelled_reads_its_new_label(tmp_path: Path) -> None:
    shots: dict[str, tuple[Image.Image, tuple[int, int]]] = {}
    with VirtualDisplay(1280, 800) as display:
        backend = DesktopBackend(display.display)
        try:
            for label in ("Save", "Save As"):
                with TkFormApp(
                    display.display, tmp_path / "state.json", extra_args=["--save-label", label]
                ) as app:
                    app.current()  # every event handled and drawn
                    save = app.center("save")
                    shots[label] = (_settled(backend, lambda _shot: True), save)
        finally:
            backend.close()
    (before, point), (after, same_point) = shots["Save"], shots["Save As"]
    assert point == same_point
    recorded, now = read_label(before, point), read_label(after, point)
    assert recorded is not None
    assert now is not None
    assert (recorded.text, now.text) == ("Save", "Save As")
    assert not same_label(recorded.text, now.text)
    assert read_label(before, point) == recorded
