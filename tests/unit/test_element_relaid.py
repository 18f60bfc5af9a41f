"""An element found elsewhere in its window: moved (its size kept) or laid out again (drawn at
another size), :func:`askcache.replay.element_check._resized`."""

from __future__ import annotations

import pytest

from askcache.foundation.screen.elements import Element
from askcache.replay.element_check import _resized

RECORDED = Element(role="link", name="Simple Example", box=(48, 192, 107, 18))


def _at(box: tuple[int, int, int, int]) -> Element:
    return RECORDED.model_copy(update={"box": box})


def test_a_bigger_font_draws_the_element_larger_both_ways_by_one_factor() -> None:
    # Chromium's manual link at font size 20 instead of 16 (measured)
    factor = _resized(RECORDED, _at((48, 227, 133, 23)))
    assert factor is not None
    assert factor == pytest.approx(1.26, abs=0.01)
    assert _resized(RECORDED, _at((40, 150, 86, 14))) is not None  # smaller font


@pytest.mark.parametrize(
    "box",
    [
        (48, 260, 107, 18),  # a reordered list: moved, its size kept
        (48, 260, 108, 19),  # a pixel of rounding
        (48, 260, 150, 18),  # a longer label: wider only
        (48, 260, 107, 30),  # taller only (wrapped)
        (48, 260, 160, 20),  # grown much more one way than the other
        (48, 260, 130, 15),  # wider and shorter
    ],
    ids=["moved", "rounding", "wider", "taller", "uneven", "opposite"],
)
def test_an_element_that_kept_its_size_or_changed_one_way_only_moved(
    box: tuple[int, int, int, int],
) -> None:
    assert _resized(RECORDED, _at(box)) is None
