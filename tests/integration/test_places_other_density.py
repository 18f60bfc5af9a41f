"""A place away from a key's point, checked before the key on a screen drawn at twice the
density: FeatherPad's status bar, whose line count the Return key changes.

FeatherPad (Qt 5) under Xvfb, each time on a file and an X server of its own: at 1x on a
three-line file (the recording's screen before Return) and on a four-line one (its screen after
it), then at 2x (``QT_SCALE_FACTOR=2`` on a screen twice as large) on each. The places are found
on the two 1x screens as a recording finds them
(:func:`askcache.foundation.screen.elsewhere.changes_elsewhere`); the 2x screens are brought to
the recorded size as a replay brings them. "Lines: 3" drawn anew at 2x is more than
:data:`~askcache.foundation.screen.elsewhere.MATCH_THRESHOLD` bits from its 1x hash, and within
the limit at another density; "Lines: 4" at 2x is refused at either.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from PIL import Image

from askcache.foundation.screen.elsewhere import (
    MATCH_THRESHOLD,
    ChangeElsewhere,
    before_limit,
    changes_elsewhere,
    check_before,
)
from askcache.foundation.screen.hashing import hamming_distance
from askcache.testing.accessibility import application_on_file
from askcache.tools.desktop import DesktopBackend

pytestmark = pytest.mark.integration

THREE = "milk\neggs\nbread"
FOUR = "milk\neggs\nbread\n"
SIZE = (1024, 768)
STATUS_TOP = 470
"""The status bar's top at 1x (FeatherPad's window is 700 x 500 at the screen's corner)."""
POINT = (200, 250)
"""The key's point as recorded: the pointer, left in the text area by the click before it."""


def _status_bar(scale: int, image: Image.Image) -> Image.Image:
    return image.crop((0, STATUS_TOP * scale, 700 * scale, 500 * scale))


def _screen(folder: Path, text: str, scale: int) -> Image.Image:
    """FeatherPad's screen on a file holding ``text``, at ``scale``, once its status bar shows
    a line count and stays the same over two screenshots; brought to :data:`SIZE`."""
    env = {"QT_QPA_PLATFORM": "xcb", "QT_SCALE_FACTOR": str(scale)}
    size = (SIZE[0] * scale, SIZE[1] * scale)
    with application_on_file(["featherpad"], folder, text, env, size) as (display, _):
        backend = DesktopBackend(display)
        try:
            deadline = time.monotonic() + 120  # only against an editor that hangs
            last = None
            while time.monotonic() < deadline:
                image = backend.screenshot()
                bar = _status_bar(scale, image)
                low, high = bar.convert("L").getextrema()
                if last is not None and high - low > 100 and bar.tobytes() == last.tobytes():
                    break
                last = bar
                time.sleep(0.3)
            else:
                raise AssertionError("FeatherPad's status bar never settled")
        finally:
            backend.close()
    return image if scale == 1 else image.resize(SIZE, Image.Resampling.LANCZOS)


def _line_count_place(before: Image.Image, after: Image.Image) -> ChangeElsewhere:
    places = changes_elsewhere(before, after, POINT, 32)
    in_bar = [place for place in places if place.box[1] >= STATUS_TOP - 8]
    assert len(in_bar) == 1, places
    return in_bar[0]


@pytest.mark.skipif(
    shutil.which("featherpad") is None,
    reason="featherpad is not installed (Debian: featherpad)",
)
def test_the_line_count_drawn_at_2x_passes_before_the_key_and_another_count_does_not(
    tmp_path: Path,
) -> None:
    recorded_before = _screen(tmp_path / "three-1x", THREE, 1)
    recorded_after = _screen(tmp_path / "four-1x", FOUR, 1)
    place = _line_count_place(recorded_before, recorded_after)
    limit = before_limit(place, other_density=True)
    assert before_limit(place) == MATCH_THRESHOLD
    assert limit > MATCH_THRESHOLD  # the key changes the place by far more than the limit

    redrawn_before = _screen(tmp_path / "three-2x", THREE, 2)
    redrawn_after = _screen(tmp_path / "four-2x", FOUR, 2)

    assert check_before([place], recorded_before) is None
    assert check_before([place], recorded_after) is not None
    assert check_before([place], redrawn_before) is not None  # as a 1x screen: 28 bits here
    assert check_before([place], redrawn_before, other_density=True) is None
    refused = check_before([place], redrawn_after, other_density=True)
    assert refused is not None
    assert f"at most {limit}" in refused

    # what the rule forgives, and by how much the other state stays apart
    same = hamming_distance(_hash(redrawn_before, place), place.before)
    other = hamming_distance(_hash(redrawn_after, place), place.before)
    assert same <= limit < other
    assert other >= 2 * limit - 8  # the state after the key is nowhere near the limit


def _hash(image: Image.Image, place: ChangeElsewhere) -> str:
    from askcache.foundation.screen.elsewhere import HASH_SIZE
    from askcache.foundation.screen.hashing import compute_hash

    return compute_hash(image.crop(place.box), "phash", HASH_SIZE)
