"""``Rejoining``: the looks that decide a re-join. The latest screenshot (its windows listed
when the screen lists them) must pass, then the screen once settled (a slow application may
not have answered the model's action yet). ``Seen`` -> ``Rejoining``, ``Suspended``, ``Idle``;
``Blind`` -> ``Suspended``."""

from __future__ import annotations

from askcache.cachefile.format import CacheFile
from askcache.replay.commands import Ask, Decided, Look
from askcache.replay.states import Idle, Rejoining, Suspended
from askcache.testing import SimulatedFormApp
from tests.unit.replay_states._build import (
    CLEAR_AT,
    CLICK_NAME,
    FIRST,
    POLL,
    advance,
    blind,
    call,
    drive,
    form,
    seen,
    suspended,
)

ASK_AT = 3.0
REJOINED = "step 1 passes its check and the check that failed passes"


def _rejoining(
    form_file: CacheFile, **settings: object
) -> tuple[Rejoining, Look, SimulatedFormApp]:
    """The model cleared the form after the hand-back; the latest screenshot passed (or,
    with windows listed, waits for them)."""
    state, history = suspended(form_file, **settings)
    messages = history.say("I clear the form first.", call("left_click", coordinate=CLEAR_AT))
    rejoining, look = state.next(Ask(messages, ASK_AT))
    assert isinstance(rejoining, Rejoining)
    assert isinstance(look, Look)
    assert isinstance(history.app, SimulatedFormApp)
    return rejoining, look, history.app


def test_the_settled_screen_is_watched_until_still_and_then_the_replay_re_joins(
    form_file: CacheFile,
) -> None:
    rejoining, look, app = _rejoining(form_file)
    assert rejoining.settling
    cleared = form(app)
    state, command = advance(rejoining, seen(cleared, look.at))
    assert isinstance(state, Rejoining)
    assert command == Look(ASK_AT + FIRST)
    assert state.watch is not None
    state, command, looks = drive(state, command, lambda at: cleared)
    assert isinstance(state, Idle)
    assert command == Decided(rejoined=True)
    assert 0.05 <= looks[-1].at - ASK_AT < 0.05 + POLL  # the quiet period
    (decision,) = state.progress.rejoin_decisions
    assert (decision.rejoined, decision.reason) == (True, REJOINED)
    assert state.progress.rejoins == 1


def test_a_settled_screen_that_fails_the_check_refuses(form_file: CacheFile) -> None:
    # the application undid the model's action after its screenshot was taken
    rejoining, look, _ = _rejoining(form_file)
    undone = form(values={"name": "alice", "email": ""})
    state, command, _ = drive(rejoining, look, lambda at: undone)
    assert isinstance(state, Suspended)
    assert command == Decided(rejoined=False)
    (decision,) = state.progress.rejoin_decisions
    assert decision.refused_by == "screen"
    assert decision.reason.startswith("on the settled screen, step 1 does not pass its check")
    assert state.stopped == rejoining.stopped


def test_the_latest_screenshot_is_checked_with_the_windows_listed_now(
    form_file: CacheFile,
) -> None:
    rejoining, look, _ = _rejoining(form_file, lists_windows=True)
    assert look == Look(ASK_AT, grab=False)
    state, command = advance(rejoining, seen(None, ASK_AT, windows=[]))
    assert isinstance(state, Rejoining)
    assert command == Look(ASK_AT)  # it passed: now the settled screen
    assert state.settling


def test_with_windows_listed_a_latest_screenshot_that_fails_refuses(
    form_file: CacheFile,
) -> None:
    state, history = suspended(form_file, lists_windows=True)
    messages = history.say("Let me try the Email field.", call("left_click", coordinate=[360, 148]))
    rejoining, look = state.next(Ask(messages, ASK_AT))
    assert isinstance(rejoining, Rejoining)
    assert look == Look(ASK_AT, grab=False)
    after, command = advance(rejoining, seen(None, ASK_AT, windows=[]))
    assert isinstance(after, Suspended)
    assert command == Decided(rejoined=False)
    (decision,) = after.progress.rejoin_decisions
    assert decision.refused_by == "screen"
    assert decision.reason.startswith("on the latest screenshot, step 1 does not pass its check")


def test_with_windows_listed_a_replay_that_cannot_look_decides_on_the_screenshot(
    form_file: CacheFile,
) -> None:
    rejoining, look, _ = _rejoining(form_file, lists_windows=True, can_look=False)
    assert look == Look(ASK_AT, grab=False)
    state, command = advance(rejoining, seen(None, ASK_AT, windows=[]))
    assert isinstance(state, Idle)
    assert command == Decided(rejoined=True)
    assert state.progress.rejoin_decisions[-1].reason == REJOINED


def test_a_look_that_failed_refuses(form_file: CacheFile) -> None:
    rejoining, look, _ = _rejoining(form_file)
    observation = blind(look.at)
    state, command = advance(rejoining, observation)
    assert isinstance(state, Suspended)
    assert command == Decided(rejoined=False)
    (decision,) = state.progress.rejoin_decisions
    assert (decision.refused_by, decision.reason) == (
        "screen",
        f"the screen could not be read (CaptureFailedError: {observation.error})",
    )


def test_with_no_screenshot_since_the_models_action_the_settled_screen_decides(
    form_file: CacheFile,
) -> None:
    state, history = suspended(form_file)
    history.app.values = {"name": "", "email": ""}  # the model's click cleared the form
    messages = history.answer(call("left_click", coordinate=CLEAR_AT), "clicked")
    rejoining, look = state.next(Ask(messages, ASK_AT))
    assert isinstance(rejoining, Rejoining)
    assert look == Look(ASK_AT)
    cleared = form(history.app)
    after, command, _ = drive(rejoining, look, lambda at: cleared)
    assert isinstance(after, Idle)
    assert command == Decided(rejoined=True)
    assert after.progress.rejoin_decisions[-1].reason == REJOINED


def test_the_resumed_step_is_the_one_the_replay_stopped_at(form_file: CacheFile) -> None:
    rejoining, look, app = _rejoining(form_file)
    cleared = form(app)
    state, _, _ = drive(rejoining, look, lambda at: cleared)
    assert isinstance(state, Idle)
    assert state.progress.index == CLICK_NAME
    assert state.plan.start.step is None  # the start screen guarded the start only
