"""Nodes of AT-SPI trees: what one object is, fetched in one round trip.

:func:`describe` asks an object's role, name, parent, states, extents and number of children
at once (six calls sent together, :meth:`~askcache.tools.atspi_bus.AtspiBus.exchange`) and gives a
:class:`Node`; :func:`describe_all` does so for many objects in one exchange. An object that
went away, or answers nothing useful, is ``None``: callers skip it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from askcache.tools.atspi_bus import (
    NULL_PATH,
    AtspiError,
    AtspiTimeoutError,
    Call,
    Ref,
)
from askcache.tools.atspi_roles import role_name, state_names

__all__ = [
    "ACCESSIBLE",
    "APPLICATION",
    "COMPONENT",
    "PROPERTIES",
    "SCREEN",
    "TEXT",
    "Exchanger",
    "Node",
    "as_ref",
    "describe",
    "describe_all",
    "description_calls",
    "extents_of",
]

ACCESSIBLE = "org.a11y.atspi.Accessible"
COMPONENT = "org.a11y.atspi.Component"
TEXT = "org.a11y.atspi.Text"
APPLICATION = "org.a11y.atspi.Application"
PROPERTIES = "org.freedesktop.DBus.Properties"

SCREEN = 0
"""AT-SPI's coordinate type for screen coordinates (``ATSPI_COORD_TYPE_SCREEN``)."""

_NAME_CHARS = 300


class Exchanger(Protocol):
    """What sends calls together and gives their replies in order
    (:meth:`~askcache.tools.atspi_bus.AtspiBus.exchange`)."""

    def exchange(
        self, calls: Sequence[Call], deadline: float
    ) -> list[tuple[Any, ...] | AtspiError]: ...


@dataclass(frozen=True)
class Node:
    """One accessible object as its application describes it."""

    ref: Ref
    role: str
    name: str
    parent: Ref | None
    states: frozenset[str] = frozenset()
    extents: tuple[int, int, int, int] | None = None
    """Its extents in AT-SPI's screen coordinates (the toolkit's logical pixels);
    ``None``: it has no component, or no size."""
    child_count: int = 0
    complete: bool = False
    """True when states, extents and the number of children were asked (False: an
    ancestor's description, role, name and parent only)."""

    def contains(self, point: tuple[float, float]) -> bool:
        """True when ``point`` (AT-SPI's coordinates) lies inside the extents."""
        if self.extents is None:
            return False
        x, y, width, height = self.extents
        return x <= point[0] < x + width and y <= point[1] < y + height

    @property
    def visible(self) -> bool:
        """Showing, with extents of a size on the screen (a hidden page's pane says
        ``-2147483648``, an unrealised widget ``-1``)."""
        return (
            "showing" in self.states and "defunct" not in self.states and self.extents is not None
        )


def as_ref(value: Any) -> Ref | None:
    """An ``(so)`` reply as a :data:`Ref`; ``None`` for AT-SPI's null object."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        return None
    name, path = value
    if not isinstance(name, str) or not isinstance(path, str) or not name or path == NULL_PATH:
        return None
    return (name, path)


def description_calls(ref: Ref, full: bool = True) -> list[Call]:
    """The calls that describe ``ref`` (:func:`describe_all`'s; ``full=False``: the first
    three, role, name and parent)."""
    calls = [
        Call(ref, ACCESSIBLE, "GetRole"),
        Call(ref, PROPERTIES, "Get", "ss", (ACCESSIBLE, "Name")),
        Call(ref, PROPERTIES, "Get", "ss", (ACCESSIBLE, "Parent")),
    ]
    if full:
        calls += [
            Call(ref, ACCESSIBLE, "GetState"),
            Call(ref, COMPONENT, "GetExtents", "u", (SCREEN,)),
            Call(ref, PROPERTIES, "Get", "ss", (ACCESSIBLE, "ChildCount")),
        ]
    return calls


def _node(ref: Ref, replies: Sequence[tuple[Any, ...] | AtspiError]) -> Node | None:
    role, name, parent = replies[:3]
    if isinstance(role, AtspiError) or not role or not isinstance(role[0], int):
        return None
    named = _variant(name)
    node = Node(
        ref=ref,
        role=role_name(role[0]) or f"role {role[0]}",
        name=named.strip()[:_NAME_CHARS] if isinstance(named, str) else "",
        parent=as_ref(_variant(parent)),
    )
    if len(replies) == 3:
        return node
    state, extents, count = replies[3:]
    words = state[0] if not isinstance(state, AtspiError) and state else ()
    children = _variant(count)
    return replace(
        node,
        states=state_names([int(w) for w in words]),
        extents=extents_of(extents),
        child_count=children if isinstance(children, int) and children > 0 else 0,
        complete=True,
    )


def _variant(reply: tuple[Any, ...] | AtspiError) -> Any:
    """The value of a ``Properties.Get`` reply (a variant: ``(signature, value)``)."""
    if isinstance(reply, AtspiError) or not reply:
        return None
    value = reply[0]
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return value[1]
    return value


def extents_of(reply: tuple[Any, ...] | AtspiError) -> tuple[int, int, int, int] | None:
    """A ``GetExtents`` reply's box; ``None``: an error, no size, or a place off every
    screen (a hidden node's ``-2147483648``)."""
    if isinstance(reply, AtspiError) or not reply:
        return None
    box = reply[0]
    if not isinstance(box, tuple | list) or len(box) != 4:
        return None
    x, y, width, height = (int(v) for v in box)
    if width <= 0 or height <= 0 or x <= -(2**30) or y <= -(2**30):
        return None
    return (x, y, width, height)


def describe_all(
    bus: Exchanger,
    refs: Sequence[Ref],
    deadline: float,
    extra: Sequence[Call] = (),
    *,
    full: bool = True,
) -> tuple[list[Node | None], list[tuple[Any, ...] | AtspiError]]:
    """:class:`Node` for each of ``refs`` (``None``: gone, or no role), in one exchange with
    the ``extra`` calls, whose replies come second. ``full=False``: role, name and parent
    only (an ancestor's description: three calls, not six)."""
    per_node = 6 if full else 3
    calls = [call for ref in refs for call in description_calls(ref, full)]
    replies = bus.exchange([*calls, *extra], deadline)
    for reply in replies:
        if isinstance(reply, AtspiTimeoutError):
            raise reply  # an application that does not answer: no description, not "nothing"
    nodes = [_node(ref, replies[i * per_node : (i + 1) * per_node]) for i, ref in enumerate(refs)]
    return nodes, replies[len(calls) :]


def describe(bus: Exchanger, ref: Ref, deadline: float, *, full: bool = True) -> Node | None:
    """:class:`Node` for ``ref`` (``None``: gone, or no role)."""
    nodes, _ = describe_all(bus, [ref], deadline, full=full)
    return nodes[0]
