"""Where a label read beside a point must lie, at the same density, to stand for the control
under it (replay/element_check.py: a click allowed by its label on a screen drawn otherwise)."""

from __future__ import annotations

from askcache.replay.element_check import _label_in_place

SAVE = (28, 333, 32, 14)
"""FeatherPad's "Save" menu label as recorded (x, y, width, height)."""


def test_the_same_label_a_pixel_or_two_off_in_a_bolder_theme_is_in_place() -> None:
    assert _label_in_place(SAVE, (27, 334, 34, 14))
    assert _label_in_place(SAVE, (28, 329, 32, 14))  # 4 px: the least tolerance


def test_a_label_on_the_next_row_of_a_menu_laid_out_taller_is_not() -> None:
    # Qt's Windows style: the menu's items taller, "Save" 15 px lower than recorded, the
    # recorded point on a separator above it
    assert not _label_in_place(SAVE, (28, 348, 32, 14))
    assert not _label_in_place(SAVE, (60, 333, 32, 14))  # another column


def test_without_a_recorded_box_nothing_is_in_place() -> None:
    assert not _label_in_place(None, SAVE)
