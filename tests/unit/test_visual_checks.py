"""The checks beyond the hashes: tone (dimming, fading), the whole target (a wide field's far
end) and the blurred detail hash, on real PNG screenshots of the simulated form."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageEnhance

from askcache.cachefile.format import VisualValidationConfig
from askcache.fingerprint.step import (
    StepFingerprint,
    check_step_representation,
    compute_step_representation,
    validation_config,
)
from askcache.foundation.errors import InvalidHashError
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.screen.target import TargetFingerprint
from askcache.foundation.screen.tone import decode_tones
from askcache.foundation.settings import CacheWritingSettings
from askcache.testing import SimulatedFormApp
from tests.helpers import computer_call


def _png(image: Image.Image) -> Image.Image:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def _default() -> VisualValidationConfig:
    config = validation_config(CacheWritingSettings())
    assert config is not None
    return config


def _record(
    image: Image.Image, point: tuple[int, int], config: VisualValidationConfig
) -> tuple[ToolUseBlockParam, StepFingerprint]:
    click = computer_call("left_click", coordinate=list(point))
    stored = compute_step_representation(image, click, config)
    assert stored is not None
    return click, stored


def test_text_left_over_at_a_wide_fields_far_end_hands_back() -> None:
    # The replay engineer's headline case: the Name field still holds "alice" at its left
    # end while the main region (100 px) looks at the field's middle.
    app = SimulatedFormApp()
    field = app.widget("name")
    config = _default()
    click, stored = _record(_png(app.screenshot()), field.center, config)
    assert stored.target is not None
    target = TargetFingerprint.decode(stored.target)
    found = target.absolute(field.center)  # the field inside its border, from its pixels
    assert all(abs(a - b) <= 3 for a, b in zip(found, field.box, strict=True))
    app.values["name"] = "alice"
    after = _png(app.screenshot())
    check = check_step_representation(after, click, stored, config)
    assert not check.matched
    assert check.failed_parts == ["target"]  # the hashes and the tone alone let it through
    assert f"whole target {found}: " in check.describe()
    assert "ink columns changed > 0" in check.describe()
    without_target = config.model_copy(update={"target": None})
    assert check_step_representation(after, click, stored, without_target).matched
    # an empty field again matches
    app.values["name"] = ""
    assert check_step_representation(_png(app.screenshot()), click, stored, config).matched


def test_a_field_filled_at_recording_and_empty_at_replay_hands_back() -> None:
    app = SimulatedFormApp(values={"name": "Grace Hopper", "email": ""})
    config = _default()
    click, stored = _record(_png(app.screenshot()), app.widget("name").center, config)
    assert check_step_representation(_png(app.screenshot()), click, stored, config).matched
    app.values["name"] = ""
    check = check_step_representation(_png(app.screenshot()), click, stored, config)
    assert "target" in check.failed_parts


def test_the_page_background_is_no_target() -> None:
    app = SimulatedFormApp()
    _, stored = _record(_png(app.screenshot()), (600, 300), _default())
    assert stored.target is None
    assert stored.tone is not None
    assert len(decode_tones(stored.tone)) == 2  # main and detail regions


def test_a_dimming_backdrop_hands_back_and_three_percent_brightness_does_not() -> None:
    screen = _png(SimulatedFormApp().screenshot())
    config = _default()
    click, stored = _record(screen, SimulatedFormApp().widget("save").center, config)
    dimmed = _png(Image.blend(screen, Image.new("RGB", screen.size, "black"), 0.5))
    check = check_step_representation(dimmed, click, stored, config)
    assert not check.matched
    assert "brightness" in check.failed_parts
    assert check.distance is not None
    assert check.distance <= config.threshold  # the hash alone normalises the dimming away
    for factor in (0.97, 1.03):
        brighter = _png(ImageEnhance.Brightness(screen).enhance(factor))
        assert check_step_representation(brighter, click, stored, config).matched


def test_an_element_faded_to_show_it_is_disabled_hands_back() -> None:
    app = SimulatedFormApp()
    screen = _png(app.screenshot())
    save = app.widget("save")
    config = _default()
    click, stored = _record(screen, save.center, config)
    faded = screen.copy()
    background = Image.new("RGB", screen.size, screen.getpixel((5, 5)))  # type: ignore[arg-type]
    faded.paste(Image.blend(background, screen, 0.4).crop(save.box), save.box[:2])
    check = check_step_representation(_png(faded), click, stored, config)
    assert not check.matched
    assert "contrast" in check.failed_parts or "brightness" in check.failed_parts


def test_files_without_tone_target_or_blur_are_checked_as_recorded() -> None:
    # A format-2 file: no tone, no target, no blur, no noise floors, detail threshold 14. Its
    # steps get exactly the old check.
    config = _default().model_copy(update={"tone": None, "target": None, "noise_floor": 0.0})
    assert config.detail is not None
    old = config.model_copy(
        update={
            "detail": config.detail.model_copy(
                update={"blur": 0.0, "noise_floor": 0.0, "threshold": 14}
            )
        }
    )
    app = SimulatedFormApp()
    click, stored = _record(_png(app.screenshot()), app.widget("name").center, old)
    assert (stored.tone, stored.target, stored.weak) == (None, None, None)
    app.values["name"] = "alice"
    check = check_step_representation(_png(app.screenshot()), click, stored, old)
    assert check.matched  # the old check never saw the far end of the field
    assert (check.brightness_change, check.target_distance) == (None, None)


@pytest.mark.parametrize(
    "bad", ["", "1,2,3;255;16;0", "5,0,1,9;255;16;0", "0,0,9,9;255;4;ff", "a,b,c,d;1;2;3"]
)
def test_a_malformed_target_is_a_clear_error(bad: str) -> None:
    with pytest.raises(InvalidHashError, match="visual target"):
        TargetFingerprint.decode(bad)


@pytest.mark.parametrize("bad", ["", "zz", "abc"])
def test_a_malformed_tone_is_a_clear_error(bad: str) -> None:
    with pytest.raises(InvalidHashError, match="visual tone"):
        decode_tones(bad)


def test_a_malformed_stored_target_fails_the_check_loudly() -> None:
    app = SimulatedFormApp()
    config = _default()
    click, stored = _record(_png(app.screenshot()), app.widget("name").center, config)
    broken = StepFingerprint(stored.region, stored.detail, stored.tone, "not a target")
    with pytest.raises(InvalidHashError, match="visual target"):
        check_step_representation(_png(app.screenshot()), click, broken, config)


def test_a_fingerprint_stores_no_pixels_and_stays_small() -> None:
    app = SimulatedFormApp()
    _, stored = _record(_png(app.screenshot()), app.widget("name").center, _default())
    assert stored.tone is not None
    assert stored.target is not None
    assert len(stored.tone) == 8  # two regions x (mean, contrast) x 2 hex digits
    assert stored.weak is not None  # the bits noise decides: 64 + 256 bits as hex
    assert stored.other_density is not None  # a 16x16 hash and its weak bits, as hex
    assert len(stored.other_density) == 64 + 1 + 64
    assert stored.size_bytes - len(stored.weak) - len(stored.other_density) < 140


@pytest.mark.parametrize(
    "bad",
    ["0,0,9,9;255;4;f;0;1", "0,0,9,9;255;4;f;3;ff", "0,0,9,9;255;4;f;65;1", "0,0,9,9;255;4;f;2"],
)
def test_a_malformed_row_map_is_a_clear_error(bad: str) -> None:
    with pytest.raises(InvalidHashError, match="visual target"):
        TargetFingerprint.decode(bad)


def test_a_tall_target_keeps_its_row_map_through_the_file() -> None:
    text = "-200,-187,500,165;255;16;1;43;bff"
    target = TargetFingerprint.decode(text)
    assert (target.rows, target.row_ink) == (43, 0xBFF)
    assert target.encode() == text
    assert TargetFingerprint.decode("-198,-16,199,17;255;16;0").rows == 0  # not tall: as before


def _editor(lines: int, *, caret: tuple[int, int] | None = None) -> Image.Image:
    """A white text area 600x320 at the screen's left edge, under a grey bar, holding
    ``lines`` lines of text, with a one-pixel caret at ``caret`` when given."""
    from PIL import ImageDraw

    image = Image.new("RGB", (800, 600), (40, 40, 40))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 799, 59), fill=(200, 200, 200))
    draw.rectangle((0, 60, 599, 379), fill=(255, 255, 255))
    for line in range(lines):
        draw.text((4, 66 + 18 * line), ["milk", "eggs", "bread", "butter"][line], fill=(0, 0, 0))
    if caret is not None:
        draw.line((caret[0], caret[1], caret[0], caret[1] + 14), fill=(0, 0, 0))
    return _png(image)


def test_a_line_more_in_a_tall_text_area_hands_back_and_its_caret_does_not() -> None:
    config = _default()
    click, stored = _record(_editor(3), (200, 300), config)  # below the list
    assert stored.target is not None
    target = TargetFingerprint.decode(stored.target)
    assert target.absolute((200, 300)) == (0, 60, 600, 380)  # touches the screen's left edge
    assert target.rows > 0
    assert check_step_representation(_editor(3), click, stored, config).matched
    # the caret blinking after "bread" sets no row band (nor a column: it is one pixel wide)
    blinking = check_step_representation(_editor(3, caret=(40, 102)), click, stored, config)
    assert blinking.matched
    longer = check_step_representation(_editor(4), click, stored, config)
    assert longer.failed_parts == ["target"]
    assert "ink columns or row bands changed > 0" in longer.describe()


def test_an_area_filling_the_screen_is_no_target() -> None:
    # the screen's background, touching two of its edges: not an element, tall or not
    image = Image.new("RGB", (800, 600), (255, 255, 255))
    from PIL import ImageDraw

    ImageDraw.Draw(image).rectangle((0, 0, 799, 59), fill=(200, 200, 200))
    config = _default()
    _click, stored = _record(_png(image), (200, 300), config)
    assert stored.target is None


def _banded(inked: set[int]) -> Image.Image:
    """A white screen whose box (300, 200, 500, 400), inset by 3 px, is cut into 24 row bands
    (as a tall target's row map cuts it), the bands in ``inked`` painted black."""
    from PIL import ImageDraw

    image = Image.new("RGB", (800, 600), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    edges = [round(i * 194 / 24) for i in range(25)]
    for band in inked:
        draw.rectangle((303, 203 + edges[band], 496, 202 + edges[band + 1]), fill=(0, 0, 0))
    return image


def test_at_another_density_a_gap_drawn_otherwise_is_forgiven_and_a_line_gone_is_not() -> None:
    """Text drawn anew at another density may leave the gap between two lines in a band the
    recording had inked: alone, such a band is forgiven there (not at the same density); two
    side by side (a line gone), or ink where none was (a line more), still count."""
    from askcache.foundation.screen.target import ink_distance

    recorded = {2, 3, 4, 5, 6}
    stored = TargetFingerprint(
        (-100, -100, 100, 100), 255, 0, 16, 24, sum(1 << band for band in recorded)
    )
    point = (400, 300)
    assert ink_distance(_banded(recorded), point, stored, ignore=0xFFFF) == 0
    gap = _banded({2, 3, 5, 6})
    assert ink_distance(gap, point, stored, ignore=0xFFFF) == 1
    assert ink_distance(gap, point, stored, ignore=0xFFFF, other_density=True) == 0
    gone = _banded({2, 3, 4})
    assert ink_distance(gone, point, stored, ignore=0xFFFF, other_density=True) == 2
    more = _banded({*recorded, 9})
    assert ink_distance(more, point, stored, ignore=0xFFFF, other_density=True) == 1
