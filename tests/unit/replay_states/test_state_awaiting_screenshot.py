"""``AwaitingScreenshot``: a screenshot was asked of the conversation (the replay cannot look
itself). ``Turn`` -> as ``Idle``: ``Pausing``, ``Observing``, ``Checking``, ``AwaitingResult``,
``AwaitingScreenshot``, ``Ending``, ``Over``, ``Suspended``.

A replay asks for a screenshot only when it cannot look; such a replay never watches, so a
check decides on the first screen (``Checking`` is never left waiting), and the step it asks
for is never past the last one (``Ending`` and ``Over`` come from a constructed state)."""

from __future__ import annotations

from askcache.cachefile.format import CacheFile
from askcache.foundation.messages import ToolUseBlockParam
from askcache.replay.commands import Emit, Finished, HandBack, Look, Sleep, Turn
from askcache.replay.plan import Pending
from askcache.replay.states import (
    AwaitingResult,
    AwaitingScreenshot,
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
    History,
    advance,
    call,
    plan_of,
    progress_at,
)


def _asked(form_file: CacheFile, history: History, **settings: object) -> AwaitingScreenshot:
    """Step 1's turn on ``history``, in a replay that cannot look: it asks for a screenshot."""
    plan = plan_of(form_file, can_look=False, **settings)
    state, command = Idle(plan, progress_at(CLICK_NAME)).next(Turn(list(history.messages), 1.0))
    assert isinstance(state, AwaitingScreenshot)
    assert isinstance(command, Emit)
    return state


def _request(state: AwaitingScreenshot) -> ToolUseBlockParam:
    """The screenshot call the state asked for (its id is the pending one)."""
    request = call("screenshot")
    return request.model_copy(update={"id": state.pending.call_id})


def test_the_screenshot_is_checked_and_the_step_emitted(form_file: CacheFile) -> None:
    history = History()
    asked = _asked(form_file, history)
    messages = history.run(_request(asked))
    state, command = advance(asked, Turn(messages, 1.2))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "left_click", "coordinate": NAME_AT}
    assert state.progress.ran == asked.pending  # the screenshot request's result was read
    record = state.progress.records[-1]
    assert (record.step_index, record.validated, record.waited_seconds) == (CLICK_NAME, True, 0.0)


def test_a_screenshot_that_failed_hands_back(form_file: CacheFile) -> None:
    history = History()
    asked = _asked(form_file, history)
    request = _request(asked)
    messages = history.answer(request, "the display went away", is_error=True)
    state, command = advance(asked, Turn(messages, 1.2))
    assert isinstance(state, Suspended)
    assert command == HandBack(
        CLICK_NAME,
        "no screenshot could be taken: the tool reported an error: the display went away",
        code="screen_unreadable",
    )
    assert (state.stopped.check, state.progress.index) == ("fingerprint", CLICK_NAME)


def test_with_no_screenshot_in_the_answer_or_the_history_it_asks_again(
    form_file: CacheFile,
) -> None:
    history = History()
    asked = _asked(form_file, history)
    messages = history.answer(_request(asked), "no image here")
    state, command = advance(asked, Turn(messages, 1.2))
    assert isinstance(state, AwaitingScreenshot)
    assert isinstance(command, Emit)
    assert state.pending.call_id == command.call.id != asked.pending.call_id
    assert state.progress.screenshots_taken == 2


def test_asked_once_per_step_an_older_screenshot_is_then_used(form_file: CacheFile) -> None:
    # the history's screenshot came before an action (stale): the replay asks once; the
    # answer holds no image, so the stale one is checked rather than asking again
    history = History()
    history.screenshot()
    history.answer(call("mouse_move", coordinate=[5, 5]), "moved")
    asked = _asked(form_file, history)
    messages = history.answer(_request(asked), "no image here")
    state, command = advance(asked, Turn(messages, 1.2))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert state.progress.screenshots_taken == 1


def test_with_windows_listed_the_screenshot_waits_for_the_windows(form_file: CacheFile) -> None:
    history = History()
    asked = _asked(form_file, history, lists_windows=True)
    messages = history.run(_request(asked))
    state, command = advance(asked, Turn(messages, 1.2))
    assert isinstance(state, Observing)
    assert command == Look(1.2, grab=False)
    assert state.image is not None


def test_a_changed_screen_hands_back_at_once(form_file: CacheFile) -> None:
    history = History(SimulatedFormApp(values={"name": "alice", "email": ""}))
    asked = _asked(form_file, history)
    messages = history.run(_request(asked))
    state, command = advance(asked, Turn(messages, 1.2))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert command.step == CLICK_NAME
    assert "ink columns changed" in command.problem
    assert state.progress.records[-1].waited_seconds == 0.0


def test_a_delay_between_actions_comes_before_the_check(form_file: CacheFile) -> None:
    # the step began (its turn asked for the screenshot): the delay comes again, as before
    history = History()
    asked = _asked(form_file, history, delay_time_between_action=0.3)
    messages = history.run(_request(asked))
    state, command = advance(asked, Turn(messages, 1.2))
    assert isinstance(state, Pausing)
    assert command == Sleep(0.3)


def test_past_the_last_step_the_end_comes(form_file: CacheFile) -> None:
    # constructed: a replay asks for a screenshot only before a step
    history = History()
    history.screenshot()
    pending = Pending("toolu_asked", None)
    off = AwaitingScreenshot(plan_of(form_file, end_state="off"), progress_at(4), pending)
    state, command = advance(off, Turn(history.messages, 1.2))
    assert isinstance(state, Over)
    assert command == Finished(None)
    history = History()
    history.answer(call("screenshot"), "no image here")
    watching = AwaitingScreenshot(plan_of(form_file), progress_at(4), pending)
    state, command = advance(watching, Turn(history.messages, 1.2))
    assert isinstance(state, Ending)
    assert command == Look(1.2)
