"""``Settling``: before handing back after a step whose call failed (it may have run), the
screen is watched until it stays unchanged for the quiet period (or the timeout), so the
model's first look shows what the step did. ``Seen`` -> ``Settling``, ``Suspended``;
``Blind`` -> ``Suspended``."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image

from askcache.cachefile.format import CacheFile
from askcache.replay.commands import HandBack, Look, Turn
from askcache.replay.states import Settling, Suspended
from askcache.testing import SimulatedFormApp
from tests.unit.replay_states._build import (
    CLICK_SAVE,
    FIRST,
    POLL,
    TYPE_NAME,
    History,
    advance,
    blind,
    drive,
    emitted,
    form,
    pauses,
    plan_of,
    seen,
)

FAILED_AT = 1.5
PROBLEM = (
    "the tool reported an error: Tool 'computer' failed: ValueError: no field has the "
    "keyboard focus; click a field first"
)


def _settling(form_file: CacheFile, **settings: Any) -> tuple[Settling, SimulatedFormApp]:
    """The typing step emitted, then its call failed (the field lost the focus)."""
    history = History(SimulatedFormApp(focus="name"))
    awaiting, command = emitted(plan_of(form_file, **settings), TYPE_NAME, history, 1.0)
    history.app.focus = None
    state, look = awaiting.next(Turn(history.run(command.call), FAILED_AT))
    assert isinstance(state, Settling)
    assert look == Look(FAILED_AT)
    assert isinstance(history.app, SimulatedFormApp)
    return state, history.app


def test_the_first_look_starts_a_watch(form_file: CacheFile) -> None:
    settling, app = _settling(form_file)
    state, command = advance(settling, seen(form(app), FAILED_AT))
    assert isinstance(state, Settling)
    assert command == Look(FAILED_AT + FIRST)
    assert state.watch is not None
    assert state.command == settling.command


def test_it_hands_back_once_the_screen_stayed_still_for_the_quiet_period(
    form_file: CacheFile,
) -> None:
    settling, app = _settling(form_file, settle_quiet_period=0.1)
    image = form(app)
    state, command, looks = drive(settling, Look(FAILED_AT), lambda at: image)
    assert isinstance(state, Suspended)
    assert command == HandBack(TYPE_NAME, PROBLEM, executed=True, code="tool_failed")
    assert pauses(FAILED_AT, looks) == pytest.approx(
        [0.0, FIRST, 2 * FIRST, 4 * FIRST, POLL, POLL, POLL, POLL, POLL]
    )
    assert 0.1 <= looks[-1].at - FAILED_AT < 0.1 + POLL
    assert state.progress.index == CLICK_SAVE  # the step ran, perhaps: never run again
    assert state.stopped.check == "effect"


def _flickering(until: float) -> Callable[[float], Image.Image]:
    """The form with a block in its corner that changes shade at each look (more distinct
    screens than a caret's blink) until ``until``, then stays."""
    shades = itertools.count()

    def look(at: float) -> Image.Image:
        image = form()
        if at < until:
            shade = 40 * (next(shades) % 6)
            image.paste((shade, shade, shade), (560, 330, 620, 380))
        return image

    return look


def test_a_screen_still_changing_is_waited_for_until_it_is_still(form_file: CacheFile) -> None:
    settling, _ = _settling(form_file, settle_quiet_period=0.1)
    state, command, looks = drive(settling, Look(FAILED_AT), _flickering(FAILED_AT + 0.2))
    assert isinstance(state, Suspended)
    assert command == HandBack(TYPE_NAME, PROBLEM, executed=True, code="tool_failed")
    still_from = next(look.at for look in looks if look.at >= FAILED_AT + 0.2)
    assert 0.1 <= looks[-1].at - still_from < 0.1 + POLL


def test_a_screen_that_never_settles_is_handed_back_after_the_timeout(
    form_file: CacheFile,
) -> None:
    settling, _ = _settling(form_file, settle_quiet_period=0.1, settle_timeout=0.3)
    state, command, looks = drive(settling, Look(FAILED_AT), _flickering(float("inf")))
    assert isinstance(state, Suspended)
    assert command == HandBack(TYPE_NAME, PROBLEM, executed=True, code="tool_failed")
    assert 0.3 <= looks[-1].at - FAILED_AT < 0.3 + POLL


def test_a_look_that_failed_hands_back_with_the_calls_problem(form_file: CacheFile) -> None:
    settling, _ = _settling(form_file)
    state, command = advance(settling, blind(FAILED_AT))
    assert isinstance(state, Suspended)
    assert command == HandBack(TYPE_NAME, PROBLEM, executed=True, code="tool_failed")


def test_a_look_without_an_image_hands_back_with_the_calls_problem(form_file: CacheFile) -> None:
    settling, _ = _settling(form_file)
    state, command = advance(settling, seen(None, FAILED_AT))
    assert isinstance(state, Suspended)
    assert command == HandBack(TYPE_NAME, PROBLEM, executed=True, code="tool_failed")
