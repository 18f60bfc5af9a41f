"""``Observing``: a look to check the next step on. ``Seen`` -> ``Checking``,
``AwaitingResult``, ``Suspended``; ``Blind`` -> ``Suspended``."""

from __future__ import annotations

from askcache.cachefile.format import CacheFile
from askcache.replay.commands import Emit, HandBack, Look
from askcache.replay.states import AwaitingResult, Checking, Observing, Suspended
from tests.unit.replay_states._build import (
    QUIET,
    STILL,
    TIMEOUT,
    TYPE_NAME,
    advance,
    blind,
    form,
    plan_of,
    progress_at,
    seen,
)


def _observing(form_file: CacheFile, **settings: object) -> Observing:
    return Observing(
        plan_of(form_file, **settings),
        progress_at(TYPE_NAME, first_step=False, starting=False, step_started=2.0),
        [],
    )


def test_a_look_the_check_passes_on_is_looked_at_again_the_still_period_later(
    form_file: CacheFile,
) -> None:
    focused = form(focus="name")
    state, command = advance(_observing(form_file), seen(focused, 2.0))
    assert isinstance(state, Checking)
    assert command == Look(2.0 + STILL)
    assert state.watch is not None
    assert state.watch.screen.image is focused
    assert state.watch.passing is not None  # the check passed: only its stillness is awaited
    assert (state.watch.timeout, state.watch.quiet_period) == (TIMEOUT, QUIET)


def test_without_a_still_period_a_passing_check_acts_on_the_look(form_file: CacheFile) -> None:
    focused = form(focus="name")
    observing = _observing(form_file, settle_still_period=0)
    state, command = advance(observing, seen(focused, 2.0))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "type", "text": "Ada Lovelace"}
    assert command.call.replayed
    record = state.progress.records[-1]
    assert (record.step_index, record.validated, record.matched) == (TYPE_NAME, True, True)
    assert record.waited_seconds == 0.0
    assert state.pending.before_image is focused  # the screen it acted on
    assert state.progress.seen.before[command.call.id] is focused


def test_windows_listed_with_the_history_screenshot_check_that_screenshot(
    form_file: CacheFile,
) -> None:
    # Look(grab=False) was answered with the windows only: the image is the history's
    focused = form(focus="name")
    observing = Observing(
        plan_of(form_file, lists_windows=True, settle_still_period=0),
        progress_at(TYPE_NAME, first_step=False, starting=False),
        [],
        focused,
    )
    state, command = advance(observing, seen(None, 2.0, windows=[]))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert state.pending.before_image is focused


def test_a_screen_of_another_aspect_ratio_hands_back_without_waiting(
    form_file: CacheFile,
) -> None:
    # waiting cannot help (a final refusal): no second look
    wide = form(width=800, height=600, focus="name")
    state, command = advance(_observing(form_file), seen(wide, 2.0))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert command.step == TYPE_NAME
    assert "800x600 but the trajectory was recorded at 640x400" in command.problem
    assert state.progress.records[-1].waited_seconds == 0.0


def test_a_look_without_an_image_hands_back(form_file: CacheFile) -> None:
    state, command = advance(_observing(form_file), seen(None, 2.0))
    assert isinstance(state, Suspended)
    assert command == HandBack(
        TYPE_NAME,
        "the screen could not be read (AskCacheError: a look without a screenshot)",
        code="screen_unreadable",
    )


def test_a_look_that_failed_hands_back_before_the_step(form_file: CacheFile) -> None:
    observation = blind(2.0)
    state, command = advance(_observing(form_file), observation)
    assert isinstance(state, Suspended)
    assert command == HandBack(TYPE_NAME, str(observation.error), code="screen_unreadable")
    assert str(observation.error) == (
        "no screenshot could be taken (3 attempts in a row): "
        "OSError: the X server closed the connection"
    )
    assert (state.stopped.check, state.progress.index) == ("fingerprint", TYPE_NAME)
    assert state.progress.steps_run == 0
