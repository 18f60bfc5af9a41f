"""``Pausing``: the fixed delay the settings ask for between two steps. ``Woke`` ->
``Observing``, ``Checking``, ``AwaitingResult``, ``AwaitingScreenshot``, ``Suspended``.

The step's observation begins when the delay is over (the ``Woke``'s instant); a look taken
before the delay is never used for the step after it."""

from __future__ import annotations

from askcache.cachefile.format import CacheFile
from askcache.replay.commands import Emit, HandBack, Look, Woke
from askcache.replay.states import (
    AwaitingResult,
    AwaitingScreenshot,
    Checking,
    Observing,
    Pausing,
    Suspended,
)
from tests.unit.replay_states._build import (
    CLICK_NAME,
    SCREENSHOT,
    STILL,
    TYPE_NAME,
    History,
    advance,
    plan_of,
    progress_at,
)

DELAY = 0.5


def _pausing(form_file: CacheFile, index: int, *, just_acted: bool) -> Pausing:
    history = History()
    history.screenshot()
    return Pausing(
        plan_of(form_file, delay_time_between_action=DELAY),
        progress_at(index, first_step=False, starting=False),
        history.messages,
        just_acted,
    )


def test_after_a_replayed_step_the_screen_is_looked_at_once_the_delay_is_over(
    form_file: CacheFile,
) -> None:
    # the history's screenshot is fresh, but a step just ran: the replay looks itself
    pausing = _pausing(form_file, TYPE_NAME, just_acted=True)
    state, command = advance(pausing, Woke(7.5))
    assert isinstance(state, Observing)
    assert command == Look(7.5)
    assert state.progress.step_started == 7.5


def test_otherwise_the_fresh_screenshot_in_the_history_is_checked(form_file: CacheFile) -> None:
    pausing = _pausing(form_file, CLICK_NAME, just_acted=False)
    state, command = advance(pausing, Woke(7.5))
    assert isinstance(state, Checking)
    assert command == Look(7.5 + STILL)
    assert state.watch is not None
    assert state.watch.started == 7.5


def test_a_step_that_needs_no_screen_runs_once_the_delay_is_over(form_file: CacheFile) -> None:
    pausing = _pausing(form_file, SCREENSHOT, just_acted=True)
    state, command = advance(pausing, Woke(7.5))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "screenshot"}
    assert state.pending.started == 7.5


def test_a_replay_that_cannot_look_asks_for_a_screenshot_after_the_delay(
    form_file: CacheFile,
) -> None:
    pausing = Pausing(
        plan_of(form_file, can_look=False, delay_time_between_action=DELAY),
        progress_at(CLICK_NAME, first_step=False),
        History().messages,  # no screenshot at all
        False,
    )
    state, command = advance(pausing, Woke(7.5))
    assert isinstance(state, AwaitingScreenshot)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "screenshot"}
    assert state.progress.screenshot_asked_for == CLICK_NAME


def test_a_history_screenshot_that_is_no_image_hands_back(form_file: CacheFile) -> None:
    history = History()
    history.screenshot()
    pausing = Pausing(
        plan_of(form_file, delay_time_between_action=DELAY),
        progress_at(CLICK_NAME, first_step=False),
        history.corrupt_latest(),
        False,
    )
    state, command = advance(pausing, Woke(7.5))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert command.step == CLICK_NAME
    assert command.problem.startswith("the screen could not be read (")
    assert (state.stopped.check, state.progress.index) == ("fingerprint", CLICK_NAME)
