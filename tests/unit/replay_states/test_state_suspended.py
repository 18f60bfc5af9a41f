"""``Suspended``: handed back, the model has the turn; after each of its turns the replay is
asked whether it re-joins. ``Ask`` -> ``Suspended``, ``Rejoining``, ``Idle``.

Each decision taken or refused is a ``RejoinDecision`` in the progress; the conditions are
checked in order: the model acted, it goes on, the screen passes the resumed step's check
and the check that failed."""

from __future__ import annotations

from askcache.cachefile.format import CacheFile
from askcache.replay.commands import Ask, Decided, HandBack, Look, Turn
from askcache.replay.plan import Stopped
from askcache.replay.states import Idle, Rejoining, Suspended
from askcache.storage.ledger import RejoinDecision
from tests.unit.replay_states._build import (
    CLEAR_AT,
    CLICK_NAME,
    CLICK_SAVE,
    NAME_AT,
    TYPE_NAME,
    History,
    Late,
    advance,
    call,
    emitted,
    plan_of,
    progress_at,
    suspended,
)

ASK_AT = 3.0


def test_a_screen_fixed_by_the_model_lets_the_replay_re_join(form_file: CacheFile) -> None:
    state, history = suspended(form_file, can_look=False)
    messages = history.say("I clear the form first.", call("left_click", coordinate=CLEAR_AT))
    after, command = advance(state, Ask(messages, ASK_AT))
    assert isinstance(after, Idle)
    assert command == Decided(rejoined=True)
    assert after.progress.rejoin_decisions == (
        RejoinDecision(
            step_index=CLICK_NAME,
            failed_check="fingerprint",
            rejoined=True,
            refused_by=None,
            reason="step 1 passes its check and the check that failed passes",
            requested=False,
            after_message=len(messages),
        ),
    )
    assert (after.progress.rejoins, after.progress.first_step) == (1, True)
    assert after.progress.index == CLICK_NAME


def test_a_model_that_only_looked_has_not_acted(form_file: CacheFile) -> None:
    state, history = suspended(form_file, can_look=False)
    messages = history.say("Let me look.", call("screenshot"))
    after, command = advance(state, Ask(messages, ASK_AT))
    assert isinstance(after, Suspended)
    assert command == Decided(rejoined=False)
    (decision,) = after.progress.rejoin_decisions
    assert (decision.rejoined, decision.refused_by) == (False, "model_acted")
    assert decision.after_message == len(messages)
    assert after.stopped == state.stopped
    assert after.progress.rejoins == 0


def test_a_model_that_asks_to_resume_needs_no_action_but_the_screen_must_pass(
    form_file: CacheFile,
) -> None:
    state, history = suspended(form_file, can_look=False)
    messages = history.say("Resume, please.", call("screenshot"))
    after, command = advance(state, Ask(messages, ASK_AT, requested=True))
    assert isinstance(after, Suspended)
    assert command == Decided(rejoined=False)
    (decision,) = after.progress.rejoin_decisions
    assert (decision.refused_by, decision.requested) == ("screen", True)
    assert decision.reason.startswith(
        "on the latest screenshot, step 1 does not pass its check: the screen around the "
        "action point no longer matches the recording"
    )


def test_a_model_that_says_it_stops_does_not_go_on(form_file: CacheFile) -> None:
    state, history = suspended(form_file, can_look=False)
    history.say("I clear the form.", call("left_click", coordinate=CLEAR_AT))
    messages = history.say("The task is done.")
    after, command = advance(state, Ask(messages, ASK_AT))
    assert isinstance(after, Suspended)
    assert command == Decided(rejoined=False)
    (decision,) = after.progress.rejoin_decisions
    assert (decision.refused_by, decision.reason) == (
        "model_continues",
        "the model ended its turn",
    )


def test_a_step_that_does_not_act_cannot_show_the_screen_is_back(form_file: CacheFile) -> None:
    history = History()
    at_message = len(history.messages)
    messages = history.say("I click.", call("left_click", coordinate=CLEAR_AT))
    stopped = Stopped(0, "fingerprint", at_message)
    state = Suspended(plan_of(form_file, can_look=False), progress_at(0), stopped)
    after, command = advance(state, Ask(messages, ASK_AT))
    assert isinstance(after, Suspended)
    assert command == Decided(rejoined=False)
    (decision,) = after.progress.rejoin_decisions
    assert (decision.refused_by, decision.reason) == (
        "screen",
        "step 0 does not act on the screen: its check cannot show that the screen is back",
    )


def test_with_no_step_left_nothing_is_decided(form_file: CacheFile) -> None:
    # handed back at the end state: nothing to resume at, and no decision recorded
    history = History()
    messages = history.say("I click.", call("left_click", coordinate=CLEAR_AT))
    state = Suspended(plan_of(form_file), progress_at(4), Stopped(4, "end_state", 1))
    after, command = advance(state, Ask(messages, ASK_AT))
    assert after is state
    assert command == Decided(rejoined=False)
    assert after.progress.rejoin_decisions == ()


def test_a_latest_screenshot_that_is_no_image_refuses(form_file: CacheFile) -> None:
    state, history = suspended(form_file, can_look=False)
    history.say("I clear the form.", call("left_click", coordinate=CLEAR_AT))
    after, command = advance(state, Ask(history.corrupt_latest(), ASK_AT))
    assert isinstance(after, Suspended)
    assert command == Decided(rejoined=False)
    (decision,) = after.progress.rejoin_decisions
    assert decision.refused_by == "screen"
    assert decision.reason.startswith("the screen could not be read (")


def test_a_replay_that_cannot_look_needs_a_screenshot_after_the_models_action(
    form_file: CacheFile,
) -> None:
    state, history = suspended(form_file, can_look=False)
    messages = history.answer(call("left_click", coordinate=CLEAR_AT), "clicked")
    after, command = advance(state, Ask(messages, ASK_AT))
    assert isinstance(after, Suspended)
    assert command == Decided(rejoined=False)
    (decision,) = after.progress.rejoin_decisions
    assert (decision.refused_by, decision.reason) == (
        "screen",
        "no screenshot was taken after the model's last action",
    )


def test_a_replay_that_can_look_checks_the_screenshot_then_looks_for_the_settled_screen(
    form_file: CacheFile,
) -> None:
    state, history = suspended(form_file)
    messages = history.say("I clear the form first.", call("left_click", coordinate=CLEAR_AT))
    after, command = advance(state, Ask(messages, ASK_AT))
    assert isinstance(after, Rejoining)
    assert command == Look(ASK_AT)
    assert after.settling  # the latest screenshot passed
    assert after.progress.rejoin_decisions == ()  # not decided yet


def test_with_windows_listed_the_screenshot_waits_for_the_windows(form_file: CacheFile) -> None:
    state, history = suspended(form_file, lists_windows=True)
    messages = history.say("I clear the form first.", call("left_click", coordinate=CLEAR_AT))
    after, command = advance(state, Ask(messages, ASK_AT))
    assert isinstance(after, Rejoining)
    assert command == Look(ASK_AT, grab=False)
    assert not after.settling
    assert after.found is not None


def test_with_no_screenshot_since_the_models_action_a_replay_that_can_look_looks(
    form_file: CacheFile,
) -> None:
    state, history = suspended(form_file)
    history.app.values = {"name": "", "email": ""}
    messages = history.answer(call("left_click", coordinate=CLEAR_AT), "clicked")
    after, command = advance(state, Ask(messages, ASK_AT))
    assert isinstance(after, Rejoining)
    assert command == Look(ASK_AT)
    assert after.found is None


def test_a_step_whose_effect_failed_re_joins_once_its_effect_shows(form_file: CacheFile) -> None:
    # the typed text never appeared (handed back after the typing step, which ran); the
    # model clicks the field, and the text is drawn: the replay resumes at the Save click
    app = Late(focus="name")
    history = History(app)
    plan = plan_of(form_file, can_look=False)
    awaiting, emit = emitted(plan, TYPE_NAME, history, 1.0)
    state, command = awaiting.next(Turn(history.run(emit.call), 1.5))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert (state.stopped.check, state.progress.index) == ("effect", CLICK_SAVE)
    # the model clicks the field; the text is still not drawn
    messages = history.say("I click the field.", call("left_click", coordinate=NAME_AT))
    after, command = advance(state, Ask(messages, ASK_AT))
    assert isinstance(after, Suspended)
    (refused,) = after.progress.rejoin_decisions
    assert refused.refused_by == "screen"
    assert refused.reason.startswith("on the latest screenshot, the effect of step 2 still fails")
    # now it is drawn
    app.catch_up()
    messages = history.say("I click the field again.", call("left_click", coordinate=NAME_AT))
    rejoined, command = advance(after, Ask(messages, ASK_AT + 1))
    assert isinstance(rejoined, Idle)
    assert command == Decided(rejoined=True)
    decision = rejoined.progress.rejoin_decisions[-1]
    assert (decision.step_index, decision.failed_check, decision.reason) == (
        CLICK_SAVE,
        "effect",
        "step 3 passes its check and step 2's effect now shows",
    )
    assert len(rejoined.progress.rejoin_decisions) == 2
