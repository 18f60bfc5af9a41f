"""What the model is told when a replay hands the turn back: pure functions of the outcome."""

from __future__ import annotations

from collections.abc import Sequence

from askcache.foundation.actions import parse_action
from askcache.foundation.messages import ToolUseBlockParam
from askcache.replay.result import EndStateVerdict

__all__ = ["end_state_text", "finished_text", "hand_back_text"]


def _describe_step(steps: Sequence[ToolUseBlockParam], index: int) -> str:
    what = f"step {index} of {len(steps)}"
    if 0 <= index < len(steps):
        action = parse_action(steps[index])
        if action is not None:
            where = f" at {list(action.point)}" if action.point else ""
            what += f" ({action.name}{where})"
    return what


def _replayed(start: int, stop: int) -> str:
    if stop <= start:
        return "No step was replayed."
    if stop - 1 == start:
        return f"Step {start} was replayed."
    return f"Steps {start}-{stop - 1} were replayed."


def hand_back_text(
    *,
    name: str,
    steps: Sequence[ToolUseBlockParam],
    start: int,
    index: int,
    problem: str,
    executed: bool,
    goal: str,
    can_resume: bool,
    resume_tool: bool = True,
) -> str:
    """The message after a replay stopped at step ``index`` (``resume_tool``: the model is
    offered ``resume_cached_trajectory``, so the message may name it)."""
    fate = "was executed but did not work as recorded" if executed else "was NOT executed"
    done = _replayed(start, index + 1 if executed else index)
    ask = " (or call resume_cached_trajectory once the screen is back)" if resume_tool else ""
    resume = (
        " The replay takes over again by itself only after you have acted (clicked, typed, "
        "pressed a key or scrolled) and the screen passes both the check that failed and the "
        f"next step's check; it never takes over after a turn in which you say you stop{ask}."
        if can_resume
        else ""
    )
    return (
        f"Replay of cached trajectory {name!r} stopped at {_describe_step(steps, index)}: "
        f"{problem}. That step {fate}. {done} The screen may differ from when the trajectory "
        "was recorded: take a screenshot, look at the current state, and continue the task "
        f"yourself from here.{resume} The task: {goal}"
    )


def finished_text(*, name: str, start: int, total: int, verdict: EndStateVerdict | None) -> str:
    """The message when a replay ran its last step and the model is asked to check."""
    ran = (
        f"all {total} steps were executed"
        if start == 0
        else f"steps {start}-{total - 1} of {total} were executed (it started at step {start})"
    )
    text = f"The cached trajectory {name!r} finished: {ran}."
    if verdict is not None:
        text += " " + end_state_text(verdict)
    return text + " Check the screen and finish the task if anything is left."


def end_state_text(verdict: EndStateVerdict) -> str:
    """The end-state check in one sentence for the model."""
    if verdict.matched:
        return "The final screen matches the recording."
    return (
        f"But {verdict.describe()}: the task may not have ended as recorded. Confirm the result "
        "or fix it."
    )
