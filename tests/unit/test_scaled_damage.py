"""Drawing reports asked about in a scaled screenshot's pixels (askcache.foundation.screen.damage):
a box is widened to whole screen pixels, never narrowed."""

from __future__ import annotations

from askcache.foundation.geometry import Box
from askcache.foundation.screen.damage import DamageMark, DamageSource, ScaledDamage


class _Recorded:
    """A source that remembers the boxes it was asked about and answers from drawn areas."""

    def __init__(self, drawn: list[Box]) -> None:
        self.drawn = drawn
        self.asked: list[Box | None] = []

    def mark(self) -> DamageMark:
        return DamageMark(index=0, at=0.0)

    def damaged_since(self, mark: DamageMark, box: Box | None = None) -> bool:
        self.asked.append(box)
        if box is None:
            return bool(self.drawn)
        left, top, right, bottom = box
        return any(
            x0 < right and left < x1 and y0 < bottom and top < y1 for x0, y0, x1, y1 in self.drawn
        )


def test_a_box_in_model_pixels_is_widened_to_whole_screen_pixels() -> None:
    source = _Recorded([])
    scaled = ScaledDamage(source, screen=(1920, 1200), space=(1280, 800))
    assert isinstance(scaled, DamageSource)
    mark = scaled.mark()
    scaled.damaged_since(mark, (1, 1, 3, 3))
    scaled.damaged_since(mark, (0, 0, 1280, 800))
    scaled.damaged_since(mark)
    assert source.asked == [(1, 1, 5, 5), (0, 0, 1920, 1200), None]


def test_a_screen_pixel_drawn_at_the_edge_of_a_scaled_box_counts() -> None:
    # screen pixel 4 lies in model pixel 2 (4 / 1.5 = 2.67): a model box ending at 3 sees it,
    # one ending at 2 does not
    source = _Recorded([(4, 4, 5, 5)])
    scaled = ScaledDamage(source, screen=(1920, 1200), space=(1280, 800))
    mark = scaled.mark()
    assert scaled.damaged_since(mark, (2, 2, 3, 3))
    assert not scaled.damaged_since(mark, (0, 0, 2, 2))


def test_the_same_space_asks_as_it_is() -> None:
    source = _Recorded([])
    scaled = ScaledDamage(source, screen=(1280, 800), space=(1280, 800))
    scaled.damaged_since(scaled.mark(), (3, 5, 7, 9))
    assert source.asked == [(3, 5, 7, 9)]
