"""When a label read by OCR now agrees with the recorded reading, for an element found by its
identity on a re-drawn screen (:mod:`askcache.replay.element_check`): a named element's row may
show more than its name (a menu item's shortcut), which OCR reads otherwise in another theme or
font; a reading without the name still refuses."""

from __future__ import annotations

from askcache.replay.element_check import _label_agrees


def test_the_same_reading_agrees_whatever_the_name() -> None:
    assert _label_agrees("Save Ctrl+S", "Save  Ctrl+S", None)
    assert _label_agrees("Save", "Save", "Save")


def test_a_named_items_shortcut_read_otherwise_agrees_when_both_hold_the_name() -> None:
    assert _label_agrees("Save Ctrl+S", "Save ctrl+S", "Save")
    assert _label_agrees("Save Ctrl+S", "Save Ctri+S", "Save")


def test_a_reading_without_the_name_or_an_unnamed_element_refuses() -> None:
    assert not _label_agrees("Save Ctrl+S", "Send Ctrl+S", "Save")  # relabel, name unchanged
    assert not _label_agrees("Save Ctrl+S", "Saved Ctrl+S", "Save")  # whole words only
    assert not _label_agrees("Save Ctrl+S", "Save ctrl+S", None)
    assert not _label_agrees("Ctrl+S", "Save Ctrl+S", "Save")  # the recorded one lacked it


def test_a_named_elements_label_read_in_another_case_agrees_and_a_new_word_still_refuses() -> None:
    # yad's Save button in a dark theme read "save" (measured); the tree names it Save
    assert _label_agrees("Save", "save", "Save")
    assert not _label_agrees("Save", "send", "Save")
    assert not _label_agrees("Save", "save", None)  # unnamed: the readings alone, case kept
