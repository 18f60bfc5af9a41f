"""Anchor: where a step's window is now, when it moved since the recording.

A step recorded with its window (``ToolUseBlockParam.window``: the top-level window under its
point) is looked for among the screen's windows now
(:func:`askcache.foundation.screen.windows.find_window`: same class, same title or else same size,
one candidate only). When it is found elsewhere, the step is checked on the screen as seen from
the window (:meth:`~askcache.replay.screens.Screen.moved`: what the window shows lies where
it was recorded), so the fingerprint, the area the step changed, its effect and the end state
are compared region for region with unchanged thresholds, and the step acts at its point
moved with the window (:func:`askcache.foundation.scaling.move_step_input`).

No window information (none recorded, a screen that cannot list windows, a listing that
fails), no such window or two candidates, a window that did not move, or a moved point that
leaves the screen or the window: no anchor, and the step is checked at its recorded point as
before.
"""

from __future__ import annotations

from askcache.foundation.actions import Action
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.screen.windows import WindowFrame, find_window
from askcache.replay.plan import Anchor, Plan
from askcache.replay.screens import Screen

__all__ = ["window_anchor", "window_found", "window_now"]


def _lookup(
    plan: Plan, step: ToolUseBlockParam, screen: Screen
) -> tuple[WindowFrame, WindowFrame] | None:
    """The step's recorded window and where it is now (recorded pixels), when found among
    the windows listed with the look."""
    recorded, listed = step.window, screen.windows
    if recorded is None or listed is None or plan.space is None:
        return None
    now = [frame.scaled(screen.image.size, plan.space) for frame in listed]
    found = find_window(recorded, now)
    return None if found is None else (recorded, found)


def window_found(plan: Plan, step: ToolUseBlockParam, screen: Screen) -> bool:
    """True when ``step``'s window is on ``screen`` (moved or not): its place is known, and
    no search may put the step elsewhere."""
    return _lookup(plan, step, screen) is not None


def window_now(plan: Plan, step: ToolUseBlockParam, screen: Screen) -> WindowFrame | None:
    """Where ``step``'s window is on ``screen`` (recorded pixels), when it is listed."""
    looked_up = _lookup(plan, step, screen)
    return None if looked_up is None else looked_up[1]


def window_anchor(
    plan: Plan, step: ToolUseBlockParam, action: Action | None, screen: Screen
) -> Anchor | None:
    """Where ``step``'s window is on ``screen``, when it moved (see the module docstring)."""
    looked_up = _lookup(plan, step, screen)
    if looked_up is None or plan.space is None:
        return None
    recorded, found = looked_up
    offset = (found.x - recorded.x, found.y - recorded.y)
    if offset == (0, 0):
        return None
    width, height = plan.space
    points = [] if action is None else [action.point, action.pointer_after]
    for point in (p for p in points if p is not None):
        moved = (point[0] + offset[0], point[1] + offset[1])
        if not (0 <= moved[0] < width and 0 <= moved[1] < height) or not found.contains(moved):
            return None
    return Anchor(offset, recorded, "window")
