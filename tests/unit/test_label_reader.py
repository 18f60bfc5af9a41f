"""The label under an action point, read by OCR, on real screenshots (tests/unit/label_reader/:
crops of xcalc, the Tk form, mousepad's menu bar at 1x and 2x, a link of valgrind's HTML manual
in Chromium and mousepad's empty page, taken by ``bench/label_ocr.py build``)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from PIL import Image

from askcache.fingerprint import label_reader, ocr_engine
from askcache.fingerprint.label_crop import label_crop
from askcache.fingerprint.label_reader import (
    LabelReading,
    normalise_label,
    read_label,
    same_label,
)
from askcache.fingerprint.ocr_engine import (
    TesseractEngine,
    label_engine,
    label_engine_available,
    tessdata_folder,
)
from askcache.foundation.errors import AskCacheError, MissingDependencyError

HERE = Path(__file__).parent / "label_reader"

XCALC_KEY_7 = (78, 208)
"""The middle of xcalc's 7 key in xcalc.png (9 in xcalc_relabelled.png)."""
TK_SAVE, TK_CLEAR = (65, 30), (205, 30)
MENU_EDIT_1X, MENU_EDIT_2X = (60, 11), (120, 23)
LINK_POINT, LINK_BOX = (101, 38), (40, 30, 122, 16)


def _image(name: str) -> Image.Image:
    return Image.open(HERE / name).convert("RGB")


def test_a_button_reads_as_its_label_and_a_relabel_differs() -> None:
    before = read_label(_image("tk_form.png"), TK_SAVE)
    after = read_label(_image("tk_form_relabelled.png"), TK_SAVE)
    assert before is not None
    assert after is not None
    assert (before.text, after.text) == ("Save", "Save As")
    assert not same_label(before.text, after.text)
    assert read_label(_image("tk_form.png"), TK_CLEAR) == read_label(
        _image("tk_form_relabelled.png"), TK_CLEAR
    )


def test_an_xcalc_key_relabelled_7_to_9_reads_differently() -> None:
    seven = read_label(_image("xcalc.png"), XCALC_KEY_7)
    nine = read_label(_image("xcalc_relabelled.png"), XCALC_KEY_7)
    assert seven is not None
    assert nine is not None
    assert not same_label(seven.text, nine.text)


def test_the_same_pixels_read_the_same_every_time_and_by_any_engine() -> None:
    image = _image("xcalc.png")
    first = read_label(image, XCALC_KEY_7)
    folder = tessdata_folder()
    assert folder is not None
    other = TesseractEngine(folder)
    assert first is not None
    assert read_label(image.copy(), XCALC_KEY_7) == first
    assert read_label(image, XCALC_KEY_7, engine=other) == first


def test_the_recorded_picture_is_not_read_again_and_any_other_picture_is() -> None:
    recorded = read_label(_image("tk_form.png"), TK_SAVE)
    assert recorded is not None
    assert recorded.digest is not None
    known = (recorded.text, recorded.digest)
    again = read_label(_image("tk_form.png"), TK_SAVE, recorded=known)
    assert again is not None
    assert (again.text, again.read, again.digest) == ("Save", False, recorded.digest)
    relabelled = read_label(_image("tk_form_relabelled.png"), TK_SAVE, recorded=known)
    assert relabelled is not None
    assert (relabelled.text, relabelled.read) == ("Save As", True)
    assert relabelled.digest != recorded.digest


def test_the_same_menu_at_another_density_reads_the_same() -> None:
    small = read_label(_image("menu_bar_1x.png"), MENU_EDIT_1X)
    large = read_label(_image("menu_bar_2x.png"), MENU_EDIT_2X)
    assert small is not None
    assert large is not None
    assert small.text == "Edit"
    assert same_label(small.text, large.text)
    # the glyphs' box, doubled at 2x
    assert all(abs(a - 2 * b) <= 3 for a, b in zip(large.box, small.box, strict=True))


def test_the_element_box_bounds_the_label() -> None:
    reading = read_label(_image("link.png"), LINK_POINT, LINK_BOX)
    assert reading is not None
    assert reading.text == "2.2. Getting started"
    crop = label_crop(_image("link.png"), LINK_POINT, LINK_BOX)
    assert crop is not None
    left, top, right, bottom = crop.box
    x, y, width, height = LINK_BOX
    assert x - 3 <= left
    assert right <= x + width + 3
    assert y - 3 <= top
    assert bottom <= y + height + 3
    assert reading.box == (left, top, right - left, bottom - top)


def test_a_blank_place_has_no_label() -> None:
    blank = _image("blank.png")
    assert label_crop(blank, (100, 55)) is None
    assert read_label(blank, (100, 55)) is None
    assert read_label(blank, (5000, 5)) is None  # off the screenshot


def test_every_xcalc_key_gives_one_crop_inside_its_key() -> None:
    image = _image("xcalc.png")
    for column, x in enumerate((27, 78, 128, 179, 230)):
        for row, y in enumerate((16, 43, 71, 98, 125, 153, 180, 208, 235, 262, 290)):
            crop = label_crop(image, (x, y))
            assert crop is not None, (column, row)
            left, top, right, bottom = crop.box
            assert x - 23 <= left, (column, row, crop.box)
            assert right <= x + 23, (column, row, crop.box)
            assert y - 12 <= top, (column, row, crop.box)
            assert bottom <= y + 12, (column, row, crop.box)
            assert crop.closed


def test_the_same_text_is_the_same_label_and_any_other_is_not() -> None:
    assert same_label("Save", " Save ")
    assert same_label("Don't Save", "Don\u2019t  Save")
    assert not same_label("Save", "save")
    assert not same_label("Save", "Save As")
    assert not same_label("7", "9")
    assert LabelReading("Save", (1, 2, 3, 4)) == LabelReading("Save", (1, 2, 3, 4), 1.0)


def test_normalising_collapses_whitespace_and_plain_punctuation_and_keeps_case() -> None:
    assert normalise_label("  Save\n  As ") == "Save As"
    assert normalise_label("Don\u2019t Save") == "Don't Save"
    assert normalise_label("\ufb01le") == "file"  # NFKC: the ligature fi
    assert normalise_label("OK") != normalise_label("ok")


def test_reads_from_several_threads_agree() -> None:
    image = _image("xcalc.png")
    expected = {point: read_label(image, point) for point in ((27, 16), (78, 43), (128, 71))}
    seen: list[bool] = []

    def read_all() -> None:
        for _ in range(5):
            seen.extend(read_label(image, p) == want for p, want in expected.items())

    threads = [threading.Thread(target=read_all) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [True] * 45


def test_without_the_english_model_nothing_is_read_and_the_engine_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(ocr_engine, "_engines", {})
    monkeypatch.setattr(ocr_engine, "_TESSDATA_FOLDERS", ())
    monkeypatch.setattr(label_reader, "_warned", [])
    monkeypatch.setenv("TESSDATA_PREFIX", str(tmp_path))
    assert not label_engine_available()
    with pytest.raises(MissingDependencyError) as caught:
        label_engine()
    assert isinstance(caught.value, AskCacheError)
    assert caught.value.package == "tesseract-ocr-eng"
    with caplog.at_level(logging.WARNING, logger="askcache.fingerprint.label_reader"):
        assert read_label(_image("tk_form.png"), TK_SAVE) is None  # no evidence: pixels decide
        assert read_label(_image("tk_form.png"), TK_CLEAR) is None
    assert [r.getMessage() for r in caplog.records] == [
        f"labels are not read: {caught.value}"
    ]  # once


def test_a_model_named_by_tessdata_prefix_is_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real = tessdata_folder()
    assert real is not None
    (tmp_path / "tessdata").mkdir()
    (tmp_path / "tessdata" / "eng.traineddata").symlink_to(real / "eng.traineddata")
    monkeypatch.setenv("TESSDATA_PREFIX", str(tmp_path))
    assert tessdata_folder() == tmp_path / "tessdata"
