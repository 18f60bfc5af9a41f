"""A step's effect confirmed by its element on a screen drawn otherwise
(:func:`askcache.replay.effects.element_effect`): a click that gave an editable text the
keyboard focus, a typed text that moved its characters and caret on by its length; anything
else (another element, a field already focused or filled, a text of another length, a key
typed through ``type``) is not confirmed, and the pixels' verdict stands."""

from __future__ import annotations

from typing import Any

import pytest

from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.screen.elements import Element, ElementRef
from askcache.replay.effects import element_effect

SECRET = "hunter2-Lovelace"


def _field(
    *, caret: int | None = None, count: int | None = 0, labels: str = "Name", **more: Any
) -> Element:
    return Element(
        role="text",
        states=("editable", "enabled", "sensitive", "single_line"),
        ancestors=(ElementRef(role="panel"), ElementRef(role="frame", name="Contact")),
        box=(46, 2, 168, 34),
        window_box=(0, 0, 216, 117),
        caret_offset=caret,
        character_count=count,
        labelled_by=labels,
        **more,
    )


def _step(action: str, **given: Any) -> ToolUseBlockParam:
    return ToolUseBlockParam(id="toolu_1", name="computer", input={"action": action, **given})


CLICK = _step("left_click", coordinate=[130, 18])


def _typing(text: str) -> ToolUseBlockParam:
    return _step("type", text=text)


def test_a_click_that_gave_the_field_the_focus_is_its_effect() -> None:
    words = element_effect(CLICK, _field(), _field(), _field(caret=0))
    assert words is not None
    assert "keyboard focus" in words


@pytest.mark.parametrize(
    ("recorded", "before", "after"),
    [
        (_field(), _field(), _field()),  # no focus after it: it did not land
        (_field(), _field(), None),  # nothing there now
        (_field(), _field(), _field(caret=0, labels="Email")),  # the focus went to Email
        (_field(), _field(caret=0), _field(caret=0)),  # focused before: not the click's doing
        (_field(caret=0), _field(), _field(caret=0)),  # recorded focused before the click
        (_field(), _field(), _field(caret=0, count=3)),  # its text changed
        (_field(), _field(count=4), _field(caret=4, count=4)),  # another text than recorded
        (_field(), _field(count=None), _field(caret=0, count=None)),  # no count said
    ],
    ids=[
        "no-focus",
        "no-element",
        "other-field",
        "focused-before",
        "recorded-focused",
        "text-changed",
        "filled",
        "no-count",
    ],
)
def test_a_click_not_shown_landing_by_its_element_is_not_confirmed(
    recorded: Element, before: Element, after: Element | None
) -> None:
    assert element_effect(CLICK, recorded, before, after) is None


def test_a_click_with_a_key_held_or_on_a_button_is_not_confirmed_by_focus() -> None:
    held = _step("left_click", coordinate=[130, 18], text="shift")
    assert element_effect(held, _field(), _field(), _field(caret=0)) is None
    button = Element(role="push button", name="Save", box=(37, 79, 85, 34))
    focused = button.model_copy(update={"caret_offset": 0, "character_count": 0})
    assert element_effect(CLICK, button, button, focused) is None
    read_only = _field().model_copy(update={"states": ("enabled",)})
    assert element_effect(CLICK, read_only, read_only, _field(caret=0)) is None


def test_a_typed_text_that_reached_the_field_is_its_effect_and_the_words_hold_no_text() -> None:
    text = "Ada Lovelace"
    words = element_effect(
        _typing(text), _field(caret=0), _field(caret=0), _field(caret=12, count=12)
    )
    assert words is not None
    assert "Ada" not in words
    assert "12" not in words  # nor its length: a typed text may hold a secret
    secret = element_effect(
        _typing(SECRET), _field(caret=0), _field(caret=0), _field(caret=16, count=16)
    )
    assert secret is not None
    assert SECRET not in secret
    assert "16" not in secret


@pytest.mark.parametrize(
    ("text", "before", "after"),
    [
        ("Ada Lovelace", _field(caret=0), _field(caret=0)),  # nothing arrived
        ("Ada Lovelace", _field(caret=0), _field(caret=11, count=11)),  # a key lost
        ("Ada Lovelace", _field(caret=0), _field(caret=0, count=12)),  # caret stayed
        ("Ada Lovelace", _field(caret=0), _field(caret=12, count=12, labels="Email")),
        ("Ada Lovelace", _field(), _field(caret=12, count=12)),  # no focus before it
        ("Ada Lovelace", _field(caret=3, count=3), _field(caret=15, count=15)),  # pre-filled
        ("Ada\nLovelace", _field(caret=0), _field(caret=12, count=12)),  # a key in the text
        ("", _field(caret=0), _field(caret=0)),
    ],
    ids=[
        "nothing",
        "lost-key",
        "caret-stayed",
        "other-field",
        "not-focused",
        "pre-filled",
        "newline",
        "empty",
    ],
)
def test_a_typed_text_not_shown_arriving_by_its_element_is_not_confirmed(
    text: str, before: Element, after: Element
) -> None:
    assert element_effect(_typing(text), _field(caret=0), before, after) is None


def test_a_key_or_a_scroll_is_never_confirmed_by_its_element() -> None:
    key = _step("key", text="Return")
    assert element_effect(key, _field(caret=0), _field(caret=0), _field(caret=1, count=1)) is None
    scroll = _step("scroll", coordinate=[130, 18], scroll_direction="down", scroll_amount=1)
    assert element_effect(scroll, _field(), _field(), _field(caret=0)) is None
