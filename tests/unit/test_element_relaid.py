"""An element found elsewhere in its window: moved (its size kept) or laid out again (drawn at
another size), :func:`askcache.replay.element_check._resized`."""

from __future__ import annotations

import pytest

from askcache.foundation.screen.elements import Element
from askcache.replay.element_check import _resized, _same_place

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


def _in_window(box: tuple[int, int, int, int], window: tuple[int, int, int, int]) -> Element:
    return Element(role="push button", name="Save", box=box, window_box=window)


def test_a_button_grown_about_its_centre_is_at_its_place_and_one_moved_aside_is_not() -> None:
    # yad's Save button with a bigger font (measured): 9 px wider, 2 px taller, its corner 5 px
    # to the left, its centre where it was, in a window grown from 216x117 to 229x119
    recorded = _in_window((37, 79, 85, 34), (0, 0, 216, 117))
    assert _same_place(recorded, _in_window((32, 79, 94, 36), (0, 0, 229, 119)))
    assert _same_place(recorded, _in_window((37, 79, 85, 34), (0, 0, 216, 117)))
    assert not _same_place(recorded, _in_window((60, 79, 85, 34), (0, 0, 216, 117)))  # moved
    assert not _same_place(recorded, _in_window((37, 40, 85, 34), (0, 0, 216, 117)))
    # the Name field 13 px to the right in a window of the same size: moved; in the window
    # the bigger font widened by as much (measured), its centre's share of it is where it was
    field = Element(role="text", box=(46, 2, 168, 34), window_box=(0, 0, 216, 117))
    assert not _same_place(field, field.model_copy(update={"box": (59, 2, 168, 34)}))
    relaid = field.model_copy(update={"box": (59, 2, 168, 34), "window_box": (0, 0, 229, 119)})
    assert _same_place(field, relaid)
