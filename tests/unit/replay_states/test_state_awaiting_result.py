"""``AwaitingResult``: a replayed step's call is out; the next turn brings its result.
``Turn`` -> ``Settling``, ``Verifying``, and as ``Idle``: ``Pausing``, ``Observing``,
``AwaitingResult``, ``AwaitingScreenshot``, ``Ending``, ``Over``, ``Suspended``.

``Checking`` is in the table (as ``Idle``) but not reachable from here: right after a step, a
replay that can look always looks again (``Observing``), and one that cannot decides the next
check on the result's screenshot at once."""

from __future__ import annotations

from typing import Any

from askcache.cachefile.format import CacheFile
from askcache.foundation.messages import ToolUseBlockParam
from askcache.replay.commands import Emit, Finished, HandBack, Look, Sleep, Turn
from askcache.replay.states import (
    AwaitingResult,
    AwaitingScreenshot,
    Ending,
    Idle,
    Observing,
    Over,
    Pausing,
    Settling,
    Suspended,
    Verifying,
)
from askcache.testing import SimulatedFormApp
from tests.unit.replay_states._build import (
    CLICK_NAME,
    CLICK_SAVE,
    FIRST,
    NAME_AT,
    SCREENSHOT,
    TYPE_NAME,
    History,
    Late,
    advance,
    plan_of,
    progress_at,
)

TYPED: dict[str, Any] = {"focus": "name", "values": {"name": "Ada Lovelace", "email": ""}}


def _emitted(
    form_file: CacheFile, index: int, history: History, **settings: Any
) -> tuple[AwaitingResult, ToolUseBlockParam]:
    """Step ``index`` checked on a screenshot of ``history``'s form at instant 1 and
    emitted (no still period: the check decides on that screenshot)."""
    if index != SCREENSHOT:
        history.screenshot()
    plan = plan_of(form_file, settle_still_period=0, **settings)
    idle = Idle(plan, progress_at(index, starting=False))
    state, command = idle.next(Turn(list(history.messages), 1.0))
    assert isinstance(state, AwaitingResult), command
    assert isinstance(command, Emit)
    return state, command.call


def test_a_step_without_a_recorded_effect_goes_on_to_a_look_of_its_own(
    form_file: CacheFile,
) -> None:
    history = History()
    emitted, step = _emitted(form_file, SCREENSHOT, history)
    state, command = advance(emitted, Turn(history.run(step), 1.5))
    assert isinstance(state, Observing)
    assert command == Look(1.5)  # the result's screenshot was taken the moment it ran
    assert state.progress.index == CLICK_NAME
    record = state.progress.records[-1]
    assert (record.effect, record.seconds) == ("not_checked", 0.5)
    assert state.progress.ran == emitted.pending


def test_an_effect_the_results_screenshot_shows_is_seen_without_a_wait(
    form_file: CacheFile,
) -> None:
    history = History(SimulatedFormApp(focus="name"))
    emitted, step = _emitted(form_file, TYPE_NAME, history)
    state, command = advance(emitted, Turn(history.run(step), 1.5))
    assert isinstance(state, Observing)
    assert command == Look(1.5)  # the next step is still checked on a look of its own
    record = state.progress.records[-1]
    assert (record.step_index, record.effect, record.waited_seconds) == (TYPE_NAME, "seen", 0.0)
    assert state.progress.index == CLICK_SAVE


def test_an_effect_not_yet_drawn_is_watched_for(form_file: CacheFile) -> None:
    history = History(Late(focus="name"))
    emitted, step = _emitted(form_file, TYPE_NAME, history)
    state, command = advance(emitted, Turn(history.run(step), 1.5))
    assert isinstance(state, Verifying)
    assert command == Look(1.5 + FIRST)
    assert state.result is not None  # the watch began on the result's screenshot
    assert state.watch is not None
    assert state.pending == emitted.pending


def test_a_result_without_a_screenshot_is_looked_at(form_file: CacheFile) -> None:
    history = History(SimulatedFormApp(focus="name"))
    emitted, step = _emitted(form_file, TYPE_NAME, history)
    history.app.type_text("Ada Lovelace")
    state, command = advance(emitted, Turn(history.answer(step, "typed"), 1.5))
    assert isinstance(state, Verifying)
    assert command == Look(1.5)
    assert state.watch is None


def test_a_call_that_failed_lets_the_screen_settle_before_handing_back(
    form_file: CacheFile,
) -> None:
    history = History(SimulatedFormApp(focus="name"))
    emitted, step = _emitted(form_file, TYPE_NAME, history)
    history.app.focus = None  # the keys go nowhere: the form reports an error
    state, command = advance(emitted, Turn(history.run(step), 1.5))
    assert isinstance(state, Settling)
    assert command == Look(1.5)
    assert state.command == HandBack(
        TYPE_NAME,
        "the tool reported an error: Tool 'computer' failed: ValueError: no field has the "
        "keyboard focus; click a field first",
        executed=True,
        code="tool_failed",
    )
    assert step.id not in state.progress.emitted  # it did not work as recorded


def test_a_call_that_failed_in_a_replay_that_cannot_look_hands_back_at_once(
    form_file: CacheFile,
) -> None:
    history = History(SimulatedFormApp(focus="name"))
    emitted, step = _emitted(form_file, TYPE_NAME, history, can_look=False)
    history.app.focus = None
    messages = history.run(step)
    state, command = advance(emitted, Turn(messages, 1.5))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert (command.step, command.executed) == (TYPE_NAME, True)
    assert state.progress.index == CLICK_SAVE  # it ran: a re-join resumes after it
    assert state.stopped.check == "effect"
    assert state.stopped.ran == emitted.pending
    assert state.stopped.at_message == len(messages)


def test_a_replay_that_cannot_look_checks_the_next_step_on_the_result(
    form_file: CacheFile,
) -> None:
    history = History()
    emitted, step = _emitted(form_file, SCREENSHOT, history, can_look=False)
    state, command = advance(emitted, Turn(history.run(step), 1.5))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "left_click", "coordinate": NAME_AT}
    assert [r.step_index for r in state.progress.records] == [SCREENSHOT, CLICK_NAME]


def test_a_replay_that_cannot_look_asks_for_a_screenshot_when_the_result_has_none(
    form_file: CacheFile,
) -> None:
    history = History()
    emitted, step = _emitted(form_file, SCREENSHOT, history, can_look=False)
    state, command = advance(emitted, Turn(history.answer(step, "no image"), 1.5))
    assert isinstance(state, AwaitingScreenshot)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "screenshot"}
    assert not command.call.replayed  # a request of the replay's own, not a step


def test_the_delay_between_actions_comes_after_the_result(form_file: CacheFile) -> None:
    history = History()
    emitted, step = _emitted(form_file, SCREENSHOT, history, delay_time_between_action=0.4)
    state, command = advance(emitted, Turn(history.run(step), 1.5))
    assert isinstance(state, Pausing)
    assert command == Sleep(0.4)
    assert state.just_acted


def test_after_the_last_step_a_matching_end_screen_finishes(form_file: CacheFile) -> None:
    history = History(SimulatedFormApp(**TYPED))
    emitted, step = _emitted(form_file, CLICK_SAVE, history)
    state, command = advance(emitted, Turn(history.run(step), 1.5))
    assert isinstance(state, Over)
    assert isinstance(command, Finished)
    assert command.verdict is not None
    assert command.verdict.matched
    assert state.progress.records[-1].effect == "seen"
    assert history.app.saved == [TYPED["values"]]


def test_after_the_last_step_a_different_end_screen_is_watched(form_file: CacheFile) -> None:
    # an Email left filled: the Save click's own effect is not checked (check_effects off),
    # the end screen differs from the recording's there
    app = SimulatedFormApp(focus="name", values={"name": "Ada Lovelace", "email": "x@y.z"})
    history = History(app)
    emitted, step = _emitted(form_file, CLICK_SAVE, history, check_effects=False)
    state, command = advance(emitted, Turn(history.run(step), 1.5))
    assert isinstance(state, Ending)
    assert command == Look(1.5 + FIRST)


def test_a_typed_text_that_never_appeared_hands_back_in_a_replay_that_cannot_look(
    form_file: CacheFile,
) -> None:
    history = History(Late(focus="name"))
    emitted, step = _emitted(form_file, TYPE_NAME, history, can_look=False)
    state, command = advance(emitted, Turn(history.run(step), 1.5))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert (command.step, command.executed) == (TYPE_NAME, True)
    assert command.problem.startswith("the typed text never reached the screen")
    assert step.id not in state.progress.emitted
    assert state.progress.records[-1].seconds == 0.5


def test_a_result_screenshot_that_is_no_image_hands_back_after_the_step(
    form_file: CacheFile,
) -> None:
    history = History(SimulatedFormApp(focus="name"))
    emitted, step = _emitted(form_file, TYPE_NAME, history)
    history.run(step)
    state, command = advance(emitted, Turn(history.corrupt_latest(), 1.5))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert (command.step, command.executed) == (TYPE_NAME, True)
    assert command.problem.startswith("the screen could not be read (")
