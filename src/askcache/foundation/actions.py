"""What a tool_use means for the screen: its action, kind and point, in either tool shape.

Anthropic's computer tool comes in two shapes, and askcache reads both:

* the single ``computer`` tool (``computer_20250124`` / ``computer_20251124``): the block's
  ``name`` is ``"computer"`` and ``input["action"]`` names the action;
* the computer toolset (``computer_toolset_20260801``): the block's ``name`` *is* the action
  and ``toolset_name`` is ``"computer"``; ``input`` carries only the arguments.

The user's design speaks of validating "click" and "text_entry" steps: here that means the
click family and keyboard entry, in either shape. Which actions are validated is a setting
(:attr:`askcache.foundation.settings.CacheWritingSettings.validated_actions`), which accepts the
design's words ``click`` and ``text_entry`` as aliases (:data:`ACTION_ALIASES`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from askcache.foundation.geometry import Point
from askcache.foundation.messages import ToolUseBlockParam

__all__ = [
    "ACTING_ACTIONS",
    "ACTION_ALIASES",
    "CLICK_ACTIONS",
    "COMPUTER_TOOL_NAME",
    "DEFAULT_VALIDATED_ACTIONS",
    "KNOWN_ACTIONS",
    "OTHER_ACTIONS",
    "POINTER_ACTIONS",
    "POINT_CLICKS",
    "TEXT_ENTRY_ACTIONS",
    "Action",
    "ActionKind",
    "ToolShape",
    "action_anchors",
    "action_name",
    "as_point",
    "make_tool_use",
    "new_tool_use_id",
    "parse_action",
]

COMPUTER_TOOL_NAME = "computer"
"""Name of the single computer tool, and ``toolset_name`` of the computer toolset's members."""

POINT_CLICKS = frozenset(
    {"left_click", "right_click", "middle_click", "double_click", "triple_click"}
)
"""The clicks of one point: what is under the point is what they act on (not a drag, nor a
button held or let go alone)."""

CLICK_ACTIONS = POINT_CLICKS | frozenset({"left_click_drag", "left_mouse_down", "left_mouse_up"})
"""The click family: actions that press a mouse button."""

TEXT_ENTRY_ACTIONS = frozenset({"type", "key", "hold_key"})
"""Keyboard actions: they act wherever the focus is."""

POINTER_ACTIONS = frozenset({"mouse_move", "scroll"})
"""Actions that move the pointer or scroll without clicking."""

OTHER_ACTIONS = frozenset({"screenshot", "wait", "zoom", "cursor_position"})
"""Actions that do not change the screen through input."""

KNOWN_ACTIONS = CLICK_ACTIONS | TEXT_ENTRY_ACTIONS | POINTER_ACTIONS | OTHER_ACTIONS
"""Every computer-tool action askcache knows (computer_20250124, _20251124 and the toolset)."""

ACTING_ACTIONS = CLICK_ACTIONS | TEXT_ENTRY_ACTIONS | frozenset({"scroll"})
"""Actions that act on the application (click family, drags, typing, keys, scrolls): a replay
never runs one unchecked unless the user says so."""

DEFAULT_VALIDATED_ACTIONS = ACTING_ACTIONS
"""Actions whose screen region is hashed when recording and checked before replaying: every
acting action."""

ACTION_ALIASES: dict[str, frozenset[str]] = {
    "click": CLICK_ACTIONS,
    "text_entry": TEXT_ENTRY_ACTIONS,
}
"""The design's words for groups of actions, accepted in ``validated_actions``: ``click`` is
the click family, ``text_entry`` is keyboard input (``type``, ``key``, ``hold_key``). The
design's own ``{"click", "text_entry"}`` is the default without ``scroll``."""


ToolShape = Literal["tool", "toolset"]
"""``tool``: the single computer tool; ``toolset``: the computer toolset."""


class ActionKind(StrEnum):
    """What kind of input an action is."""

    CLICK = "click"
    """A mouse button press (the seed's ``click``)."""
    TEXT_ENTRY = "text_entry"
    """Keyboard input (the seed's ``text_entry``)."""
    POINTER = "pointer"
    """Pointer movement or scrolling."""
    OTHER = "other"
    """Screenshots, waits, zoom and anything unknown."""


@dataclass(frozen=True)
class Action:
    """A computer-tool call, read from a tool_use block of either shape."""

    name: str
    """The action, e.g. ``left_click`` or ``type``."""
    kind: ActionKind
    """Its kind."""
    shape: ToolShape
    """Which tool shape carried it."""
    point: Point | None
    """Where it acts (``coordinate``; a drag's ``start_coordinate``), if it says."""
    pointer_after: Point | None
    """Where the pointer is after it, if it moves the pointer."""

    @property
    def acts_at_pointer(self) -> bool:
        """True when the action happens wherever the pointer or focus already is."""
        return self.point is None and self.kind in (ActionKind.CLICK, ActionKind.TEXT_ENTRY)


def _kind_of(name: str) -> ActionKind:
    if name in CLICK_ACTIONS:
        return ActionKind.CLICK
    if name in TEXT_ENTRY_ACTIONS:
        return ActionKind.TEXT_ENTRY
    if name in POINTER_ACTIONS:
        return ActionKind.POINTER
    return ActionKind.OTHER


def as_point(value: Any) -> Point | None:
    """``(x, y)`` from a JSON ``[x, y]`` pair of numbers, or ``None`` if it is not one."""
    if (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        return (round(value[0]), round(value[1]))
    return None


def parse_action(block: ToolUseBlockParam) -> Action | None:
    """Read a tool_use block as a computer action, or ``None`` if it calls another tool."""
    if block.toolset_name == COMPUTER_TOOL_NAME:
        shape: ToolShape = "toolset"
        name = block.name
    elif block.name == COMPUTER_TOOL_NAME and block.toolset_name is None:
        shape = "tool"
        action = block.input.get("action")
        if not isinstance(action, str):
            return None
        name = action
    else:
        return None
    coordinate = as_point(block.input.get("coordinate"))
    if name == "left_click_drag":
        return Action(
            name, ActionKind.CLICK, shape, as_point(block.input.get("start_coordinate")), coordinate
        )
    moves_pointer = name in CLICK_ACTIONS or name in POINTER_ACTIONS
    return Action(name, _kind_of(name), shape, coordinate, coordinate if moves_pointer else None)


def action_name(block: ToolUseBlockParam) -> str | None:
    """The computer action ``block`` asks for (``key``, ``left_click``), or ``None`` if it
    calls another tool."""
    action = parse_action(block)
    return None if action is None else action.name


def action_anchors(steps: Iterable[ToolUseBlockParam]) -> Iterator[Point | None]:
    """Yield, for each step, the point its screen region is centred on (``None``: whole screen).

    A step with a coordinate is anchored there. A step that acts where the pointer already
    is (typing, a key press, a click without coordinate) is anchored at the pointer's last
    known position from the earlier steps: that is where the focused field usually is.
    Recording and replay both call this on the same trajectory, so they agree on regions.
    """
    pointer: Point | None = None
    for step in steps:
        action = parse_action(step)
        if action is None:
            yield None
            continue
        yield action.point if action.point is not None else pointer
        if action.pointer_after is not None:
            pointer = action.pointer_after


def new_tool_use_id() -> str:
    """A fresh id in the API's style, for a replayed or synthesized tool_use."""
    return f"toolu_ac{uuid.uuid4().hex[:22]}"


def make_tool_use(name: str, shape: ToolShape, **arguments: Any) -> ToolUseBlockParam:
    """Build a computer-tool call in the given shape, e.g. ``make_tool_use("screenshot", s)``."""
    if shape == "toolset":
        return ToolUseBlockParam(
            id=new_tool_use_id(), name=name, input=arguments, toolset_name=COMPUTER_TOOL_NAME
        )
    return ToolUseBlockParam(
        id=new_tool_use_id(), name=COMPUTER_TOOL_NAME, input={"action": name, **arguments}
    )
