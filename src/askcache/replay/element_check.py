"""Element checks: the element under the point, beside its pixels.

A step recorded with its element (``ToolUseBlockParam.element``,
:class:`~askcache.foundation.screen.elements.StepElement`) is checked by it too, after its
pixels (:func:`~askcache.replay.check.check`):

- **pixels pass**: the element the action would reach now must have the recorded identity
  (role, name, states, ancestors below its window: :meth:`Element.identity
  <askcache.foundation.screen.elements.Element.identity>`; for an unnamed element recorded
  with the names of what labels it, ``labelled_by``, not other names now), and its label must
  not read otherwise by OCR. Either differing refuses the step: a relabel is caught at any
  margin of the hashes. The tree saying nothing, or an unreadable label, is no evidence either way.
  Where the tree confirmed an element with a name, the name already says the label's words
  and the label is not read; a label whose picture is the recorded one (the same digest) reads
  as recorded without running the OCR (both keep the check within a few milliseconds a step).
- **pixels fail** (not for good: another density, theme or font size draws the step's region
  otherwise): the elements like the recorded one are asked for in its window. Exactly one
  with the recorded identity (and, when recorded, labelled by the same names: a form's two
  unnamed fields are told apart by their labels; one whose labels the tree does not say now
  is not counted), which an action at its place would reach, whose label does not read
  otherwise (for a named element, a reading that holds its name as the recorded one did
  agrees: a menu item's shortcut beside it is read otherwise in another theme or font):

  - at the recorded place in its window (the window's share of it, so another density
    counts as the same place; by its top-left corner or its centre, so a button a bigger
    font widened about its centre is still there): it acts there when its look passes
    (:mod:`askcache.fingerprint.element_look`, ``element_look_threshold``), on the first
    sight of a re-drawn screen, with no model call;
  - elsewhere in its window and drawn at another size (both its width and height grown, or
    both shrunk, by about one factor: a bigger font re-laid the window out): as at its
    recorded place, it acts at its new place when its look passes there;
  - elsewhere in its window at its recorded size (a reordered list, a rearranged toolbar, a
    taller banner): the full pixel check runs at its new place, and decides.

  In a text element, the action must reach the recorded character: the toolkit's character
  offset at the place found is the recorded one (where the toolkit gives offsets: GTK), or the
  screen is of another density (the same text scaled: Qt gives no offsets). Where no offset
  at the point says it, the caret does (:data:`Element.caret_offset
  <askcache.foundation.screen.elements.Element.caret_offset>`, which Qt and Chromium give
  for the element with the keyboard focus), in a replay with no parameter values (a value of
  another length moves every offset after it):

  - a key or a typed text acts at the caret, not at the pointer's character: the element at
    the pointer must have the keyboard focus and its caret at the recorded offset (checked
    whether its pixels pass or fail: where they pass, a caret elsewhere refuses the step);
  - a single left click into an editable text only moves the caret. Where the toolkit gives
    no offset at the point, on a screen drawn otherwise (the same element found by its
    identity, at its place, its look passing), the click may run when the trajectory's next
    acting step is a key or a typed text into the same element with its caret recorded:
    that step then runs only with the caret where the recording's click put it, and a click
    that put it on another character hands back before anything is typed.

  On a screen drawn otherwise, both also need the text to hold as many characters as
  recorded (:data:`Element.character_count
  <askcache.foundation.screen.elements.Element.character_count>`): another theme or font
  leaves the text as it was; a line more or a field already filled is another screen, and
  the pixels' verdict stands.

  Without a tree for the element (Tk, X Athena programs; an open menu whose toolkit does not
  describe it: GTK's is described, :mod:`askcache.tools.atspi`; Qt's is not), the label's text
  stands in for it on a screen of another density, at its recorded place (a label is not
  searched for elsewhere), and for a click on a screen this replay already found drawn
  otherwise (an earlier step allowed by its element's identity and look: another theme or
  font), where the label's box must also lie where it was recorded. Otherwise, at the same
  density a failing pixel check is trusted: a typing step whose field lost the keyboard focus
  to a dialog elsewhere still shows its label (the fault table caught one such step typed when
  this was allowed; for the same reason, on a screen found drawn otherwise only a click is
  allowed by its label). The label under the point must read as recorded *and* the look of
  its box must pass. Where such a click's label is not at its recorded place (an open menu
  laid out with taller items), it is looked for down its window's column
  (:func:`label_elsewhere`): exactly one line reading as the recorded label, its look passing,
  no unreadable line looking as much like it, and the click at the same share of that label's
  box as recorded, where the label read is that line. OCR alone never allows a step. A
  container (a panel, a list, a document, a page tab list: :data:`CONTAINER_ROLES`) never
  allows a step on a re-drawn screen: where in it an action lands depends on what it shows.

  A step with no point of its own (typing, a key) is checked by the element at the pointer
  (where the focused field usually is), as its pixels are.

Anything else (the tree missing, slow or raising; no element, or two, of the identity;
a label that cannot be read where it alone would decide) leaves the pixels' verdict as it is:
fail closed. What decided is in :attr:`StepRecord.decided_by
<askcache.replay.result.StepRecord.decided_by>`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from PIL import Image

from askcache.fingerprint.element_look import element_look, look_distance
from askcache.fingerprint.label_column import column_lines
from askcache.fingerprint.label_reader import (
    LabelReading,
    normalise_label,
    read_label,
    same_label,
)
from askcache.foundation.actions import (
    ACTING_ACTIONS,
    POINT_CLICKS,
    Action,
    action_name,
    parse_action,
)
from askcache.foundation.errors import InvalidHashError
from askcache.foundation.geometry import Point
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.parameters import substitute
from askcache.foundation.screen.elements import Element, StepElement
from askcache.foundation.screen.windows import WindowFrame
from askcache.replay.anchor import window_now
from askcache.replay.plan import Anchor, Plan
from askcache.replay.screens import Screen
from askcache.replay.verdicts import Checked, Refused

__all__ = [
    "CONTAINER_ROLES",
    "LABEL_TWIN_MARGIN",
    "PLACE_TOLERANCE",
    "RELAID_AGREEMENT",
    "RELAID_CHANGE",
    "TEXT_ROLES",
    "PixelsAt",
    "label_elsewhere",
    "with_element",
]

PixelsAt = Callable[[Anchor], Checked | Refused]
"""Runs a step's full pixel check as seen from an anchor (given by the caller:
:func:`askcache.replay.check.check`)."""

TEXT_ROLES = frozenset({"text", "entry", "password text", "document text", "paragraph", "terminal"})
"""Roles whose place under the point is a character: a re-drawn screen (another font size)
may put another character there."""

CONTAINER_ROLES = frozenset(
    {
        "application",
        "canvas",
        "document frame",
        "document web",
        "filler",
        "frame",
        "layered pane",
        "list",
        "page tab list",
        "panel",
        "root pane",
        "scroll pane",
        "section",
        "split pane",
        "table",
        "tree",
        "tree table",
        "viewport",
        "window",
    }
)
"""Roles that hold other things: where in them an action lands depends on what they show, not
on what they are, so their identity never allows a step on a re-drawn screen (it still
refuses one whose pixels pass)."""

RELAID_CHANGE = 0.1
"""How much (a share of its recorded size) an element's width and height must both have
grown, or both shrunk, for it to count as drawn at another size (:func:`_resized`): a font
size one step up (16 to 20 pixels) is 0.25; a pixel or two of rounding is not."""

RELAID_AGREEMENT = 0.25
"""How far apart (a share) the growth of an element's width and of its height may be and still
be one re-drawing at another size (text's line height and its advance do not grow exactly alike)."""

PLACE_TOLERANCE = 0.03
"""How far (a share of its window's width and height, at least 6 recorded pixels) an element
may lie from its recorded place in its window and still count as *at* it (re-drawn, not moved)."""


def _filled(plan: Plan, stored: StepElement) -> StepElement:
    """``stored`` with the replay's parameter values in its names and label."""
    if not plan.values:
        return stored
    tree = stored.tree
    if tree is not None and tree.name:
        tree = tree.model_copy(update={"name": substitute(tree.name, plan.values)})
    if tree is not None and tree.labelled_by:
        labels = substitute(tree.labelled_by, plan.values)
        tree = tree.model_copy(update={"labelled_by": labels})
    label = substitute(stored.label, plan.values) if stored.label else stored.label
    return stored.model_copy(update={"tree": tree, "label": label})


def with_element(
    plan: Plan,
    index: int,
    step: ToolUseBlockParam,
    action: Action | None,
    screen: Screen,
    *,
    outcome: Checked | Refused,
    pixels_at: PixelsAt,
    redrawn_seen: bool = False,
) -> Checked | Refused:
    """``outcome``, the pixels' verdict on ``step``, with the element's say (see the module
    docstring). ``pixels_at``: runs the full pixel check as seen from an anchor;
    ``redrawn_seen``: an earlier step of this replay was allowed by its element's identity and
    look, on a screen drawn otherwise."""
    stored = step.element
    point = None if action is None else action.point or plan.anchors[index]
    if stored is None or point is None or not plan.policy.check_elements:
        return outcome
    stored = _filled(plan, stored)
    if isinstance(outcome, Checked):
        if not outcome.record.validated:
            return outcome
        return _confirm(stored, point, screen, outcome, at_caret=_at_caret(plan, step, stored))
    if outcome.final or outcome.own_checks is not None:
        return outcome
    case = _Case(plan, index, step, stored, point, screen, pixels_at, redrawn_seen)
    found = _redrawn(case, outcome)
    return outcome if found is None else found


@dataclass(frozen=True)
class _Case:
    """One step whose pixels failed, and what its element check works with."""

    plan: Plan
    index: int
    step: ToolUseBlockParam
    stored: StepElement
    point: Point
    screen: Screen
    pixels_at: PixelsAt
    redrawn_seen: bool = False
    """An earlier step of the replay was allowed by its element's identity and look."""


def _read(
    screen: Screen, point: Point, box: tuple[int, int, int, int] | None, stored: StepElement
) -> LabelReading | None:
    """The label at ``point`` now (not read again when its picture is the recorded one)."""
    recorded = None
    if stored.label is not None and stored.label_digest is not None:
        recorded = (stored.label, stored.label_digest)
    return read_label(screen.recorded, point, box, recorded=recorded)


def _confirm(
    stored: StepElement, point: Point, screen: Screen, outcome: Checked, *, at_caret: bool
) -> Checked | Refused:
    """Pixels passed: the element and its label must not say otherwise; ``at_caret``: the step
    acts at the recorded caret (:func:`_at_caret`), which must be where it was."""
    record = outcome.record
    if outcome.anchor is not None:
        point = (point[0] + outcome.anchor.offset[0], point[1] + outcome.anchor.offset[1])
    decided = ["pixels"]
    now: Element | None = None
    if stored.tree is not None and screen.elements is not None:
        now = screen.elements.at(point)
        if now is not None:
            if now.identity() != stored.tree.identity() or stored.tree.other_labels(now):
                record.decided_by = "element"
                return Refused(
                    record,
                    f"the element at the action point is now {now.describe()}, "
                    f"recorded {stored.tree.describe()}: the pixels pass, but it is "
                    "another control or in another state",
                    view=outcome.view,
                    other_density=outcome.other_density,
                    code="element_changed",
                )
            if at_caret and stored.tree.caret_offset != now.caret_offset:
                record.decided_by = "element"
                return Refused(
                    record,
                    f"{_caret_words(now, stored.tree)}: the pixels pass, but a key acts where "
                    "the caret is",
                    view=outcome.view,
                    other_density=outcome.other_density,
                    code="element_changed",
                )
            decided.append("element")
    if stored.label is not None and (now is None or not now.name):
        # a named element the tree confirmed already says its label's words
        reading = _read(screen, point, now.box if now is not None else None, stored)
        if reading is not None:
            if not same_label(stored.label, reading.text):
                record.decided_by = "label"
                return Refused(
                    record,
                    f"the label at the action point now reads {reading.text!r}, recorded "
                    f"{stored.label!r}: the pixels pass, but it is another control",
                    view=outcome.view,
                    other_density=outcome.other_density,
                    code="label_changed",
                )
            decided.append("label")
    record.decided_by = "+".join(decided)
    if now is None:
        return outcome
    return replace(outcome, element=now, element_point=point)


def _redrawn(case: _Case, outcome: Refused) -> Checked | Refused | None:
    """Pixels failed: the same element, drawn otherwise or moved in its window (``None``: the
    element gives no word, and the pixels' verdict stands; the step's note says why)."""
    tree = case.stored.tree
    found: Checked | Refused | str
    if tree is not None and case.screen.elements is not None:
        found = _by_identity(case, tree, outcome)
    elif case.stored.label is not None and outcome.other_density:
        found = _by_label(case.plan, case.stored, case.point, case.screen, outcome)
    elif case.stored.label is not None and case.redrawn_seen and _clicks(case.step):
        found = _by_label(case.plan, case.stored, case.point, case.screen, outcome, in_place=True)
        if isinstance(found, str):
            elsewhere = _by_label_elsewhere(case, outcome)
            found = f"{found}; {elsewhere}" if isinstance(elsewhere, str) else elsewhere
    else:
        return None
    if isinstance(found, str):
        if outcome.record is not None:
            outcome.record.note = f"{outcome.record.note or ''}; element: {found}: pixels decide"
        return None
    return found


def _by_identity(case: _Case, tree: Element, outcome: Refused) -> Checked | Refused | str:
    """The element with the recorded identity, found in its window (see the module
    docstring); a string says why it gives no word."""
    plan, step, stored, point, screen = case.plan, case.step, case.stored, case.point, case.screen
    elements = screen.elements
    assert elements is not None
    # what no search can change is said before searching (a search costs a round trip per
    # level of the window's tree)
    if tree.role in CONTAINER_ROLES:
        return f"{tree.describe()} holds other things (a container)"
    at_caret = _at_caret(plan, step, stored)
    then_caret = not at_caret and _caret_follows(plan, case.index, step, tree)
    if not (at_caret or then_caret) and not _same_character(
        tree, tree, other_density=outcome.other_density
    ):
        return "its place holds characters and the toolkit gives no offsets"
    frame = window_now(plan, step, screen)
    window_point = (
        (frame.x + frame.width // 2, frame.y + frame.height // 2) if frame is not None else point
    )
    listed = elements.like(tree, window_point)
    if listed is None:
        return "the tree could not be searched"
    same = [e for e in listed if tree.same_element(e)]
    record = outcome.record
    if len(same) != 1:
        return f"{len(same)} elements like {tree.describe()} in its window"
    found = same[0]
    if found.role in CONTAINER_ROLES:
        return f"{found.describe()} holds other things (a container)"
    target = _place(tree, found, point)
    reached = elements.at(target)
    if reached is None or not tree.same_element(reached):
        # something else (a dialog, a popup) is over it
        return "an action at its place reaches " + (
            "nothing the tree describes" if reached is None else reached.describe()
        )
    if (at_caret or then_caret) and reached.character_count != tree.character_count:
        # another text (a line more, a field already filled), not the same one drawn otherwise
        return f"it holds {reached.character_count} characters, recorded {tree.character_count}"
    if at_caret:
        if reached.caret_offset != tree.caret_offset:
            return _caret_words(reached, tree)
    elif not then_caret and not _same_character(tree, reached, other_density=outcome.other_density):
        return f"another character is at its place (offset {reached.text_offset})"
    if stored.label is not None:
        reading = _read(screen, target, found.box, stored)
        if reading is not None and not _label_agrees(stored.label, reading.text, found.name):
            if record is not None:
                record.decided_by = "label"
            return Refused(
                record,
                f"the label of {found.describe()} now reads {reading.text!r}, "
                f"recorded {stored.label!r}",
                view=outcome.view,
                other_density=outcome.other_density,
                code="label_changed",
            )
    offset = (target[0] - point[0], target[1] - point[1])
    anchor = None if offset == (0, 0) else Anchor(offset, None, "element")
    relaid = None
    if not _same_place(tree, found):
        if anchor is None:
            return "it is elsewhere in its window, at the same place on the screen"
        relaid = _resized(tree, found)
        if relaid is None:
            moved = case.pixels_at(anchor)
            if isinstance(moved, Checked):
                moved.record.decided_by = "element+pixels"
                moved.record.note = f"{moved.record.note or 'checked'}; {found.describe()} moved"
                return replace(moved, element=reached, element_point=target)
            return "it moved in its window, and the pixels at its new place differ"
    look = _look_passes(plan, stored, screen, found.box)
    if isinstance(look, str):
        return look
    if record is None:
        return "no record"
    words = f"{found.describe()} found by its identity, the only one in its window"
    if at_caret:
        words += f", its caret at the recorded offset {tree.caret_offset}"
    elif then_caret and not _same_character(tree, reached, other_density=outcome.other_density):
        words += "; where the click puts the caret, the next step checks"
    if relaid is not None:
        words += f", drawn {relaid:.2f} times its recorded size at its new place (re-laid out)"
    return replace(
        _allowed(
            plan, screen, outcome, "element+look", f"{words}; its look {look:.2f}", anchor=anchor
        ),
        element=reached,
        element_point=target,
    )


def _label_agrees(recorded: str, now: str, name: str | None) -> bool:
    """Whether the label read now (``now``) says what the recorded reading said: the same
    label, or, for an element the tree names ``name``, both readings holding the name as
    whole words, whatever their case (a menu item's row also shows its shortcut, which OCR
    reads otherwise in another theme or font: ``Save Ctrl+S``, ``Save ctrl+S``; a dark
    theme's ``Save`` read ``save``; a visible text that is not the name, a relabel behind an
    unchanged name, still refuses)."""
    if same_label(recorded, now):
        return True
    if not name:
        return False
    # the tree's name is the same as recorded: OCR telling ``Save`` from ``save`` in a dark
    # theme is not evidence of another label (case is ignored here only)
    words = f" {normalise_label(name).casefold()} "
    return (
        words in f" {normalise_label(recorded).casefold()} "
        and words in f" {normalise_label(now).casefold()} "
    )


def _by_label(
    plan: Plan,
    stored: StepElement,
    point: Point,
    screen: Screen,
    outcome: Refused,
    *,
    in_place: bool = False,
) -> Checked | str:
    """No tree for the element, another density: the label under the point reading as
    recorded and its look passing allow the step at its point (a string says why not).
    ``in_place``: the label must also lie where it lay when recorded (a screen drawn otherwise
    at the same density, whose layout may have moved: a label read beside the point, not
    under it, is another place of the menu)."""
    record = outcome.record
    if record is None or stored.label is None:
        return "no label recorded"
    reading = _read(screen, point, None, stored)
    if reading is None:
        return "the label cannot be read"
    if not same_label(stored.label, reading.text):
        return f"the label reads {reading.text!r}"
    if in_place and not _label_in_place(stored.label_box, reading.box):
        return f"its label lies at {reading.box}, recorded at {stored.label_box}"
    look = _look_passes(plan, stored, screen, reading.box)
    if isinstance(look, str):
        return look
    words = f"its label reads {reading.text!r} as recorded, its look {look:.2f}"
    return _allowed(plan, screen, outcome, "label+look", words, anchor=None)


def _by_label_elsewhere(case: _Case, outcome: Refused) -> Checked | str:
    """A click with no tree for its element, on a screen this replay found drawn otherwise,
    whose label is not at its recorded place: the recorded label found once, elsewhere in the
    step's window now (an open menu laid out with taller items), its look passing there; it
    acts at the same share of the label's box as recorded (a string says why not; see the
    module docstring and :func:`label_elsewhere`)."""
    plan, step, point, screen = case.plan, case.step, case.point, case.screen
    if outcome.record is None:
        return "no record"
    if step.window is None:
        return "no window recorded"
    frame = window_now(plan, step, screen)
    if frame is None:
        return "its window is not found now"
    threshold = plan.policy.element_look_threshold
    found = label_elsewhere(
        screen.recorded, case.stored, point, step.window, frame, threshold=threshold
    )
    if isinstance(found, str):
        return found
    target, words = found
    offset = (target[0] - point[0], target[1] - point[1])
    anchor = None if offset == (0, 0) else Anchor(offset, None, "element")
    return _allowed(plan, screen, outcome, "label+look", words, anchor=anchor)


def label_elsewhere(
    image: Image.Image,
    stored: StepElement,
    point: Point,
    then: WindowFrame,
    now: WindowFrame,
    *,
    threshold: float,
) -> tuple[Point, str] | str:
    """Where to click, on ``image`` (recorded pixels), a label recorded at ``point`` in the
    window ``then`` and not found at its recorded place, now that the window is at ``now``;
    with the words that say why (a string alone: why not). ``threshold``: the look's
    (``element_look_threshold``). All of these must hold:

    - the recorded point lay on the recorded label's box;
    - down the window's column where the label began (as far from the window's left edge as
      recorded), exactly one line of text reads as the recorded label (whole: "Save As" is
      not "Save"), inside the window now;
    - the look of that line's box passes (:data:`element_look_threshold
      <askcache.replay.check_policy.CheckPolicy.element_look_threshold>`), and no line the
      engine could not read looks as much like it (:data:`LABEL_TWIN_MARGIN`);
    - the point at the same share of that box as the recorded point was of the recorded box
      is on that very label: the label cut out and read there is the line found (a separator
      or the gap between two items has no glyphs of its own)."""
    label, box = stored.label, stored.label_box
    if label is None or box is None or stored.look is None:
        return "no label, box or look recorded"
    if not (box[0] <= point[0] < box[0] + box[2] and box[1] <= point[1] < box[1] + box[3]):
        return "the recorded point was not on its label"
    region = (now.x, now.y, now.width, now.height)
    column = now.x + (box[0] - then.x) + max(1, box[3] // 2)
    heights = (max(4, box[3] // 2), 2 * box[3])
    lines = column_lines(image, region, column, heights=heights)
    same = [line for line in lines if line.reading and same_label(label, line.reading.text)]
    if len(same) != 1:
        return f"{len(same)} lines read {label!r} down its window's column"
    found = same[0].box
    look = _look_at(stored.look, image, found)
    if look is None or look > threshold:
        shown = "no look" if look is None else f"its look {look:.2f} > {threshold:.2f}"
        return f"{label!r} found at {found}: {shown}"
    # an unreadable line that looks as much like the label could be a second one: fail closed
    unread = [line.box for line in lines if line.reading is None]
    near = look + LABEL_TWIN_MARGIN
    twins = [b for b in unread if _within(_look_at(stored.look, image, b), near)]
    if twins:
        return f"{label!r} found at {found}, and unreadable lines look like it at {twins}"
    target = (
        found[0] + (point[0] - box[0]) * found[2] // box[2],
        found[1] + (point[1] - box[1]) * found[3] // box[3],
    )
    recorded = (label, stored.label_digest) if stored.label_digest is not None else None
    under = read_label(image, target, recorded=recorded)
    if under is None or under.box != found or not same_label(label, under.text):
        return f"{label!r} found at {found}, but not read under its place {target}"
    words = (
        f"its label reads {label!r} as recorded, found once in its window at {found} "
        f"(recorded at {tuple(box)}), its look {look:.2f}"
    )
    return target, words


def _within(distance: float | None, most: float) -> bool:
    """Whether a look ``distance`` (``None``: no look) is at most ``most``."""
    return distance is not None and distance <= most


def _look_at(look: str, image: Image.Image, box: tuple[int, int, int, int]) -> float | None:
    """The distance of the look of ``box`` on ``image`` from ``look`` (``None``: no look
    there, or the recorded one unreadable)."""
    now = element_look(image, box)
    if now is None:
        return None
    try:
        return look_distance(look, now)
    except InvalidHashError:
        return None


LABEL_TWIN_MARGIN = 0.1
"""How much farther from the recorded look than the label found elsewhere (look distances,
:func:`~askcache.fingerprint.element_look.look_distance`) an unreadable line of the same window
must look for it not to count as a second copy of the label (FeatherPad's menu, Qt's Windows
style: "Save" found at 0.02, the unreadable "New" beside its icon at 0.28)."""


def _allowed(
    plan: Plan, screen: Screen, outcome: Refused, decided: str, words: str, *, anchor: Anchor | None
) -> Checked:
    """The step whose pixels failed (``outcome``), allowed on a re-drawn screen by
    ``decided``: its record says so, and the screen's thumbnail is what its effect is watched
    against."""
    record = outcome.record
    assert record is not None
    record.matched = True
    record.decided_by = decided
    record.note = f"{words} vs {plan.policy.element_look_threshold:.2f} (pixels: {record.note})"
    return Checked(
        record,
        screen,
        screen.look(plan.config),
        anchor=anchor,
        view=outcome.view,
        other_density=outcome.other_density,
    )


def _look_passes(
    plan: Plan, stored: StepElement, screen: Screen, box: tuple[int, int, int, int] | None
) -> float | str:
    """The look's distance at ``box`` now, when it passes (a string: why not: no look stored
    or measurable, or too far)."""
    if stored.look is None or box is None:
        return "no look recorded"
    now = element_look(screen.recorded, box)
    if now is None:
        return "its box shows nothing"
    try:
        distance = look_distance(stored.look, now)
    except InvalidHashError as exc:
        return f"its recorded look cannot be read ({exc})"
    threshold = plan.policy.element_look_threshold
    if distance > threshold:
        return f"its look {distance:.2f} > {threshold:.2f}"
    return distance


LABEL_PLACE_TOLERANCE = 0.25
"""How far (a share of its recorded width and height, at least 4 pixels) a label's box may lie
from its recorded place, at the same density, and still be read as the label under the point
(a theme's bolder font: a pixel or two; a menu laid out with taller items: its height)."""


def _label_in_place(
    recorded: tuple[int, int, int, int] | None, now: tuple[int, int, int, int]
) -> bool:
    """Whether the label box ``now`` has its centre where ``recorded``'s was (see
    :data:`LABEL_PLACE_TOLERANCE`); ``False`` without a recorded box."""
    if recorded is None:
        return False
    for axis in (0, 1):
        size = recorded[axis + 2]
        then = recorded[axis] + size / 2
        centre = now[axis] + now[axis + 2] / 2
        if abs(centre - then) > max(4.0, LABEL_PLACE_TOLERANCE * size):
            return False
    return True


def _clicks(step: ToolUseBlockParam) -> bool:
    """True when ``step`` clicks (it acts on what is under its point, which its label names;
    a key or a typed text acts at the keyboard focus, which a label under the pointer does not
    show)."""
    return action_name(step) in POINT_CLICKS


def _caret_words(now: Element, recorded: Element) -> str:
    """Why the caret of ``now`` is not where ``recorded``'s was."""
    if now.caret_offset is None:
        return f"{now.describe()} does not have the keyboard focus (recorded with its caret)"
    at, then = now.caret_offset, recorded.caret_offset
    return f"the caret of {now.describe()} is at {at}, recorded {then}"


def _at_caret(plan: Plan, step: ToolUseBlockParam, stored: StepElement) -> bool:
    """True when ``step`` is a key or a typed text recorded in a text element whose caret was
    known, in a replay with no parameter values: it acts at the caret, which must be at the
    recorded offset."""
    tree = stored.tree
    return (
        action_name(step) in _AT_CARET
        and tree is not None
        and tree.caret_offset is not None
        and not plan.values
    )


_AT_CARET = frozenset({"key", "type"})
"""Actions that act where the keyboard focus and its caret are."""


def _caret_follows(plan: Plan, index: int, step: ToolUseBlockParam, tree: Element) -> bool:
    """True when ``step`` is a single left click (no key held) into an editable text element
    the toolkit gives no offset in, and the trajectory's next acting step is a key or a typed
    text into the same element with its caret recorded (:func:`_at_caret`): where the click
    puts the caret, that step checks before anything is typed."""
    action = parse_action(step)
    if action is None or action.name != "left_click" or step.input.get("text"):
        return False
    if tree.role not in TEXT_ROLES or "editable" not in tree.states or tree.text_offset is not None:
        return False
    if tree.character_count is None:
        return False
    for later in plan.steps[index + 1 :]:
        then = parse_action(later)
        if then is None or then.name not in ACTING_ACTIONS:
            continue
        stored = later.element
        return (
            stored is not None
            and stored.tree is not None
            and stored.tree.identity() == tree.identity()
            and _at_caret(plan, later, stored)
        )
    return False


def _same_character(recorded: Element, now: Element, *, other_density: bool) -> bool:
    """In a text element, whether an action at the place found reaches the recorded character:
    the toolkit's offset at that point is the recorded one; where the toolkit gives no
    offsets, only a screen of another density (the same text, scaled: the same share of the
    box is the same character) is trusted. Not a text element: always."""
    if recorded.text_offset is not None:
        return now.text_offset == recorded.text_offset
    if recorded.role in TEXT_ROLES:
        return other_density
    return True


def _place(recorded: Element, now: Element, point: Point) -> Point:
    """Where ``point``, inside ``recorded``'s box, lies in ``now``'s box (the same share of
    its width and height), kept inside it."""
    rx, ry, rw, rh = recorded.box
    nx, ny, nw, nh = now.box
    x = nx + round((point[0] - rx) * nw / max(rw, 1))
    y = ny + round((point[1] - ry) * nh / max(rh, 1))
    return (min(max(x, nx), nx + nw - 1), min(max(y, ny), ny + nh - 1))


def _resized(recorded: Element, now: Element) -> float | None:
    """The factor by which ``now`` is drawn larger or smaller than ``recorded``, when both its
    width and its height changed by about that factor (:data:`RELAID_CHANGE` at least, the
    two within :data:`RELAID_AGREEMENT` of each other): the element itself is drawn at another
    size, as text is at another font size or zoom, so the window around it was laid out
    again (``None``: it kept its size, as an element moved by a reordered list, a rearranged
    toolbar or a taller banner does). Boxes in the same pixels (the recorded ones)."""
    factors = [now.box[axis] / max(recorded.box[axis], 1) for axis in (2, 3)]
    if any(abs(now.box[axis] - recorded.box[axis]) < 3 for axis in (2, 3)):
        return None
    if all(f >= 1 + RELAID_CHANGE for f in factors) or all(
        f <= 1 / (1 + RELAID_CHANGE) for f in factors
    ):
        low, high = sorted(factors)
        if high / low <= 1 + RELAID_AGREEMENT:
            return float((low * high) ** 0.5)
    return None


def _same_place(recorded: Element, now: Element) -> bool:
    """Whether ``now`` lies where ``recorded`` lay in its window (shares of the window's size,
    so that another density is the same place); without both windows, its box on the screen.
    Its corner or its centre may be what stayed: a button whose label a bigger font widened
    grows about its centre, a field beside a widened label keeps neither (it moved)."""
    return _same_spot(recorded, now, centre=False) or _same_spot(recorded, now, centre=True)


def _same_spot(recorded: Element, now: Element, *, centre: bool) -> bool:
    """:func:`_same_place` by the boxes' top-left corners or, with ``centre``, their centres."""

    def spot(box: tuple[int, int, int, int], axis: int) -> float:
        return box[axis] + (box[axis + 2] / 2 if centre else 0)

    rw, nw = recorded.window_box, now.window_box
    if rw is None or nw is None:
        return all(abs(spot(recorded.box, axis) - spot(now.box, axis)) <= 6 for axis in (0, 1))
    for axis in (0, 1):
        size_r, size_n = rw[axis + 2], nw[axis + 2]
        share_r = (spot(recorded.box, axis) - rw[axis]) / max(size_r, 1)
        share_n = (spot(now.box, axis) - nw[axis]) / max(size_n, 1)
        if abs(share_r - share_n) * size_r > max(6, PLACE_TOLERANCE * size_r):
            return False
    return True
