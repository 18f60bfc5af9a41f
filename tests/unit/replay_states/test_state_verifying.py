"""``Verifying``: watching for the effect a replayed step had when recorded. ``Seen`` ->
``Verifying``, and as ``Idle``: ``Pausing``, ``Checking``, ``AwaitingResult``, ``Ending``,
``Over``, ``Suspended``; ``Blind`` -> ``Suspended``.

Two entries of the table (as ``Idle``) cannot be reached from a look: ``Observing`` (the next
step is checked on the look that showed the effect, never on another) and
``AwaitingScreenshot`` (a replay that looks can take its own screenshots)."""

from __future__ import annotations

from typing import Any

import pytest

from askcache.cachefile.format import CacheFile
from askcache.replay.commands import Emit, Finished, HandBack, Look, Sleep, Turn
from askcache.replay.states import (
    AwaitingResult,
    Checking,
    Ending,
    Over,
    Pausing,
    State,
    Suspended,
    Verifying,
)
from askcache.testing import SimulatedFormApp
from tests.unit.replay_states._build import (
    CLICK_SAVE,
    FIRST,
    POLL,
    SAVE_AT,
    STILL,
    TYPE_NAME,
    History,
    Late,
    advance,
    blind,
    emitted,
    form,
    pauses,
    plan_of,
    seen,
)

RESULT_AT = 1.5
"""When the typing step's result comes (it was emitted at 1.0 plus the still period)."""


def _verifying(form_file: CacheFile, **settings: Any) -> tuple[Verifying, Late]:
    """The typing step emitted on a slow form and its result read: the text is not drawn
    yet, the effect is watched for."""
    history = History(Late(focus="name"))
    awaiting, command = emitted(plan_of(form_file, **settings), TYPE_NAME, history, 1.0)
    state, look = awaiting.next(Turn(history.run(command.call), RESULT_AT))
    assert isinstance(state, Verifying)
    assert look == Look(RESULT_AT + FIRST)
    assert isinstance(history.app, Late)
    return state, history.app


def _looks_until_drawn(state: State, app: Late, drawn_at: float) -> tuple[State, Any, list[Look]]:
    """Looks of the form, its text drawn from ``drawn_at`` on: until the state is no longer
    ``Verifying`` (the last transition held to purity)."""
    look: Any = Look(RESULT_AT + FIRST)
    looks: list[Look] = []
    while True:
        assert isinstance(state, Verifying)
        assert isinstance(look, Look)
        looks.append(look)
        if look.at >= drawn_at and app.due:
            app.catch_up()
        image = form(app)
        after, command = state.next(seen(image, look.at))
        if not isinstance(after, Verifying):
            after, command = advance(state, seen(image, look.at))
            return after, command, looks
        state, look = after, command


def test_while_the_effect_is_not_drawn_the_screen_is_looked_at_soon_then_less_often(
    form_file: CacheFile,
) -> None:
    state, app = _verifying(form_file)
    look: Any = Look(RESULT_AT + FIRST)
    looks = []
    for _ in range(5):
        looks.append(look)
        state, look = advance(state, seen(form(app), look.at))
        assert isinstance(state, Verifying)
    looks.append(look)
    assert pauses(RESULT_AT, looks) == pytest.approx(
        [FIRST, 2 * FIRST, 4 * FIRST, POLL, POLL, POLL]
    )


def test_the_next_step_is_checked_on_the_look_that_showed_the_effect(
    form_file: CacheFile,
) -> None:
    state, app = _verifying(form_file)
    pending = state.pending
    checking, look, looks = _looks_until_drawn(state, app, drawn_at=RESULT_AT + 0.01)
    shown = looks[-1].at
    assert isinstance(checking, Checking)
    assert look == Look(shown + STILL)  # the still look for the Save click
    assert checking.progress.index == CLICK_SAVE
    assert checking.watch is not None
    assert checking.watch.started == shown
    typed = checking.progress.records[-1]
    assert (typed.step_index, typed.effect) == (TYPE_NAME, "seen")
    assert typed.waited_seconds == pytest.approx(STILL)  # its check's wait, before it acted
    assert typed.effect_waited_seconds == pytest.approx(shown - RESULT_AT)  # its effect's
    assert typed.seconds == pytest.approx(shown - pending.started)
    # the Save click acts on the still look
    still = form(app)
    state, command = advance(checking, seen(still, shown + STILL))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "left_click", "coordinate": SAVE_AT}
    assert state.pending.before_image is still


def test_without_a_still_period_the_next_step_acts_on_that_look(form_file: CacheFile) -> None:
    state, app = _verifying(form_file, settle_still_period=0)
    after, command, looks = _looks_until_drawn(state, app, drawn_at=RESULT_AT + 0.01)
    assert isinstance(after, AwaitingResult)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "left_click", "coordinate": SAVE_AT}
    assert after.pending.started == looks[-1].at


def test_a_delay_between_actions_drops_the_look_and_sleeps(form_file: CacheFile) -> None:
    state, app = _verifying(form_file, delay_time_between_action=0.3)
    after, command, _ = _looks_until_drawn(state, app, drawn_at=RESULT_AT)
    assert isinstance(after, Pausing)
    assert command == Sleep(0.3)
    assert after.just_acted  # the screen is looked at again after the delay


def test_an_effect_that_never_appears_hands_back_once_the_screen_is_still(
    form_file: CacheFile,
) -> None:
    state, app = _verifying(form_file, settle_quiet_period=0.1)
    pending = state.pending
    after, command, looks = _looks_until_drawn(state, app, drawn_at=float("inf"))
    assert isinstance(after, Suspended)
    assert isinstance(command, HandBack)
    assert (command.step, command.executed) == (TYPE_NAME, True)
    assert command.problem.startswith("the typed text never reached the screen")
    assert 0.1 <= looks[-1].at - RESULT_AT < 0.1 + POLL
    assert after.progress.index == CLICK_SAVE  # it ran: a re-join resumes after it
    assert (after.stopped.check, after.stopped.ran) == ("effect", pending)
    assert pending.call_id not in after.progress.emitted
    record = after.progress.records[-1]
    assert record.effect is None
    assert record.seconds == pytest.approx(looks[-1].at - pending.started)


def test_a_look_that_failed_hands_back_after_the_step(form_file: CacheFile) -> None:
    state, _ = _verifying(form_file)
    observation = blind(RESULT_AT + FIRST)
    after, command = advance(state, observation)
    assert isinstance(after, Suspended)
    assert command == HandBack(
        TYPE_NAME,
        f"its effect cannot be checked: {observation.error}",
        executed=True,
        code="screen_unreadable",
    )
    assert after.stopped.check == "effect"


def _saving(form_file: CacheFile, **settings: Any) -> tuple[Verifying, SimulatedFormApp]:
    """The Save click emitted and run, its result without a screenshot: the effect is
    looked for on a look of the replay's own."""
    app = SimulatedFormApp(focus="name", values={"name": "Ada Lovelace", "email": ""})
    history = History(app)
    awaiting, command = emitted(plan_of(form_file, **settings), CLICK_SAVE, history, 1.0)
    app.click(app.widget("save").center, "left", 1, None)
    state, look = awaiting.next(Turn(history.answer(command.call, "clicked"), RESULT_AT))
    assert isinstance(state, Verifying)
    assert look == Look(RESULT_AT)
    return state, app


def test_after_the_last_step_the_end_screen_is_looked_at(form_file: CacheFile) -> None:
    state, app = _saving(form_file)
    after, command = advance(state, seen(form(app), RESULT_AT))
    assert isinstance(after, Ending)
    assert command == Look(RESULT_AT)  # the history holds no screenshot since the click
    assert after.progress.records[-1].effect == "seen"


def test_after_the_last_step_with_no_end_state_compared_the_replay_is_over(
    form_file: CacheFile,
) -> None:
    state, app = _saving(form_file, end_state="off")
    after, command = advance(state, seen(form(app), RESULT_AT))
    assert isinstance(after, Over)
    assert command == Finished(None)
