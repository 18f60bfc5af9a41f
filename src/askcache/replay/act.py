"""Act: emit a checked step as a tool call, its points scaled to the current screen.

The call carries none of the file's cache-only fields, a new id, and ``replayed=True`` (the
computer tool then skips its settle delay: the replay waits for the screen itself). A step
checked where its window moved (:mod:`.anchor`) acts at its point moved with the window. What the
step was checked on is kept as :class:`~askcache.replay.state.Pending` for :mod:`.verify`.
"""

from __future__ import annotations

import logging
from typing import Any

from askcache.actions import new_tool_use_id
from askcache.messages import ToolUseBlockParam
from askcache.replay.check import Checked
from askcache.replay.commands import Emit
from askcache.replay.state import Pending, ReplayState
from askcache.scaling import move_step_input, scale_step_input

__all__ = ["act"]

logger = logging.getLogger(__name__)


def act(state: ReplayState, step: ToolUseBlockParam, checked: Checked, waited: float) -> Emit:
    record = checked.record
    record.waited_seconds = waited
    state.result.steps.append(record)
    if record.validated:
        state.result.validated += 1
    else:
        state.result.unvalidated += 1
        logger.info("step %d (%s) not validated: %s", state.index, record.action, record.note)
    state.result.steps_run += 1
    call = step.model_copy(
        update={
            **dict.fromkeys(ToolUseBlockParam.cache_only_fields),  # the file's, not the call's
            "id": new_tool_use_id(),
            "replayed": True,
            "input": _fit(state, step.input, checked),
        }
    )
    same_size = checked.screen is not None and checked.screen.image.size == state.space
    if checked.screen is not None:
        state.last_anchor = checked.anchor
    if checked.anchor is not None:
        state.moved_seen = True
    state.pending = Pending(
        call.id,
        state.index,
        checked.thumbnail,
        before_image=checked.screen.image if same_size and checked.screen else None,
        started=state.step_started,
        anchor=checked.anchor,
    )
    state.emitted[call.id] = step
    state.seen.emitted(call.id, on_look=checked.screen is not None)
    return Emit(call)


def _fit(state: ReplayState, arguments: dict[str, Any], checked: Checked) -> dict[str, Any]:
    """The step's arguments with points moved with its window (when it moved) and scaled to
    the current screen's size."""
    space, screen = state.space, checked.screen
    if space is None or screen is None:
        return arguments
    if checked.anchor is not None:
        arguments = move_step_input(arguments, checked.anchor.offset, space)
    if screen.image.size == space:
        return arguments
    return scale_step_input(arguments, space, screen.image.size)
