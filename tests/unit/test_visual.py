"""Hashing, distances, regions, screenshot lookup and decoding on real PNG screenshots."""

from __future__ import annotations

import base64
import io
import itertools

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from askcache.cachefile.format import VisualValidationConfig
from askcache.fingerprint.step import (
    StepFingerprint,
    check_step_representation,
    compute_hash,
    compute_step_representation,
    crop_region,
    decode_screenshot,
    find_recent_screenshot,
    find_recent_screenshot_block,
    hamming_distance,
    region_box,
    region_distance,
    shifted_boxes,
    validation_config,
)
from askcache.foundation.errors import InvalidHashError, InvalidScreenshotError
from askcache.foundation.messages import MessageParam
from askcache.foundation.screen.hashing import weak_bits
from askcache.foundation.settings import CacheWritingSettings
from askcache.testing import SimulatedFormApp
from askcache.tools import encode_png
from tests.helpers import computer_call, form_calls, run_history

METHODS = ["phash", "ahash", "dhash", "whash"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("size", [8, 16])
def test_hash_is_hex_of_size_squared_bits(method: str, size: int) -> None:
    image = SimulatedFormApp().screenshot().crop((100, 50, 200, 150))
    value = compute_hash(image, method, size)
    assert len(value) == size * size // 4
    int(value, 16)
    assert compute_hash(image.copy(), method, size) == value


@pytest.mark.parametrize("method", METHODS)
def test_same_region_is_distance_zero_and_a_changed_one_is_not(method: str) -> None:
    before = SimulatedFormApp().screenshot()
    after = SimulatedFormApp(layout="banner").screenshot()
    box = (160, 50, 260, 150)
    same = hamming_distance(
        compute_hash(before.crop(box), method), compute_hash(before.crop(box), method)
    )
    changed = hamming_distance(
        compute_hash(before.crop(box), method), compute_hash(after.crop(box), method)
    )
    assert same == 0
    assert changed > 0


def test_hamming_distance_counts_bits() -> None:
    assert hamming_distance("ff00", "0f00") == 4
    assert hamming_distance("0000000000000000", "0000000000000001") == 1


def test_hashes_of_different_sizes_are_a_clear_error() -> None:
    with pytest.raises(InvalidHashError, match=r"different sizes: 64 bits .* vs 256 bits"):
        hamming_distance("0" * 16, "0" * 64)


@pytest.mark.parametrize("bad", ["xyz", "", "12 34"])
def test_non_hex_hash_is_a_clear_error(bad: str) -> None:
    with pytest.raises(InvalidHashError, match="not a hex string"):
        hamming_distance(bad, "00")


def test_unknown_method_lists_the_valid_ones() -> None:
    with pytest.raises(InvalidHashError, match="phash, ahash, dhash, whash"):
        compute_hash(Image.new("RGB", (10, 10)), "md5")


def test_region_is_centred_and_clipped_at_the_edges() -> None:
    assert region_box((640, 400), (320, 200), 100) == (270, 150, 370, 250)
    assert region_box((640, 400), (10, 395), 100) == (0, 345, 60, 400)
    assert region_box((640, 400), None, 100) == (0, 0, 640, 400)
    assert region_box((640, 400), (640, 10), 100) is None
    assert region_box((640, 400), (-1, 10), 100) is None


def test_find_recent_screenshot_takes_the_latest_before_the_index() -> None:
    app = SimulatedFormApp()
    calls = form_calls(app)
    messages = run_history(app, calls[:3])
    index, _ = find_recent_screenshot_block(messages) or (None, None)
    assert index == len(messages) - 1
    first, _ = find_recent_screenshot_block(messages, from_index=3) or (None, None)
    assert first == 2
    assert find_recent_screenshot(messages, from_index=1) is None
    latest = find_recent_screenshot(messages)
    assert latest is not None
    assert latest.size == (640, 400)


def test_a_screenshot_is_decoded_once() -> None:
    data = encode_png(SimulatedFormApp().screenshot())
    assert decode_screenshot(data) is decode_screenshot(data)


def test_not_an_image_is_a_clear_error() -> None:
    with pytest.raises(InvalidScreenshotError, match="message 3"):
        decode_screenshot(base64.b64encode(b"GIF? no, plain text").decode(), "message 3")
    with pytest.raises(InvalidScreenshotError, match="not base64"):
        decode_screenshot("@@@not base64@@@", "message 4")


def test_step_representation_checks_the_region_around_the_point() -> None:
    config = VisualValidationConfig(method="phash", hash_size=8, region_size=100, threshold=10)
    screen = SimulatedFormApp().screenshot()
    click = computer_call("left_click", coordinate=[400, 300])
    stored = compute_step_representation(screen, click, config)
    assert stored is not None
    changed = screen.copy()
    ImageDraw.Draw(changed).rectangle((20, 20, 120, 60), fill="red")  # far from the point
    assert check_step_representation(changed, click, stored, config).distance == 0
    ImageDraw.Draw(changed).rectangle((360, 260, 440, 340), fill="red")  # on the point
    check = check_step_representation(changed, click, stored, config)
    assert not check.matched
    assert check.distance is not None
    assert check.distance > 10
    assert "distance" in check.describe()
    assert "> threshold 10" in check.describe()


def test_threshold_is_inclusive_and_overridable() -> None:
    config = VisualValidationConfig(method="ahash", hash_size=8, region_size=60, threshold=0)
    screen = SimulatedFormApp().screenshot()
    click = computer_call("left_click", coordinate=[200, 88])
    stored = compute_step_representation(screen, click, config)
    assert stored is not None
    other = SimulatedFormApp(layout="banner").screenshot()
    distance = check_step_representation(other, click, stored, config).distance
    assert distance is not None
    assert distance > 0
    assert check_step_representation(other, click, stored, config, threshold=distance).matched
    assert not check_step_representation(
        other, click, stored, config, threshold=distance - 1
    ).matched


def test_typing_uses_the_pointer_region_and_a_point_off_screen_does_not_match() -> None:
    config = VisualValidationConfig(method="phash", region_size=100)
    screen = SimulatedFormApp().screenshot()
    typing = computer_call("type", text="x")
    at_pointer = compute_step_representation(screen, typing, config, pointer=(300, 88))
    whole = compute_step_representation(screen, typing, config)
    assert at_pointer is not None
    assert whole is not None
    assert at_pointer != whole
    off = computer_call("left_click", coordinate=[5000, 10])
    assert compute_step_representation(screen, off, config) is None
    check = check_step_representation(screen, off, StepFingerprint("0" * 16), config)
    assert not check.matched
    assert "outside the current screen" in check.describe()


def test_malformed_stored_hash_is_an_error_even_off_screen() -> None:
    config = VisualValidationConfig(method="phash", region_size=100)
    screen = SimulatedFormApp().screenshot()
    with pytest.raises(InvalidHashError):
        check_step_representation(
            screen, computer_call("left_click", coordinate=[9999, 1]), StepFingerprint("zz"), config
        )
    with pytest.raises(InvalidHashError):
        check_step_representation(
            screen,
            computer_call("left_click", coordinate=[9999, 1]),
            StepFingerprint("0" * 16, "zz"),
            config,
        )


def test_a_stored_hash_of_another_size_is_an_error_even_off_screen() -> None:
    config = VisualValidationConfig(method="phash", region_size=100)  # 8x8: 16 hex digits
    screen = SimulatedFormApp().screenshot()
    off = computer_call("left_click", coordinate=[9999, 1])
    with pytest.raises(InvalidHashError, match="different sizes: 256 bits"):
        check_step_representation(screen, off, StepFingerprint("0" * 64), config)
    assert not check_step_representation(screen, off, StepFingerprint("0" * 16), config).matched


def test_a_finer_hash_of_another_size_is_an_error_even_off_screen() -> None:
    config = validation_config(CacheWritingSettings())  # detail and other density: 16x16
    assert config is not None
    screen = SimulatedFormApp().screenshot()
    off = computer_call("left_click", coordinate=[9999, 1])
    good, short = "0" * 64, "0" * 16
    with pytest.raises(InvalidHashError, match="different sizes: 64 bits"):
        check_step_representation(screen, off, StepFingerprint(short, short), config)
    with pytest.raises(InvalidHashError, match="different sizes: 64 bits"):
        check_step_representation(
            screen,
            off,
            StepFingerprint(short, good, other_density=f"{short};"),
            config,
            other_density=True,
        )
    fine = StepFingerprint(short, good, other_density=f"{good};")
    assert not check_step_representation(screen, off, fine, config, other_density=True).matched
    # each hash is measured against its own size (an 8x8 hash for other densities here)
    assert config.other_density is not None
    small = config.model_copy(
        update={"other_density": config.other_density.model_copy(update={"hash_size": 8})}
    )
    mixed = StepFingerprint(short, good, other_density=f"{short};")
    assert not check_step_representation(screen, off, mixed, small, other_density=True).matched


def test_history_with_a_string_tool_result_is_skipped() -> None:
    messages = [
        MessageParam(role="user", content="go"),
        MessageParam.model_validate(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}],
            }
        ),
    ]
    assert find_recent_screenshot(messages) is None


def test_shift_tolerance_forgives_a_1px_scroll_but_not_a_real_change() -> None:
    from PIL import ImageChops

    screen = SimulatedFormApp().screenshot()
    click = computer_call("left_click", coordinate=[115, 230])
    exact = VisualValidationConfig(method="phash", region_size=100, threshold=2, shift_tolerance=0)
    tolerant = exact.model_copy(update={"shift_tolerance": 1})
    stored = compute_step_representation(screen, click, exact)
    assert stored is not None
    scrolled = ImageChops.offset(screen, 0, -1)
    forgiven = check_step_representation(scrolled, click, stored, tolerant)
    assert forgiven.matched
    assert forgiven.distance is not None
    assert forgiven.distance <= 2
    exact_distance = check_step_representation(scrolled, click, stored, exact).distance
    assert exact_distance is not None
    assert exact_distance > 0
    moved = SimulatedFormApp(layout="swapped").screenshot()
    check = check_step_representation(moved, click, stored, tolerant)
    assert not check.matched
    assert "±1 px" in check.describe()


def test_shifted_boxes_try_every_move_and_crop_region_repeats_the_edge() -> None:
    assert shifted_boxes((0, 0, 50, 50), 1)[0] == (0, 0, 50, 50)
    assert set(shifted_boxes((0, 0, 50, 50), 1)) == {
        (dx, dy, 50 + dx, 50 + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)
    }
    screen = SimulatedFormApp().screenshot()
    assert (
        crop_region(screen, (10, 10, 60, 60)).tobytes() == screen.crop((10, 10, 60, 60)).tobytes()
    )
    outside = np.asarray(crop_region(screen, (-2, -1, 30, 20)))
    assert outside.shape == (21, 32)
    inner = np.asarray(screen.convert("L").crop((0, 0, 30, 20)))
    assert (outside[1:, 2:] == inner).all()
    assert (outside[0, 2:] == inner[0]).all()  # the missing row repeats the top row
    assert (outside[1:, 0] == inner[:, 0]).all()  # the missing columns repeat the left one


def test_a_1px_scroll_at_the_screen_edge_is_forgiven_like_anywhere_else() -> None:
    from PIL import ImageChops

    screen = SimulatedFormApp().screenshot()
    corner = computer_call("left_click", coordinate=[30, 18])  # region clipped at top and left
    config = VisualValidationConfig(method="phash", region_size=100, threshold=0, shift_tolerance=1)
    stored = compute_step_representation(screen, corner, config)
    assert stored is not None
    scrolled = ImageChops.offset(screen, 0, 1)  # content moves down: the match lies above
    scrolled.paste(screen.crop((0, 0, 640, 1)), (0, 0))
    check = check_step_representation(scrolled, corner, stored, config)
    assert check.distance == 0
    exact = check_step_representation(
        scrolled, corner, stored, config.model_copy(update={"shift_tolerance": 0})
    )
    assert exact.distance is not None
    assert exact.distance > 0


def _keypad(labels: list[str]) -> Image.Image:
    """A real PNG of a calculator-like keypad: 4 rows of 4 keys, 46x24 px each."""
    image = Image.new("RGB", (400, 300), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype("DejaVuSans.ttf", 13)
    for index, label in enumerate(labels):
        left, top = 100 + (index % 4) * 51, 80 + (index // 4) * 28
        draw.rectangle((left, top, left + 45, top + 23), outline=(0, 0, 0))
        width = draw.textlength(label, font=font)
        draw.text((left + (46 - width) / 2, top + 4), label, font=font, fill=(0, 0, 0))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


KEYS = ["7", "8", "9", "*", "4", "5", "6", "-", "1", "2", "3", "+", "0", ".", "+/-", "="]


@pytest.mark.parametrize(("old", "new"), [("4", "5"), ("6", "8"), ("1", "6")])
def test_the_detail_hash_sees_a_relabelled_key_that_the_region_hash_misses(
    old: str, new: str
) -> None:
    index = KEYS.index(old)
    before = _keypad(KEYS)
    after = _keypad([(new if label == old else label) for label in KEYS])
    left, top = 100 + (index % 4) * 51, 80 + (index // 4) * 28
    key = computer_call("left_click", coordinate=[left + 23, top + 12])
    with_detail = validation_config(CacheWritingSettings())
    assert with_detail is not None
    assert with_detail.detail is not None
    region_only = with_detail.model_copy(update={"detail": None, "tone": None})
    stored = compute_step_representation(before, key, with_detail)
    assert stored is not None
    assert stored.detail is not None
    assert len(stored.detail) == 16 * 16 // 4
    assert check_step_representation(after, key, stored, region_only).matched
    check = check_step_representation(after, key, stored, with_detail)
    assert not check.matched
    assert check.distance is not None
    assert check.distance <= with_detail.threshold
    assert check.detail_distance is not None
    assert check.detail_distance > with_detail.detail.threshold
    assert "detail (16x16 hash, 48 px, noise floor 250)" in check.describe()
    unchanged = check_step_representation(_keypad(KEYS), key, stored, with_detail)
    assert (unchanged.matched, unchanged.distance, unchanged.detail_distance) == (True, 0, 0)


@pytest.mark.parametrize(("old", "new"), [("6", "8"), ("3", "8"), ("9", "8")])
def test_noise_floors_even_large_ones_still_see_a_relabelled_small_key(old: str, new: str) -> None:
    # A stroke added to a small glyph moves coefficients near the median. Floors that forgave
    # any bit weak on the current screen let these through (6 -> 8 ... with floor 3000); a
    # bit is forgiven only when it was weak on the recorded screen too, and these were not.
    index = KEYS.index(old)
    before = _keypad(KEYS)
    after = _keypad([(new if label == old else label) for label in KEYS])
    left, top = 100 + (index % 4) * 51, 80 + (index // 4) * 28
    key = computer_call("left_click", coordinate=[left + 23, top + 12])
    shipped = validation_config(CacheWritingSettings())
    large = validation_config(
        CacheWritingSettings(
            visual_validation_noise_floor=100.0,
            visual_validation_detail_noise_floor=3000.0,
            visual_validation_detail_threshold=4,
            visual_validation_detail_blur=0.5,
        )
    )
    assert shipped is not None
    assert large is not None
    for config in (shipped, large):
        stored = compute_step_representation(before, key, config)
        assert stored is not None
        assert not check_step_representation(after, key, stored, config).matched
        # the unchanged keypad matches
        assert check_step_representation(_keypad(KEYS), key, stored, config).matched


def test_the_default_check_sees_every_digit_relabel_on_a_small_keypad() -> None:
    # The keypad's digits are 6 px wide and 9 px tall. Descriptors that forgive re-rendered
    # text by tolerating small displacements lose them: an ink bitmap compared within 1 px
    # missed 19 of these 90, the previous default (blurred detail hash, threshold 22) 3
    # (docs/benchmarks.md). This guards the default against any such loosening.
    config = validation_config(CacheWritingSettings())
    assert config is not None
    before = _keypad(KEYS)
    missed = []
    for old, new in itertools.permutations("0123456789", 2):
        index = KEYS.index(old)
        left, top = 100 + (index % 4) * 51, 80 + (index // 4) * 28
        key = computer_call("left_click", coordinate=[left + 23, top + 12])
        stored = compute_step_representation(before, key, config)
        assert stored is not None
        after = _keypad([(new if label == old else label) for label in KEYS])
        if check_step_representation(after, key, stored, config).matched:
            missed.append(f"{old} -> {new}")
    assert not missed, f"relabels let through: {missed}"


@pytest.mark.parametrize("colour", [(255, 255, 255), (0, 0, 0), (212, 208, 200)])
def test_a_blank_screen_never_matches_even_with_floors_and_no_tone_or_target(
    colour: tuple[int, int, int],
) -> None:
    # Every DCT coefficient of a flat region lies near its median, so a floor applied to the
    # current region alone would forgive every differing bit: a bit is forgiven only when it
    # was weak on the recorded screen too.
    config = validation_config(
        CacheWritingSettings(visual_validation_tone=False, visual_validation_target=False)
    )
    assert config is not None
    assert config.noise_floor > 0
    index = KEYS.index("5")
    left, top = 100 + (index % 4) * 51, 80 + (index // 4) * 28
    key = computer_call("left_click", coordinate=[left + 23, top + 12])
    stored = compute_step_representation(_keypad(KEYS), key, config)
    assert stored is not None
    assert stored.weak is not None
    blank = Image.new("RGB", (400, 300), colour)
    check = check_step_representation(blank, key, stored, config)
    assert not check.matched
    assert check.distance is not None
    assert check.distance > 2 * config.threshold
    # a step recorded without its weak bits (a file from before them) forgives nothing
    unweighted = StepFingerprint(stored.region, stored.detail)
    again = check_step_representation(_keypad(KEYS), key, unweighted, config)
    assert again.matched  # the same screen still matches: nothing to forgive


def test_a_noise_floor_counts_only_bits_with_strong_coefficients() -> None:
    screen = _keypad(KEYS)
    box = region_box(screen.size, (123, 92), 48)
    assert box is not None
    stored = compute_hash(screen.crop(box), "phash", 16, 1.0)
    other = _keypad(["8" if label == "7" else label for label in KEYS])
    plain = region_distance(other, box, stored, "phash", 16, shift_tolerance=0, blur=1.0)
    assert plain == hamming_distance(stored, compute_hash(other.crop(box), "phash", 16, 1.0))
    floors = [
        region_distance(
            other,
            box,
            stored,
            "phash",
            16,
            shift_tolerance=0,
            blur=1.0,
            noise_floor=floor,
            weak=weak_bits(screen.crop(box), 16, floor, 1.0),
        )
        for floor in (0.0, 1.0, 500.0, 3000.0, 10**9)
    ]
    assert floors[0] == plain > 0
    assert floors == sorted(floors, reverse=True)  # a higher floor never counts more bits
    assert floors[-1] == 0  # every bit weak on both screens: nothing counted
    # without the recorded screen's weak bits nothing is forgiven
    assert (
        region_distance(
            other, box, stored, "phash", 16, shift_tolerance=0, blur=1.0, noise_floor=10**9
        )
        == plain
    )
    # a floor is pHash only: other methods count every bit
    dstored = compute_hash(screen.crop(box), "dhash", 16)
    assert region_distance(
        other, box, dstored, "dhash", 16, shift_tolerance=0, noise_floor=3000.0
    ) == region_distance(other, box, dstored, "dhash", 16, shift_tolerance=0)
