"""Check: whether a step may run on the screen. This is where a replay decides.

A step that acts on the screen runs only when its stored fingerprint (perceptual hashes of
the regions at its point, their tone, the whole element under it:
:func:`askcache.fingerprint.step.check_step_representation`) matches the screen, and the area
it changed when recorded looks as it did before the action then. A step that should be
checked but cannot be (no fingerprint stored, a hash that cannot be read, a screen whose
aspect ratio cannot be mapped) is refused: fail closed. When a step is refused, the first
step of a recorded variant at the same index may be checked instead.

A step whose window moved since the recording (:mod:`.anchor`) is checked on the screen as
seen from its window, with the same thresholds; the outcome carries the anchor, and the step
then acts where the window is.

The thresholds, and the switches that skip a check (``skip_visual_validation``,
``unchecked_steps``, ``check_effects``, ``wait_for_start_screen``), are read from the replay's
check policy (``plan.policy``, :class:`~askcache.replay.check_policy.CheckPolicy`), never from
the settings: the policy alone decides what loosens a check, and says so.
"""

from __future__ import annotations

from dataclasses import replace

from askcache.fingerprint.step import StepFingerprint, check_step_representation
from askcache.foundation.actions import (
    ACTING_ACTIONS,
    Action,
    action_anchors,
    action_name,
    parse_action,
)
from askcache.foundation.errors import InvalidHashError
from askcache.foundation.geometry import Point
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.scaling import same_aspect
from askcache.foundation.screen.elsewhere import check_before
from askcache.foundation.screen.thumbnails import Thumbnail, compare_tiles
from askcache.replay.anchor import window_anchor
from askcache.replay.element_check import TEXT_ROLES, with_element
from askcache.replay.plan import Anchor, Plan, other_scale
from askcache.replay.result import StepRecord
from askcache.replay.screens import Screen
from askcache.replay.step_view import StepView
from askcache.replay.verdicts import Checked, Refused

__all__ = [
    "START_SCREEN_TOLERANCE",
    "Checked",
    "Refused",
    "apart_from_window",
    "check",
    "check_ways",
    "needs_screen",
    "outside_window",
    "passes",
    "start_screen_tolerance",
    "unchecked",
]


def _point(action: Action | None) -> tuple[int, int] | None:
    return action.point if action is not None else None


def needs_screen(action: Action | None) -> bool:
    """True for a step that acts on the screen or names a point (which must be scaled)."""
    return action is not None and (action.name in ACTING_ACTIONS or action.point is not None)


def passes(outcome: Checked | Refused) -> bool:
    return isinstance(outcome, Checked) or outcome.final


def unchecked(index: int, step: ToolUseBlockParam, action: Action | None) -> StepRecord:
    """The record of step ``index``, which needs no check."""
    return StepRecord(
        step_index=index,
        action=action.name if action is not None else step.name,
        validated=False,
        note="does not act on the screen",
    )


def check_ways(
    plan: Plan,
    index: int,
    step: ToolUseBlockParam,
    action: Action | None,
    screen: Screen,
    *,
    redrawn_seen: bool = False,
) -> Checked | Refused:
    """Whether ``step`` (step ``index``) may run on ``screen``; when it may not, whether the
    first step of one of the variants at this index may (the first that does is taken).
    ``redrawn_seen``: an earlier step was allowed on a screen drawn otherwise
    (:func:`~askcache.replay.element_check.with_element`)."""
    outcome = check(plan, index, step, action, screen, redrawn_seen=redrawn_seen)
    if isinstance(outcome, Checked) or outcome.final:
        return outcome
    for number, variant in enumerate(plan.variants.get(index, ())):
        if not variant.steps:
            continue
        first = variant.steps[0]
        pointer = list(action_anchors([*plan.steps[:index], first]))[-1]
        checked = check(plan, index, first, parse_action(first), screen, pointer=(pointer,))
        if isinstance(checked, Checked) and checked.record.validated:
            return replace(checked, variant=number)
    return outcome


def check(
    plan: Plan,
    index: int,
    step: ToolUseBlockParam,
    action: Action | None,
    screen: Screen,
    *,
    pointer: tuple[Point | None] | None = None,
    keep_view: bool = True,
    anchor: Anchor | None = None,
    redrawn_seen: bool = False,
) -> Checked | Refused:
    """Whether ``step`` may run on ``screen`` (``pointer``: the pointer's position
    before it, when ``step`` is not the trajectory's step at this index; ``keep_view``:
    remember what it was checked on, for reports, when the settings keep step views).
    Where its window is now decides where it is checked (:mod:`.anchor`); ``anchor``: check
    it there instead (a match the search found, :mod:`.search`). A step recorded with its
    element is then checked by it too (:mod:`.element_check`)."""
    outcome = _check_here(
        plan, index, step, action, screen, pointer=pointer, keep_view=keep_view, anchor=anchor
    )
    if pointer is None and anchor is None:

        def pixels_at(at: Anchor) -> Checked | Refused:
            return _check_here(
                plan, index, step, action, screen, pointer=None, keep_view=keep_view, anchor=at
            )

        outcome = with_element(
            plan,
            index,
            step,
            action,
            screen,
            outcome=outcome,
            pixels_at=pixels_at,
            redrawn_seen=redrawn_seen,
        )
        if isinstance(outcome, Checked) and "look" in (outcome.record.decided_by or ""):
            return outcome  # drawn otherwise: the whole start screen cannot be compared
    elif pointer is None and isinstance(outcome, Checked):
        outcome = _with_text_element(plan, index, step, action, screen, outcome=outcome)
    if isinstance(outcome, Checked) and pointer is None and index == plan.start.step:
        return _check_start_screen(plan, step, outcome)
    return outcome


def _with_text_element(
    plan: Plan,
    index: int,
    step: ToolUseBlockParam,
    action: Action | None,
    screen: Screen,
    *,
    outcome: Checked,
) -> Checked:
    """``outcome``, a step whose pixels passed where the search found its region
    (``anchor``), with the text element an action there reaches, asked before the step runs:
    on a screen drawn otherwise its effect may be confirmed by it afterwards
    (:func:`~askcache.replay.effects.element_effect`). Only for a step recorded in a text
    element (one query); nothing is decided here."""
    stored = step.element
    tree = stored.tree if stored is not None else None
    point = None if action is None else action.point or plan.anchors[index]
    if (
        tree is None
        or tree.role not in TEXT_ROLES
        or point is None
        or outcome.anchor is None
        or screen.elements is None
        or not plan.policy.check_elements
    ):
        return outcome
    dx, dy = outcome.anchor.offset
    there = (point[0] + dx, point[1] + dy)
    return replace(outcome, element=screen.elements.at(there), element_point=there)


def _check_here(
    plan: Plan,
    index: int,
    step: ToolUseBlockParam,
    action: Action | None,
    screen: Screen,
    *,
    pointer: tuple[Point | None] | None,
    keep_view: bool,
    anchor: Anchor | None,
) -> Checked | Refused:
    """The pixels' verdict on ``step``: where its window is now, or at ``anchor``."""
    if anchor is None:
        anchor = window_anchor(plan, step, action, screen)
    if anchor is not None:
        outcome = _check(
            plan,
            index,
            step,
            action,
            screen.moved(anchor.offset),
            pointer=pointer,
            keep_view=keep_view,
            # an element moved inside its window: what it changes may have moved with it, or
            # stayed where the window shows it (a status line)
            unmoved=screen if anchor.how == "element" else None,
        )
        if not isinstance(outcome, Checked):
            return replace(outcome, problem=f"{outcome.problem} (checked {anchor.describe()})")
        record = outcome.record
        record.note = f"{record.note or 'checked'}; {anchor.describe()}"
        outcome = replace(outcome, variant=None, anchor=anchor)
    else:
        outcome = _check(plan, index, step, action, screen, pointer=pointer, keep_view=keep_view)
    return outcome


def _check(
    plan: Plan,
    index: int,
    step: ToolUseBlockParam,
    action: Action | None,
    screen: Screen,
    *,
    pointer: tuple[Point | None] | None,
    keep_view: bool,
    unmoved: Screen | None = None,
) -> Checked | Refused:
    record = StepRecord(
        step_index=index,
        action=action.name if action is not None else step.name,
        validated=False,
    )
    problem = _size_problem(plan, action, screen)
    if problem is not None:
        return Refused(record, problem, final=True, code="screen_size")
    acting = action is not None and action.name in ACTING_ACTIONS
    config = plan.file.metadata.visual_validation
    stored = StepFingerprint.of(step)
    policy = plan.policy
    if policy.skip_visual_validation:
        record.note = "visual validation skipped by settings"
        # whether a typed text reached the screen is still checked against it after the step
        return Checked(record, screen, screen.look(plan.config))
    if not acting:
        record.note = "does not act on the screen"
        return Checked(record, screen, None)
    if stored is None or config is None:
        record.note = "no fingerprint stored for this step"
        if policy.unchecked_steps == "run":
            return Checked(record, screen, None)
        return Refused(
            record,
            f"step {index} ({record.action}) acts on the screen but the cache file "
            "stores no fingerprint for it, so it cannot be checked "
            "(unchecked_steps='run' replays such steps unchecked)",
            final=True,
            code="unchecked_step",
        )
    other_density = _other_density(plan, screen)
    try:
        result = check_step_representation(
            screen.recorded,
            step,
            stored,
            config,
            threshold=policy.threshold,
            detail_threshold=policy.detail_threshold,
            pointer=plan.anchors[index] if pointer is None else pointer[0],
            other_density=other_density,
        )
    except InvalidHashError as exc:
        return Refused(
            record,
            f"the step's fingerprint cannot be checked: {exc}",
            final=True,
            other_density=other_density,
            code="unchecked_step",
        )
    record.validated, record.matched = True, result.matched
    record.distance, record.threshold = result.distance, result.threshold
    record.detail_distance = result.detail_distance
    record.detail_threshold = result.detail_threshold
    record.note = result.describe()
    box = result.box if keep_view else None
    view = None
    if box is not None and plan.settings.keep_step_views:
        view = StepView.of(screen.recorded, box, plan.anchors[index] or _point(action))
    if not result.matched:
        if box is not None and view is None and plan.keep_failure_views:
            view = StepView.of(screen.recorded, box, plan.anchors[index] or _point(action))
        return Refused(
            record,
            f"the screen around the action point no longer matches the recording ({record.note})",
            view=view,
            other_density=other_density,
            code="screen_changed",
        )
    outcome = _check_affected_area(plan, step, record, screen, unmoved, other_density=other_density)
    failed = isinstance(outcome, Refused)
    if box is not None and view is None and plan.keep_failure_views and failed:
        view = StepView.of(screen.recorded, box, plan.anchors[index] or _point(action))
    return replace(outcome, view=view, other_density=other_density)


START_SCREEN_TOLERANCE = 0.02
"""The share of the compared tiles (at least 2) that may differ from the recording's start
screen while the first step still runs: a button lit by the pointer left over it, a caret.
The start screen tells whether the application is *ready* (a half-drawn window differs in far
more); whether the step may act is decided by the step's own checks, which stay unchanged and
decide alone once the wait for the start screen is over."""


def start_screen_tolerance(compared: int) -> int:
    """How many of ``compared`` tiles may differ from the start screen (see
    :data:`START_SCREEN_TOLERANCE`)."""
    return max(2, int(compared * START_SCREEN_TOLERANCE))


def _check_start_screen(plan: Plan, step: ToolUseBlockParam, checked: Checked) -> Checked | Refused:
    """The trajectory's first acting step waits until the whole screen looks like the
    recording's before it (:attr:`~askcache.cachefile.format.CacheMetadata.start_state`):
    the step's own region may already match while the window is half drawn. A screen that
    differs is refused with the step's own outcome in :attr:`Refused.own_checks`: the
    caller waits for the start screen, and when it never comes, the step's own checks
    decide (another layout elsewhere in the window is no reason to hand back). When the step's
    window was recorded, only that window's frame is compared: what lies outside it (other
    windows, a desktop, a panel) differs harmlessly from machine to machine. Where the
    step's window moved (or the search found its region elsewhere), the screen is compared as
    seen from there, inside the window's frame and the part of the screen brought into view."""
    config, start = plan.config, plan.start.thumbnail
    if config is None or start is None or not plan.policy.wait_for_start_screen:
        return checked
    if checked.screen is None or not checked.record.validated:
        return checked
    now = checked.screen.thumbnail(config)
    anchor = checked.anchor
    skip = set(plan.start.skip) | outside_window(step, checked, start)
    differing = [i for i in now.differing_tiles(start) if i not in skip]
    compared = now.rows * now.columns - len(skip)
    if len(differing) <= start_screen_tolerance(compared):
        return checked
    boxes = [list(now.tile_box(i)) for i in differing[:3]]
    where = f" (checked {anchor.describe()})" if anchor is not None else ""
    return Refused(
        checked.record,
        "the screen does not look like the recording's screen before its first action: "
        f"{len(differing)} of {compared} tiles differ "
        f"(at {', '.join(map(str, boxes))}){where}",
        own_checks=checked,
        view=checked.view,
        other_density=checked.other_density,
        code="screen_changed",
    )


def _window_box(
    step: ToolUseBlockParam, checked: Checked, *, where_now: bool
) -> tuple[int, int, int, int] | None:
    """The box (``x``, ``y``, width, height) of the window ``step`` was checked in: where its
    window moved (or the search found its region), the window's frame and the part of the
    screen brought into view, as seen from there (the recording's coordinates,
    :meth:`~askcache.replay.screens.Screen.moved`) or, with ``where_now``, where it is on
    the screen as it is; else the step's recorded window; ``None`` when no window was
    recorded (the whole screen is the step's)."""
    if checked.anchor is not None and checked.screen is not None:
        x, y, width, height = checked.anchor.compared_box(checked.screen.recorded.size)
        dx, dy = checked.anchor.offset if where_now else (0, 0)
        return (x + dx, y + dy, width, height)
    if step.window is not None:
        frame = step.window
        return (frame.x, frame.y, frame.width, frame.height)
    return None


def outside_window(step: ToolUseBlockParam, checked: Checked, thumbnail: Thumbnail) -> set[int]:
    """The tiles of ``thumbnail``, the screen as seen from the step's window, that do not lie
    wholly inside that window (:func:`_window_box`); none when no window was recorded."""
    box = _window_box(step, checked, where_now=False)
    return set() if box is None else set(thumbnail.tiles_outside(box))


def apart_from_window(step: ToolUseBlockParam, checked: Checked, thumbnail: Thumbnail) -> set[int]:
    """The tiles of ``thumbnail``, a look at the screen as it is (not as seen from a moved
    window), that do not touch the window ``step`` was checked in, where that window is now:
    what changes there cannot concern the step. None when no window was recorded."""
    box = _window_box(step, checked, where_now=True)
    return set() if box is None else thumbnail.tiles_apart(box)


def _check_affected_area(
    plan: Plan,
    step: ToolUseBlockParam,
    record: StepRecord,
    screen: Screen,
    unmoved: Screen | None = None,
    *,
    other_density: bool = False,
) -> Checked | Refused:
    """The area the action changed when recorded must look as it did before it then: the
    tiles near its point, and for a key (on a screen of the recorded size) the places away
    from it (:func:`~askcache.foundation.screen.elsewhere.check_before`; ``other_density``:
    ``screen`` is drawn at another pixel density), each as seen from where the step's element
    moved or, given ``unmoved``, where the window shows it."""
    config = plan.config
    effect = step.effect
    if config is None or not plan.policy.check_effects:
        return Checked(record, screen, screen.look(plan.config))
    thumbnail = screen.thumbnail(config)
    if effect is None or not effect.tiles:
        return Checked(record, screen, thumbnail)
    try:
        comparison = compare_tiles(
            thumbnail, effect.tiles, effect.before, skip=effect.parameter_before
        )
    except ValueError as exc:
        return Refused(
            record,
            f"the step's recorded effect cannot be checked: {exc}",
            True,
            code="unchecked_step",
        )
    record.affected_tiles = comparison.compared
    if not comparison.matched:
        boxes = [list(thumbnail.tile_box(i)) for i in comparison.differing[:3]]
        record.matched = False
        return Refused(
            record,
            f"the area this action changed when recorded looks different now "
            f"({len(comparison.differing)} of {comparison.compared} tiles differ, "
            f"at {', '.join(map(str, boxes))}): something is already there, or the "
            "screen is in another state",
            code="area_changed",
        )
    if effect.elsewhere and _acts_at_focus(step) and screen.image.size == plan.space:
        also = unmoved.image if unmoved is not None else None
        problem = check_before(
            effect.elsewhere, screen.image, also=also, other_density=other_density
        )
        if problem is not None:
            record.matched = False
            return Refused(record, problem, code="area_changed")
    return Checked(record, screen, thumbnail)


def _acts_at_focus(step: ToolUseBlockParam) -> bool:
    """True when ``step`` presses a key: it acts where the keyboard focus is, which the
    regions at the pointer do not show; its places away from the point are the only sign of
    where that is (a click is checked where it lands)."""
    return action_name(step) == "key"


def _other_density(plan: Plan, screen: Screen) -> bool:
    """Whether ``screen`` is drawn at another pixel density than the recording: its
    screenshot was rescaled to the recorded size, or the display is of another size (by
    more than :data:`~askcache.replay.plan.OTHER_DENSITY_SCALE`: a screenshot a few pixels off is
    checked as at the recorded density)."""
    return plan.other_display or other_scale(screen.image.size, screen.recorded.size)


def _size_problem(plan: Plan, action: Action | None, screen: Screen) -> str | None:
    """Why the step's coordinates cannot be mapped onto the current screen, if so."""
    space = plan.space
    if space is None or action is None:
        return None
    size = screen.image.size
    if size == space or same_aspect(size, space):
        return None
    if action.point is None and action.pointer_after is None and not needs_screen(action):
        return None
    return (
        f"the screen is {size[0]}x{size[1]} but the trajectory was recorded at "
        f"{space[0]}x{space[1]}, another aspect ratio: its coordinates cannot be mapped "
        "onto this screen"
    )
