"""An open menu's item that no tree describes, its label elsewhere in its popup on a screen drawn
otherwise (replay/element_check.py's ``label_elsewhere``, fingerprint/label_column.py), on real
screenshots of FeatherPad's open File menu (tests/unit/label_reader/, taken by
``bench/rerender.py --only featherpad --probe SITUATION``): Qt's Fusion style as recorded, its
Windows style (taller items: "Save" 15 px lower, the recorded point then between a separator and
it), ``QT_FONT_DPI=120`` (a bigger font) and German (``Speichern``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from askcache.fingerprint.label_column import column_lines
from askcache.fingerprint.label_reader import read_label
from askcache.foundation.screen.elements import StepElement
from askcache.foundation.screen.windows import WindowFrame
from askcache.replay.element_check import label_elsewhere

HERE = Path(__file__).parent / "label_reader"

SAVE = StepElement(
    label="Save",
    label_box=(15, 335, 50, 12),
    label_digest="8932bd274f31eed2",
    look=(
        "fff800000000000055fb005f5000000055fb005f5000000055f800a55000000055f400a00fa805aa5ff400a5"
        "0aa855aa5ff400a50aa855aa5004005f50a85a5a50040005aaf8a5ffaff80000aaa4f550aff80000aaa4f550"
        "a00800a5aaa4f0a5a00800af5ff0a0afa008000000000000a008000000000000fffb00ffa0000000"
    ),
    look_box=(15, 335, 50, 12),
)
"""The Save item's element as the recording (Fusion, 96 dpi) stored it: no tree (Qt describes
no open menu), its label, where it was read and its look."""
POINT = (50, 340)
"""The recorded click on Save."""
THEN = WindowFrame(x=6, y=22, width=355, height=487, wm_class="FeatherPad", title="FeatherPad")
"""The popup's frame when recorded."""
WINDOWS = WindowFrame(x=0, y=21, width=296, height=527, wm_class="FeatherPad", title="FeatherPad")
FONT = WindowFrame(x=7, y=23, width=405, height=506, wm_class="FeatherPad", title="FeatherPad")
GERMAN = WindowFrame(x=6, y=22, width=483, height=487, wm_class="FeatherPad", title="FeatherPad")
THRESHOLD = 0.35
"""``element_look_threshold``'s default."""


def _image(name: str) -> Image.Image:
    return Image.open(HERE / name).convert("RGB")


def _inside(point: tuple[int, int], box: tuple[int, int, int, int]) -> bool:
    return box[0] <= point[0] < box[0] + box[2] and box[1] <= point[1] < box[1] + box[3]


@pytest.mark.parametrize(
    ("name", "now", "save"),
    [
        ("featherpad_menu_windows.png", WINDOWS, (7, 350, 52, 12)),
        ("featherpad_menu_font.png", FONT, (16, 346, 60, 16)),
    ],
    ids=["windows-style", "bigger-font"],
)
def test_the_label_is_found_once_in_its_popup_and_clicked_on_its_own_line(
    name: str, now: WindowFrame, save: tuple[int, int, int, int]
) -> None:
    image = _image(name)
    found = label_elsewhere(image, SAVE, POINT, THEN, now, threshold=THRESHOLD)
    assert not isinstance(found, str), found
    target, words = found
    assert _inside(target, save)
    assert "found once" in words
    reading = read_label(image, target)
    assert reading is not None
    assert (reading.text, reading.box) == ("Save", save)


def test_the_recorded_point_in_the_windows_style_is_not_on_save_and_is_not_clicked() -> None:
    """The bench's wrong action of the first in-place rule: at the recorded point, between a
    separator and the moved "Save", OCR read "Save" beside the point. The rule acts on the
    label's own line, 15 px lower, never at the recorded point."""
    image = _image("featherpad_menu_windows.png")
    beside = read_label(image, POINT)
    assert beside is not None
    assert not _inside(POINT, beside.box)  # read beside the point, not under it
    found = label_elsewhere(image, SAVE, POINT, THEN, WINDOWS, threshold=THRESHOLD)
    assert not isinstance(found, str), found
    target, _ = found
    assert target != POINT
    assert target[1] >= beside.box[1]


def test_a_relabelled_item_is_not_found() -> None:
    found = label_elsewhere(
        _image("featherpad_menu_de.png"), SAVE, POINT, THEN, GERMAN, threshold=THRESHOLD
    )
    assert found == "0 lines read 'Save' down its window's column"


def test_two_items_with_the_label_are_not_told_apart() -> None:
    image = _image("featherpad_menu_windows.png")
    row = image.crop((1, 346, 290, 367))  # the Save item's row
    image.paste(row, (1, 396))  # over "Save All Files"
    found = label_elsewhere(image, SAVE, POINT, THEN, WINDOWS, threshold=THRESHOLD)
    assert found == "2 lines read 'Save' down its window's column"


def test_a_label_whose_look_fails_is_not_clicked() -> None:
    found = label_elsewhere(
        _image("featherpad_menu_windows.png"), SAVE, POINT, THEN, WINDOWS, threshold=0.01
    )
    assert isinstance(found, str)
    assert "its look 0.02 > 0.01" in found


def test_a_point_recorded_off_its_label_is_left_to_the_pixels() -> None:
    found = label_elsewhere(
        _image("featherpad_menu_windows.png"), SAVE, (200, 340), THEN, WINDOWS, threshold=THRESHOLD
    )
    assert found == "the recorded point was not on its label"


def test_outside_its_window_now_nothing_is_searched() -> None:
    """The popup elsewhere (the frame now far right of the menu): its column holds no "Save"."""
    away = WINDOWS.model_copy(update={"x": 300})
    found = label_elsewhere(
        _image("featherpad_menu_windows.png"), SAVE, POINT, THEN, away, threshold=THRESHOLD
    )
    assert isinstance(found, str)
    assert found.startswith("0 lines read")


def test_column_lines_reads_each_line_of_the_menu_once_top_to_bottom() -> None:
    image = _image("featherpad_menu_windows.png")
    lines = column_lines(image, (0, 21, 296, 527), 15, heights=(6, 24))
    tops = [line.box[1] for line in lines]
    assert tops == sorted(tops)
    assert len(set(tops)) == len(tops)
    texts = [line.reading.text if line.reading else None for line in lines]
    assert texts.count("Save") == 1
    assert "Save All Files" in texts
    assert all(6 <= line.box[3] <= 24 for line in lines)  # no separator
    assert column_lines(image, (0, 21, 296, 527), 400) == []  # a column outside the region


def test_on_the_recorded_menu_the_label_is_found_where_it_was_and_clicked_at_the_point() -> None:
    found = label_elsewhere(
        _image("featherpad_menu.png"), SAVE, POINT, THEN, THEN, threshold=THRESHOLD
    )
    assert not isinstance(found, str), found
    assert found[0] == POINT
