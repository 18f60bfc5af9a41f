"""The effect after a step on a screen drawn otherwise (:func:`askcache.replay.effects.effect_problem`
with ``redrawn``): a typed line drawn lower than recorded (a bigger font) is its effect; a
screen where nothing was drawn is not."""

from __future__ import annotations

from PIL import Image, ImageDraw

from askcache.foundation.screen.thumbnails import ScreenStateConfig, Thumbnail, effect_of
from askcache.replay.effects import effect_problem
from askcache.replay.screens import Screen

CONFIG = ScreenStateConfig()
POINT = (100, 140)


def _screen(text_at: int | None, *, dark: bool = False) -> Image.Image:
    """A 640x400 page; with ``text_at``, a line of black bars (typed text) from that y."""
    image = Image.new("RGB", (640, 400), (40, 40, 40) if dark else (255, 255, 255))
    if text_at is not None:
        draw = ImageDraw.Draw(image)
        for x in range(40, 240, 12):
            draw.rectangle((x, text_at, x + 8, text_at + 14), fill="white" if dark else "black")
    return image


def _problem(before: Image.Image, after: Image.Image, *, redrawn: bool) -> str | None:
    recorded = effect_of(
        Thumbnail.of(_screen(None), CONFIG), Thumbnail.of(_screen(130), CONFIG), POINT
    )
    assert recorded is not None
    assert recorded.tiles
    return effect_problem(
        recorded,
        CONFIG,
        Thumbnail.of(before, CONFIG),
        None,
        Screen(after, after),
        typed=True,
        redrawn=redrawn,
    )


def test_a_typed_line_drawn_lower_on_a_redrawn_screen_is_its_effect() -> None:
    # a bigger font: the line lies a tile and a half lower, in another theme
    assert _problem(_screen(None, dark=True), _screen(178, dark=True), redrawn=True) is None
    # compared with the recording's tiles, the same screen shows no typed text
    assert _problem(_screen(None, dark=True), _screen(178, dark=True), redrawn=False) is not None


def test_nothing_drawn_on_a_redrawn_screen_is_no_effect() -> None:
    problem = _problem(_screen(None, dark=True), _screen(None, dark=True), redrawn=True)
    assert problem is not None
    assert "never reached the screen" in problem


def test_a_line_drawn_far_from_where_it_was_recorded_is_no_effect() -> None:
    far = Image.new("RGB", (640, 400), (40, 40, 40))
    ImageDraw.Draw(far).rectangle((560, 360, 630, 390), fill="white")
    problem = _problem(_screen(None, dark=True), far, redrawn=True)
    assert problem is not None
