"""Tall whole targets on real editors: a click below a list in a text area is refused when
the file holds a line more (drift's *extra line*), and passes on the same file again.

mousepad (GTK 3) and FeatherPad (Qt 5) under Xvfb, each started on a three-line file for the
recording's screen, again on the same file, then on a file with a fourth line. The click
below the list lands in empty text area: its regions and tone look the same on all three
screens; only the text area's row map (:func:`askcache.foundation.screen.target.row_map`)
sees the fourth line.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from Xlib import X

from askcache.fingerprint.step import (
    StepFingerprint,
    check_step_representation,
    compute_step_representation,
    validation_config,
)
from askcache.foundation.screen.target import TargetFingerprint
from askcache.foundation.screen.xserver import connect
from askcache.foundation.settings import CacheWritingSettings
from askcache.testing.accessibility import application_on_file
from tests.helpers import computer_call

pytestmark = pytest.mark.integration

LIST = "milk\neggs\nbread\n"
BELOW_THE_LIST = (200, 250)
"""Below the third line in both editors' text area (their window at the screen's corner)."""

EDITORS = {
    "mousepad": (["mousepad"], {"GSETTINGS_BACKEND": "memory", "NO_AT_BRIDGE": "1"}),
    "featherpad": (["featherpad"], {"QT_QPA_PLATFORM": "xcb"}),
}


def _screenshot(connection: Any) -> Image.Image:
    """The X server's whole screen, read over ``connection`` (python-xlib)."""
    root = connection.screen().root
    box = root.get_geometry()
    raw = root.get_image(0, 0, box.width, box.height, X.ZPixmap, 0xFFFFFFFF).data
    data = raw.encode("latin-1") if isinstance(raw, str) else bytes(raw)
    return Image.frombytes("RGB", (box.width, box.height), data, "raw", "BGRX")


def _shown(connection: Any, timeout: float = 120.0) -> Image.Image:
    """The screen once the editor shows its text area and it has stopped changing: two
    screenshots in a row whose whole target at the point is found and is the same (the
    caret's blink sets no row band). ``timeout`` only guards against an editor that hangs."""
    config = validation_config(CacheWritingSettings())
    assert config is not None
    click = computer_call("left_click", coordinate=list(BELOW_THE_LIST))
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        image = _screenshot(connection)
        stored = compute_step_representation(image, click, config)
        target = stored.target if stored is not None else None
        if target is not None and target == last:
            return image
        last = target
        time.sleep(0.2)
    raise AssertionError(f"the editor's text area never settled on the screen (last: {last})")


def _screen(editor: str, folder: Path, text: str) -> Image.Image:
    """The screen of ``editor`` started on a file holding ``text``, on an X server and in a
    home folder of its own (FeatherPad keeps one instance per user and display: a second
    start would hand its file over)."""
    command, env = EDITORS[editor]
    with application_on_file(command, folder, text, env) as (display, _):
        connection = connect(display)
        try:
            return _shown(connection)
        finally:
            connection.close()


@pytest.mark.parametrize("editor", sorted(EDITORS))
def test_a_click_below_the_list_is_refused_on_a_file_with_a_line_more(
    editor: str, tmp_path: Path
) -> None:
    config = validation_config(CacheWritingSettings())
    assert config is not None
    click = computer_call("left_click", coordinate=list(BELOW_THE_LIST))
    recorded = _screen(editor, tmp_path / "recorded", LIST)
    stored = compute_step_representation(recorded, click, config)
    assert stored is not None
    assert stored.target is not None
    target = TargetFingerprint.decode(stored.target)
    assert target.rows > 0  # the text area is taller than the first search window
    assert target.row_ink != 0  # its three lines are written in some bands

    again = _screen(editor, tmp_path / "again", LIST)
    assert check_step_representation(again, click, stored, config).matched

    longer = _screen(editor, tmp_path / "longer", LIST + "butter\n")
    check = check_step_representation(longer, click, stored, config)
    assert not check.matched
    assert check.failed_parts == ["target"]  # the regions at the point see nothing new
    assert "ink columns or row bands changed" in check.describe()
    without_rows = StepFingerprint(
        stored.region,
        stored.detail,
        stored.tone,
        TargetFingerprint(target.box, target.background, target.ink, target.columns).encode(),
        weak=stored.weak,
        other_density=stored.other_density,
    )
    # the column map alone (the whole target before row maps) lets the fourth line through
    assert check_step_representation(longer, click, without_rows, config).matched
