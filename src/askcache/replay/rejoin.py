"""When a replay that handed back may take over again: the rules, and the look at the screen.

After a hand-back the replay is suspended. After each later model turn whose tools ran (and
when the model calls ``resume_cached_trajectory``) it considers taking over again at the step
it would resume at: the stopped step when that step did not run, the step after it when it
ran (a re-join never repeats a step, and never skips past one whose effect was wrong). It
re-joins only when all three conditions hold, checked in this order:

``model_acted`` (a)
    Since the hand-back the model itself has made at least one call of an action that acts
    on the application (:data:`~askcache.actions.ACTING_ACTIONS`: the click family, drags,
    ``left_mouse_down``/``up``, ``type``, ``key``, ``hold_key``, ``scroll``) that did not
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

from askcache.actions import ACTING_ACTIONS, parse_action
from askcache.messages import MessageParam, TextBlockParam

__all__ = [
    "RESUME_TOOL_NAME",
    "STOP_WORDS",
    "model_acted",
    "model_stops",
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
    (:data:`~askcache.actions.ACTING_ACTIONS`) whose result was not an error."""
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
