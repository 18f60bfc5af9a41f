"""When a replay that handed back may take over again: the rules, and the look at the screen.

After a hand-back the replay is suspended. After each later model turn whose tools ran (and
when the model calls ``resume_cached_trajectory``) it considers taking over again at the step
it would resume at: the stopped step when that step did not run, the step after it when it
ran (a re-join never repeats a step, and never skips past one whose effect was wrong). It
re-joins only when all three conditions hold, checked in this order:

``model_acted`` (a)
    Since the hand-back the model itself has made at least one call of an action that acts
    on the application (:data:`~askcache.foundation.actions.ACTING_ACTIONS`: the click family,
    drags, ``left_mouse_down``/``up``, ``type``, ``key``, ``hold_key``, ``scroll``) that did not
    come back as an error, or it has asked to resume (``resume_cached_trajectory``).
    Observations are not progress: ``screenshot``, ``wait``, ``zoom``, ``cursor_position``
    and ``mouse_move`` (which only moves the pointer) do not count, nor do calls of other
    tools, nor the replay's own calls.
``model_continues`` (c)
    The model's latest message asked for tools (it did not end its turn) and says nothing of
    stopping (:data:`STOP_WORDS`; a false alarm only costs model calls, so the words are
    broad).
``screen`` (b)
    On the screen now (the latest screenshot, then the screen once settled) the step it would
    resume at passes its full check (fingerprint, the area it changes) *and* the check that
    failed at the hand-back no longer fails: the stopped step's own check when it did not
    run; its recorded effect when it ran (the tiles near its point and the places away from
    it look as recorded after it; a step whose effect cannot be checked never lets the
    replay re-join after it). After an end-state hand-back nothing is left to resume.

Every decision, taken or refused, is a
:class:`~askcache.storage.ledger.RejoinDecision` in
:attr:`~askcache.replay.ReplayResult.rejoin_decisions`, in the run ledger and in the reports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from PIL import Image

from askcache.fingerprint.step import decode_screenshot, find_recent_screenshot_block
from askcache.foundation.actions import ACTING_ACTIONS, OTHER_ACTIONS, parse_action
from askcache.foundation.messages import MessageParam, TextBlockParam
from askcache.replay.check import Refused, check
from askcache.replay.effects import checked_effect, draws_text, effect_problem, has_effect
from askcache.replay.plan import Plan, Stopped
from askcache.replay.screens import Screen
from askcache.storage.ledger import RejoinCondition

__all__ = [
    "RESUME_TOOL_NAME",
    "STOP_WORDS",
    "model_acted",
    "model_refusal",
    "model_stops",
    "rejoin_problem",
    "rejoined_reason",
    "screenshot_since_last_action",
    "step_refusal",
]

RESUME_TOOL_NAME = "resume_cached_trajectory"
"""The tool with which the model asks a suspended replay to take over again."""


STOP_WORDS = re.compile(
    r"\b(?:i|we|i'll|we'll|i'm|let me)\s+(?:will\s+|shall\s+|am going to\s+|must\s+|should\s+)?"
    r"(?:now\s+)?(?:stop|halt|end|quit|abort|give up)\b"
    r"|\b(?:stopping|halting|giving up|aborting)\b"
    r"|\bstop (?:here|now|the task|working)\b"
    r"|\b(?:will not|won't|cannot|can't|can not|do not|don't|should not|shouldn't)\s+"
    r"(?:continue|proceed|go on|go further)\b"
    r"|\b(?:task|work|job) is (?:done|complete|completed|finished|over)\b",
    re.IGNORECASE,
)
"""What counts as the model saying it stops, in its latest message's text: ``I stop here``,
``I'll stop``, ``stopping``, ``I won't continue``, ``the task is done`` and their kin."""


def model_acted(messages: Sequence[MessageParam], since: int) -> bool:
    """True when, in ``messages[since:]``, the model made a call of an acting computer action
    (:data:`~askcache.foundation.actions.ACTING_ACTIONS`) whose result was not an error."""
    failed = {
        result.tool_use_id
        for message in messages[since:]
        for result in message.tool_results
        if result.is_error
    }
    answered = {
        result.tool_use_id for message in messages[since:] for result in message.tool_results
    }
    for message in messages[since:]:
        if message.role != "assistant":
            continue
        for call in message.tool_uses:
            action = parse_action(call)
            if call.replayed or action is None or action.name not in ACTING_ACTIONS:
                continue
            if call.id in answered and call.id not in failed:
                return True
    return False


def model_stops(messages: Sequence[MessageParam], since: int) -> str | None:
    """Why the model's latest message in ``messages[since:]`` counts as stopping (``None``:
    it goes on): there is none, it asked for no tool (it ended its turn), or its text says it
    stops (:data:`STOP_WORDS`)."""
    latest = next((m for m in reversed(messages[since:]) if m.role == "assistant"), None)
    if latest is None:
        return "the model has not spoken since the hand-back"
    if not latest.tool_uses or latest.stop_reason == "end_turn":
        return "the model ended its turn"
    text = " ".join(b.text for b in latest.blocks if isinstance(b, TextBlockParam))
    found = STOP_WORDS.search(text)
    if found is not None:
        return f"the model said it stops ({found.group(0)!r})"
    return None


def screenshot_since_last_action(messages: list[MessageParam]) -> Image.Image | None:
    """The history's latest screenshot when nothing that may change the screen was called
    after it (only screenshots, waits, zooms, cursor queries and ``resume_cached_trajectory``
    may come after it), else ``None``."""
    found = find_recent_screenshot_block(messages)
    if found is None:
        return None
    for message in messages[found[0] + 1 :]:
        for call in message.tool_uses if message.role == "assistant" else []:
            action = parse_action(call)
            harmless = action is not None and action.name in OTHER_ACTIONS
            if not harmless and call.name != RESUME_TOOL_NAME:
                return None
    return decode_screenshot(found[1].source.data, f"message {found[0]}")


def model_refusal(
    messages: list[MessageParam], stopped: Stopped, requested: bool
) -> tuple[RejoinCondition, str] | None:
    """The first of the model's conditions (a, c) that does not hold and why; ``None``: both
    hold, the screen decides."""
    if not requested and not model_acted(messages, stopped.at_message):
        return "model_acted", (
            "the model has not acted since the hand-back (a screenshot, a wait, a zoom or "
            "a pointer move is not progress)"
        )
    stops = model_stops(messages, stopped.at_message)
    if stops is not None:
        return "model_continues", stops
    return None


def step_refusal(plan: Plan, index: int) -> str | None:
    """Why step ``index`` cannot show that the screen is back (``None``: it acts, its check
    can)."""
    action = parse_action(plan.steps[index])
    if action is None or action.name not in ACTING_ACTIONS:
        return (
            f"step {index} does not act on the screen: its check cannot show that "
            "the screen is back"
        )
    return None


def rejoined_reason(index: int, stopped: Stopped) -> str:
    """Why the replay re-joins at step ``index``, in words."""
    fixed = (
        f"step {stopped.step}'s effect now shows"
        if stopped.check == "effect"
        else "the check that failed passes"
    )
    return f"step {index} passes its check and {fixed}"


def rejoin_problem(
    plan: Plan,
    index: int,
    screen: Screen,
    stopped: Stopped,
    *,
    where: str,
) -> str | None:
    """Why ``screen`` does not let the replay resume at step ``index`` (condition b): the
    step does not pass its full check, or the check that failed still fails; ``None``: it
    may."""
    step = plan.steps[index]
    action = parse_action(step)
    checked = check(plan, index, step, action, screen, keep_view=False)
    if isinstance(checked, Refused):
        return f"on {where}, step {index} does not pass its check: {checked.problem}"
    if stopped.check != "effect":
        return None  # the failed check was this very step's (fingerprint)
    problem = _effect_now(plan, stopped, screen)
    if problem is not None:
        return f"on {where}, the effect of step {stopped.step} still fails: {problem}"
    return None


def _effect_now(plan: Plan, stopped: Stopped, screen: Screen) -> str | None:
    """Why the stopped step's recorded effect does not show on ``screen`` (``None``: it
    does). An effect that cannot be checked counts as not showing (fail closed)."""
    step = plan.steps[stopped.step]
    effect = checked_effect(plan.policy, step)
    config = plan.config
    ran = stopped.ran
    if effect is None or config is None or ran is None or ran.before is None:
        return "its effect cannot be checked (none recorded, or no screen before it)"
    if not has_effect(effect, ran.before_image):
        return "it has no recorded effect to check"
    if ran.anchor is not None:
        screen = screen.moved(ran.anchor.offset)
    try:
        return effect_problem(
            effect, config, ran.before, ran.before_image, screen, typed=draws_text(step)
        )
    except ValueError as exc:
        return f"its recorded effect cannot be checked: {exc}"
