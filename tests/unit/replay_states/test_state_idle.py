"""``Idle``: activated (or re-joined), waiting for the replay's turn. ``Turn`` ->
``Pausing``, ``Observing``, ``Checking``, ``AwaitingResult``, ``AwaitingScreenshot``,
``Ending``, ``Over``, ``Suspended``."""

from __future__ import annotations

import pytest

from askcache.cachefile.format import CacheFile
from askcache.replay.commands import Emit, Finished, HandBack, Look, Sleep, Turn
from askcache.replay.states import (
    AwaitingResult,
    AwaitingScreenshot,
    Checking,
    Ending,
    Idle,
    Observing,
    Over,
    Pausing,
    Suspended,
)
from askcache.testing import SimulatedFormApp
from tests.unit.replay_states._build import (
    CLICK_NAME,
    NAME_AT,
    START_STILL,
    History,
    advance,
    call,
    plan_of,
    progress_at,
)


def test_a_step_that_needs_no_screen_is_emitted_at_once(form_file: CacheFile) -> None:
    # step 0 is a screenshot: no check, no look; the call is the step, replayed
    idle = Idle(plan_of(form_file), progress_at(0))
    state, command = advance(idle, Turn(History().messages, 1.0))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    recorded = form_file.trajectory[0]
    assert command.call.input == {"action": "screenshot"}
    assert command.call.replayed
    assert command.call.id != recorded.id
    assert state.pending.call_id == command.call.id
    assert state.pending.step == 0
    assert state.pending.started == 1.0
    progress = state.progress
    assert (progress.steps_run, progress.validated, progress.unvalidated) == (1, 0, 1)
    assert progress.records[-1].note == "does not act on the screen"
    assert progress.emitted == {command.call.id: recorded}
    assert (progress.first_step, progress.step_started) == (False, 1.0)


def test_with_no_fresh_screenshot_the_replay_looks_at_the_screen(form_file: CacheFile) -> None:
    history = History()
    history.screenshot()
    history.answer(call("left_click", coordinate=NAME_AT), "clicked")  # no screenshot in it
    idle = Idle(plan_of(form_file), progress_at(CLICK_NAME))
    state, command = advance(idle, Turn(history.messages, 2.0))
    assert isinstance(state, Observing)
    assert command == Look(2.0)
    assert state.image is None


def test_a_fresh_screenshot_is_checked_and_looked_at_again_the_still_period_later(
    form_file: CacheFile,
) -> None:
    history = History()
    history.screenshot()
    idle = Idle(plan_of(form_file), progress_at(CLICK_NAME))
    state, command = advance(idle, Turn(history.messages, 3.0))
    assert isinstance(state, Checking)
    assert command == Look(3.0 + START_STILL)  # the first step: settle_start_still
    assert state.starting  # the first step that needs a screen: the start-up wait
    assert not state.progress.starting
    assert state.stage == "step"


def test_with_windows_listed_the_fresh_screenshot_waits_for_the_windows(
    form_file: CacheFile,
) -> None:
    history = History()
    image = history.screenshot()
    idle = Idle(plan_of(form_file, lists_windows=True), progress_at(CLICK_NAME))
    state, command = advance(idle, Turn(history.messages, 3.0))
    assert isinstance(state, Observing)
    assert command == Look(3.0, grab=False)
    assert state.image == image


def test_after_a_step_the_delay_between_actions_comes_first(form_file: CacheFile) -> None:
    plan = plan_of(form_file, delay_time_between_action=0.25)
    idle = Idle(plan, progress_at(CLICK_NAME, first_step=False))
    state, command = advance(idle, Turn(History().messages, 1.0))
    assert isinstance(state, Pausing)
    assert command == Sleep(0.25)
    assert not state.just_acted
    # the first step after activation (or a re-join) has no delay
    state, command = advance(Idle(plan, progress_at(0)), Turn(History().messages, 1.0))
    assert isinstance(state, AwaitingResult)


def test_a_replay_that_cannot_look_asks_the_conversation_for_a_screenshot(
    form_file: CacheFile,
) -> None:
    idle = Idle(plan_of(form_file, can_look=False), progress_at(CLICK_NAME))
    state, command = advance(idle, Turn(History().messages, 1.0))
    assert isinstance(state, AwaitingScreenshot)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "screenshot"}
    assert state.pending.call_id == command.call.id
    assert state.pending.step is None
    assert state.progress.screenshot_asked_for == CLICK_NAME
    assert state.progress.screenshots_taken == 1
    assert state.progress.steps_run == 0


def test_after_the_last_step_the_end_screen_is_looked_at(form_file: CacheFile) -> None:
    idle = Idle(plan_of(form_file), progress_at(4))
    state, command = advance(idle, Turn(History().messages, 5.0))
    assert isinstance(state, Ending)
    assert command == Look(5.0)


def test_after_the_last_step_a_fresh_screenshot_that_matches_finishes(
    form_file: CacheFile,
) -> None:
    app = SimulatedFormApp(values={"name": "Ada Lovelace", "email": ""}, focus="name")
    app.click(app.widget("save").center, "left", 1, None)
    history = History(app)
    image = history.screenshot()
    idle = Idle(plan_of(form_file), progress_at(4))
    state, command = advance(idle, Turn(history.messages, 5.0))
    assert isinstance(state, Over)
    assert isinstance(command, Finished)
    assert command.verdict is not None
    assert command.verdict.matched
    assert not command.hand_back
    assert state.progress.seen.latest == image


@pytest.mark.parametrize("end_state", ["off", "report"])
def test_after_the_last_step_with_nothing_to_compare_the_replay_is_over(
    form_file: CacheFile, end_state: str
) -> None:
    # "off": not compared; "report" on a replay that cannot look and has no fresh screenshot
    plan = plan_of(form_file, end_state=end_state, can_look=end_state == "off")
    state, command = advance(Idle(plan, progress_at(4)), Turn(History().messages, 5.0))
    assert isinstance(state, Over)
    assert command == Finished(None)


def test_a_screenshot_that_is_no_image_hands_back_before_the_step(form_file: CacheFile) -> None:
    history = History()
    history.screenshot()
    messages = history.corrupt_latest()
    state, command = advance(Idle(plan_of(form_file), progress_at(CLICK_NAME)), Turn(messages, 1.0))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert command.step == CLICK_NAME
    assert command.problem.startswith("the screen could not be read (")
    assert not command.executed
    assert state.stopped.check == "fingerprint"
    assert state.stopped.at_message == len(messages)
    assert state.progress.index == CLICK_NAME  # it did not run: a re-join starts there


def test_a_replay_that_cannot_look_hands_back_at_once_on_a_changed_screen(
    form_file: CacheFile,
) -> None:
    history = History(SimulatedFormApp(layout="banner"))
    image = history.screenshot()
    plan = plan_of(form_file, can_look=False)
    state, command = advance(Idle(plan, progress_at(CLICK_NAME)), Turn(history.messages, 1.0))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert command.step == CLICK_NAME
    assert "no longer matches the recording" in command.problem
    assert "settle_timeout" not in command.problem  # it could not wait
    record = state.progress.records[-1]
    assert (record.step_index, record.matched, record.waited_seconds) == (CLICK_NAME, False, 0.0)
    assert state.progress.seen.latest is None  # handed back: later looks follow the model
    assert state.plan.start.step is None  # the start screen guarded the start only
    assert image.size == (640, 400)


@pytest.mark.parametrize("can_look", [True, False], ids=["can look", "cannot look"])
def test_a_stale_screenshot_that_is_no_image_is_not_needed(
    form_file: CacheFile, can_look: bool
) -> None:
    history = History()
    history.screenshot()
    history.corrupt_latest()
    messages = history.answer(call("left_click", coordinate=NAME_AT), "clicked")
    idle = Idle(plan_of(form_file, can_look=can_look), progress_at(CLICK_NAME))
    state, command = advance(idle, Turn(messages, 1.0))
    if can_look:
        assert isinstance(state, Observing)
        assert command == Look(1.0)
    else:
        assert isinstance(state, AwaitingScreenshot)
        assert isinstance(command, Emit)
