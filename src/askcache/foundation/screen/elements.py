"""Elements: what the platform says is at an action point, beside its pixels.

Recording stores, per acting step, the element under the step's point as the platform's
accessibility tree describes it (:class:`Element`: role, name, the states that say what it
is and not where the pointer is, its ancestors up to its window, its box, and for a text
element the character offset at the point). A replay asks again (:class:`ElementSource`):
which element is at this point now, and where are the elements that look like the recorded
one. The replay's checks compare the two (:mod:`askcache.replay.element_check`).

Coordinates are the screenshot's pixels (the model's, once a
:class:`~askcache.tools.computer.ComputerTool` scaled them), as for windows
(:mod:`.windows`). On Linux the source is AT-SPI over D-Bus
(:mod:`askcache.tools.atspi`); Windows UIA and macOS AX can be added behind the same
protocol. A platform, toolkit or application without one gives no element information: the
step is checked by its pixels alone, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from askcache.foundation.geometry import Point

__all__ = [
    "STABLE_STATES",
    "Element",
    "ElementRef",
    "ElementReporter",
    "ElementSource",
    "ScaledElements",
    "StepElement",
    "element_center",
]


STABLE_STATES = frozenset(
    {
        "checked",
        "collapsed",
        "editable",
        "enabled",
        "expandable",
        "expanded",
        "indeterminate",
        "multi_line",
        "pressed",
        "read_only",
        "selectable",
        "selected",
        "sensitive",
        "single_line",
    }
)
"""The states an element's identity includes: what it is and what an action on it does
(enabled, checked, expanded, selected, editable). States that follow the pointer, the focus
or the window's place (``focused``, ``armed``, ``showing``, ``visible``, ``active``) are left
out: they differ between two looks at the same screen."""

_NAME_CHARS = 300
"""The longest name stored."""


class ElementRef(BaseModel):
    """One ancestor of an element: its role and name."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    role: str = Field(max_length=80)
    """Its role (AT-SPI's role name: ``push button``, ``panel``, ``frame``)."""
    name: str | None = Field(None, max_length=_NAME_CHARS)
    """Its accessible name (``None`` or empty: unnamed)."""


class Element(BaseModel):
    """An element of an application's accessibility tree, as the platform describes it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    role: str = Field(max_length=80)
    """Its role (AT-SPI's role name: ``push button``, ``menu item``, ``text``)."""
    name: str | None = Field(None, max_length=_NAME_CHARS)
    """Its accessible name (a button's label, a field's label); ``None``: unnamed."""
    states: tuple[str, ...] = ()
    """Its states among :data:`STABLE_STATES`, sorted."""
    ancestors: tuple[ElementRef, ...] = ()
    """Its parent first, up to and including its window (the application is left out)."""
    box: tuple[int, int, int, int]
    """Where it is (``x``, ``y``, width, height) in the screenshot's pixels."""
    window_box: tuple[int, int, int, int] | None = None
    """Where its window is, the same way (``None``: not known)."""
    text_offset: int | None = None
    """For a text element, the character offset at the point asked about (``None``: not a
    text element, or the toolkit does not say)."""
    caret_offset: int | None = None
    """For a text element that has the keyboard focus, the caret's character offset (where a
    key or a typed text acts); ``None``: not a text element, not focused, or the toolkit does
    not say. Not part of :meth:`identity`: the caret moves as the text is edited."""
    character_count: int | None = None
    """For a text element, how many characters it holds (``Text.CharacterCount``; ``None``:
    not a text element, or the toolkit does not say). Not part of :meth:`identity`: it changes
    as the text is edited; a re-drawn screen (another theme or font) leaves it as it was."""
    toolkit: str | None = Field(None, max_length=80)
    """The toolkit that drew it, as it names itself (``GTK``, ``Qt``, ``Chromium``)."""
    labelled_by: str | None = Field(None, max_length=_NAME_CHARS)
    """For an unnamed element, the names of the elements the platform says label it (AT-SPI's
    ``LABELLED_BY`` relation: a form's ``Name`` label beside its field), joined by a space:
    what tells two unnamed fields of a form apart. ``None``: it has a name, nothing labels it,
    the platform does not say, or it was recorded before this was stored (such a recording
    is checked as before: :meth:`same_element`)."""

    def identity(self) -> tuple[object, ...]:
        """What must be equal for two descriptions to be of the same element: role, name,
        states and the ancestors' roles and names below the window (whose title may carry a
        document's name), and the window's role. :attr:`labelled_by` is compared beside it
        (:meth:`same_element`), so that a recording made without it keeps its identity."""
        inner = tuple((a.role, a.name or "") for a in self.ancestors[:-1])
        window = self.ancestors[-1].role if self.ancestors else None
        return (self.role, self.name or "", tuple(sorted(self.states)), inner, window)

    def same_element(self, now: Element) -> bool:
        """Whether ``now`` is this (recorded) element: the same :meth:`identity`, and, when this
        one was recorded with :attr:`labelled_by`, labelled by the same names (``now`` saying
        nothing about its labels is not the same: what would tell it from its twins is
        missing). A recording without it is compared by its identity alone, as before."""
        if now.identity() != self.identity():
            return False
        return self.labelled_by is None or now.labelled_by == self.labelled_by

    def other_labels(self, now: Element) -> bool:
        """Whether both this (recorded) element and ``now`` say what labels them, and it
        differs: evidence that ``now`` is another element (``now`` saying nothing is not)."""
        return (
            self.labelled_by is not None
            and now.labelled_by is not None
            and now.labelled_by != self.labelled_by
        )

    def describe(self) -> str:
        """``push button 'Save'`` (with its states when it has any; an unnamed element with
        the names of its labels: ``text (unnamed, labelled 'Name')``)."""
        if self.name:
            name = f" {self.name!r}"
        elif self.labelled_by:
            name = f" (unnamed, labelled {self.labelled_by!r})"
        else:
            name = " (unnamed)"
        states = f" [{', '.join(self.states)}]" if self.states else ""
        return f"{self.role}{name}{states}"

    def scaled(self, source: tuple[int, int], target: tuple[int, int]) -> Element:
        """The element measured in ``source`` pixels, expressed in ``target`` pixels."""
        if source == target:
            return self
        return self.model_copy(
            update={
                "box": _scaled_box(self.box, source, target),
                "window_box": None
                if self.window_box is None
                else _scaled_box(self.window_box, source, target),
            }
        )


def _scaled_box(
    box: tuple[int, int, int, int], source: tuple[int, int], target: tuple[int, int]
) -> tuple[int, int, int, int]:
    fx, fy = target[0] / source[0], target[1] / source[1]
    x, y, width, height = box
    return (
        round(x * fx),
        round(y * fy),
        max(1, round(width * fx)),
        max(1, round(height * fy)),
    )


def element_center(element: Element) -> Point:
    """The centre of ``element``'s box."""
    x, y, width, height = element.box
    return (x + width // 2, y + height // 2)


class StepElement(BaseModel):
    """What a cache file stores about the element an acting step reached, beside its pixels
    (``ToolUseBlockParam.element``), in the recorded screenshot's pixels. Names and text go
    through the recording's parameters and secrets (a value becomes its placeholder) and the
    titles' normalisation (no path, user or host name of the recording machine)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    tree: Element | None = None
    """The element under the point as the accessibility tree described it (``None``: the
    platform or the application gave none)."""
    label: str | None = Field(None, max_length=120)
    """The text of the label under the point as OCR read it (``None``: nothing readable, or
    no OCR engine installed)."""
    label_box: tuple[int, int, int, int] | None = None
    """Where the label was read (``x``, ``y``, width, height)."""
    label_digest: str | None = Field(None, pattern=r"^[0-9a-f]{16}$")
    """The digest of the picture the label was read from
    (:meth:`~askcache.fingerprint.label_crop.LabelCrop.digest`): a replay that cuts the same
    picture knows it reads as :attr:`label` without running the OCR again. Stored only when
    :attr:`label` is the text as read (no parameter or secret in it)."""
    look: str | None = Field(None, max_length=1024)
    """The element's look (:func:`askcache.fingerprint.element_look.element_look`) over its box
    (the tree's, else the label's): what a screen drawn otherwise is compared with."""
    look_box: tuple[int, int, int, int] | None = None
    """The box the look was taken over."""

    def empty(self) -> bool:
        """True when nothing was stored."""
        return self.tree is None and self.label is None and self.look is None


@runtime_checkable
class ElementSource(Protocol):
    """Says what element is where (see the module docstring). Each call may fail (raise):
    the replay then has no element information for that look, and pixels decide."""

    def element_at(self, point: Point) -> Element | None:
        """The innermost element that an action at ``point`` reaches (``None``: none, or
        the application there has no accessibility)."""

    def elements_like(self, element: Element, window_point: Point) -> Sequence[Element] | None:
        """The elements showing now with ``element``'s role and name (any states, any
        ancestors: the caller compares), inside the top-level window that contains
        ``window_point`` (``None``: the source cannot search)."""


@runtime_checkable
class ElementReporter(Protocol):
    """A screen backend that can say what element is where
    (:meth:`askcache.tools.desktop.DesktopBackend.elements`)."""

    def elements(self) -> ElementSource | None:
        """Its elements in its screen's pixels; ``None`` where the platform gives none."""
        ...


class ScaledElements:
    """An :class:`ElementSource` measured in ``space`` pixels (a scaled screenshot's, the
    model's) instead of the ``screen``'s own: points are taken to the screen, boxes brought
    back."""

    def __init__(
        self, source: ElementSource, screen: tuple[int, int], space: tuple[int, int]
    ) -> None:
        self.source = source
        self.screen = screen
        self.space = space

    def _to_screen(self, point: Point) -> Point:
        x = round(point[0] * self.screen[0] / self.space[0])
        y = round(point[1] * self.screen[1] / self.space[1])
        return (min(max(x, 0), self.screen[0] - 1), min(max(y, 0), self.screen[1] - 1))

    def element_at(self, point: Point) -> Element | None:
        found = self.source.element_at(self._to_screen(point))
        return None if found is None else found.scaled(self.screen, self.space)

    def elements_like(self, element: Element, window_point: Point) -> Sequence[Element] | None:
        found = self.source.elements_like(
            element.scaled(self.space, self.screen), self._to_screen(window_point)
        )
        if found is None:
            return None
        return [each.scaled(self.screen, self.space) for each in found]
