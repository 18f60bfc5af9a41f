"""Places away from the action point that an action changed (askcache.foundation.screen.elsewhere)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from askcache.foundation.screen.elsewhere import (
    BLOCK,
    HASH_SIZE,
    MATCH_THRESHOLD,
    OTHER_DENSITY_CEILING,
    ChangeElsewhere,
    before_limit,
    changed_blocks,
    changes_elsewhere,
    check_before,
    check_elsewhere,
    prune,
)
from askcache.foundation.screen.hashing import compute_hash

KEY = (400, 500)
"""Where the action clicks: a key, far below the display."""


def _screen(display: str, *, pressed: bool = False, clock: str = "12:00") -> Image.Image:
    """A calculator-like screen: a display at the top, a key far below it, a clock."""
    image = Image.new("RGB", (640, 640), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=28)
    draw.rectangle((20, 20, 320, 70), outline="black")
    draw.text((300, 28), display, fill="black", font=font, anchor="ra")
    draw.rectangle((370, 480, 430, 520), fill="grey" if pressed else "lightgrey")
    draw.text((392, 484), "3", fill="black", font=font)
    draw.text((20, 610), clock, fill="black", font=ImageFont.load_default(size=14))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")  # a real PNG, decoded as a screenshot would be
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def test_the_display_far_from_the_key_is_a_place_the_click_changed() -> None:
    places = changes_elsewhere(_screen("12"), _screen("3", pressed=True), KEY, radius=192)
    assert len(places) == 1
    left, top, right, bottom = places[0].box
    assert 20 <= left < right <= 320
    assert 20 <= top < bottom <= 72
    assert left % BLOCK == 0
    assert top % BLOCK == 0


def test_changes_near_the_point_and_without_a_point_are_not_places_elsewhere() -> None:
    before, after = _screen("12"), _screen("12", pressed=True)
    assert changed_blocks(before, after).any()  # the key was pressed
    assert changes_elsewhere(before, after, KEY, radius=192) == []
    assert changes_elsewhere(_screen("12"), _screen("3"), None, radius=192) == []


def test_the_same_result_passes_and_another_digit_does_not() -> None:
    before = _screen("12")
    places = changes_elsewhere(before, _screen("3", pressed=True), KEY, radius=192)
    assert check_elsewhere(places, before, _screen("3", pressed=True)) is None
    problem = check_elsewhere(places, before, _screen("7", pressed=True))
    assert problem is not None
    assert "differs from the recording" in problem


def test_a_display_that_did_not_change_is_an_effect_that_did_not_appear() -> None:
    before = _screen("12")
    places = changes_elsewhere(before, _screen("3"), KEY, radius=192)
    problem = check_elsewhere(places, before, _screen("12", pressed=True))
    assert problem is not None
    assert "did not appear" in problem


def test_a_place_untouched_now_and_unlike_the_recording_is_not_the_actions() -> None:
    # When recorded, the clock ticked during the click; now it shows another time, untouched.
    places = changes_elsewhere(_screen("0"), _screen("0", clock="12:01"), KEY, radius=192)
    assert len(places) == 1
    now = _screen("0", clock="17:45")
    assert check_elsewhere(places, now, now) is None


def test_places_that_changed_while_nothing_acted_are_pruned() -> None:
    places = changes_elsewhere(_screen("0"), _screen("0", clock="12:01"), KEY, radius=192)
    idle = changed_blocks(_screen("0", clock="12:01"), _screen("0", clock="12:02"))
    assert prune(places, idle) == []
    assert prune(places, np.zeros_like(idle)) == places
    assert prune(places, None) == places


def test_a_place_is_a_strict_model() -> None:
    with pytest.raises(ValueError, match="extra"):
        ChangeElsewhere.model_validate({"box": [0, 0, 8, 8], "before": "", "after": "", "x": 1})


def test_for_a_click_every_change_but_the_element_clicked_is_a_place() -> None:
    from askcache.foundation.screen.elsewhere import ELEMENT_RADIUS

    near_key = (170, 130)  # a key 100 px below the display: within the effect radius
    before, after = _screen("12"), _screen("3")
    assert changes_elsewhere(before, after, near_key, radius=192) == []
    places = changes_elsewhere(before, after, near_key, radius=ELEMENT_RADIUS)
    assert [place.box[1] < 80 for place in places] == [True]  # the display, not the key


def test_a_caret_blinking_away_from_the_point_is_not_a_place() -> None:
    before = _screen("12")
    after = before.copy()
    ImageDraw.Draw(after).line((100, 300, 100, 318), fill="black", width=2)  # a caret shows
    assert changed_blocks(before, after).any()
    assert changes_elsewhere(before, after, KEY, radius=16) == []


def test_before_the_action_each_place_must_look_as_it_did_then() -> None:
    before = _screen("12")
    places = changes_elsewhere(before, _screen("3", pressed=True), KEY, radius=192)
    assert check_before(places, _screen("12")) is None
    problem = check_before(places, _screen("47"))  # the display already shows another number
    assert problem is not None
    assert "looks different before it now" in problem
    assert str(list(places[0].box)) in problem
    assert check_before([], _screen("47")) is None


def test_a_place_that_stayed_where_the_window_shows_it_passes_seen_either_way() -> None:
    # the step's element moved inside its window: the place is checked as seen from where
    # the element went and where the window shows it; looking as recorded in either passes
    before = _screen("12")
    places = changes_elsewhere(before, _screen("3", pressed=True), KEY, radius=192)
    moved_view = _screen("47")
    assert check_before(places, moved_view) is not None
    assert check_before(places, moved_view, also=_screen("12")) is None
    assert check_before(places, moved_view, also=_screen("47")) is not None


def _bits(count: int) -> str:
    """A 256-bit hash (hex) whose first ``count`` bits are set."""
    return f"{(1 << 256) - (1 << (256 - count)) if count else 0:064x}"


def test_at_another_density_the_limit_is_half_the_keys_own_change_between_24_and_32() -> None:
    def limit(moved: int, *, other_density: bool = True) -> int:
        place = ChangeElsewhere(box=(0, 0, 32, 32), before=_bits(0), after=_bits(moved))
        return before_limit(place, other_density=other_density)

    assert limit(64, other_density=False) == MATCH_THRESHOLD  # the recorded density: as ever
    assert limit(20) == MATCH_THRESHOLD  # a place the key changed little keeps the limit
    assert limit(56) == 28
    assert limit(64) == OTHER_DENSITY_CEILING
    assert limit(200) == OTHER_DENSITY_CEILING


def _flipped(hash_hex: str, count: int) -> str:
    """``hash_hex`` (256 bits) with its first ``count`` bits flipped."""
    return f"{int(hash_hex, 16) ^ int(_bits(count), 16):064x}"


def test_at_another_density_a_place_within_the_wider_limit_passes_and_says_its_limit() -> None:
    screen = _screen("12")
    box = (20, 20, 320, 70)
    shown = compute_hash(screen.crop(box), "phash", HASH_SIZE)  # the display as it is now

    def place(away: int) -> ChangeElsewhere:
        """Recorded ``away`` bits from what is shown now; the key moved it 64 bits."""
        before = _flipped(shown, away)
        return ChangeElsewhere(box=box, before=before, after=_flipped(before, 64))

    redrawn = place(28)  # as the status bar's "Lines: 3" drawn at 2x
    assert check_before([redrawn], screen) is not None
    assert check_before([redrawn], screen, other_density=True) is None
    beyond = check_before([place(34)], screen, other_density=True)
    assert beyond is not None
    assert f"at most {OTHER_DENSITY_CEILING}" in beyond
