"""The elements of Linux desktop applications, from their AT-SPI accessibility trees.

:class:`AtspiElements` is an :class:`~askcache.foundation.screen.elements.ElementSource` for an X
display whose applications publish their trees on the session's AT-SPI bus (GTK and Qt with
their bridges on, Chromium with its accessibility on). It talks D-Bus itself
(:mod:`askcache.tools.atspi_bus`, over ``jeepney``: ``pip install 'askcache[anchors]'``).

What is at a point (:meth:`AtspiElements.element_at`):

1. The window. The X server says which window is on top at the point and which process drew
   it (:func:`askcache.tools.xlib_windows.window_at`); among that process's applications on
   the bus, the top-level frame whose extents match the window's geometry at some scale is
   the window (two windows overlapping: the one on top, not the first the tree lists). The
   scale is the toolkit's: at ``GDK_SCALE=2`` or ``QT_SCALE_FACTOR=2`` the tree speaks
   logical pixels, half the screen's, so every point asked is divided by it and every box
   answered multiplied by it (Chromium counts its page in the screen's pixels and takes
   points in them while its window speaks logical ones: the descent finds out which, node by
   node). Without an X display, the one frame that contains the point. A window that no
   frame matches (a popup menu, a window of an application with no tree) gives ``None``:
   nothing is said rather than something about the window below it.
2. The element. From the frame down, ``Component.GetAccessibleAtPoint`` one level at a time;
   each answer must be showing and contain the point, else the level's showing children are
   looked at instead (a toolkit may answer with a hidden notebook page, whose extents are
   ``-2147483648``). The deepest node is then taken to what an action there reaches: a
   button's inner label or icon is the button; an unnamed filler, panel or section is the
   nearest ancestor that has a name or a role of its own.
3. Its description: role (AT-SPI's name for the role's number, the same in every toolkit),
   name, states among :data:`~askcache.foundation.screen.elements.STABLE_STATES`, ancestors up
   to the frame, boxes in screen pixels, the character offset at the point for a text element
   (``Text.GetOffsetAtPoint``; ``None`` when the toolkit answers -1, except 0 for an empty
   field, whose only place is its start), its number of characters (``Text.CharacterCount``)
   and, when it has the keyboard focus, its caret's offset (``Text.CaretOffset``: Qt gives it
   where it gives no offset at a point), the toolkit's name, and for an unnamed element the
   names of what labels it (its ``LABELLED_BY`` relations: a form's label beside its field;
   two more round trips, none for a named element).

Where the elements like a recorded one are (:meth:`AtspiElements.elements_like`): a walk of the
frame's showing nodes, one level per round trip (a level's descriptions and its children's
lists asked together), bounded in depth and count (a tree larger than the bound gives
``None``: the caller cannot know the element is unique).

Round trips are what a query costs (each wakes the application on a busy machine), so the
applications, their processes and frames are learnt once and only described again at the
next query, and the nodes a query found below a frame are asked again, with what the descent
would ask them, in that same round trip at the next query there (a typing step asks where
the step before it clicked), with what the query then asked of the element it found (a text
element's number of characters, caret and offset; what labels an unnamed element, and the
labels' names): where the tree is as it was, the whole query takes one round trip; where it
changed, the descent asks the rest as before, so the answer is the same. Only what the last
query needed is asked ahead (a character offset of the nodes that were text elements, the
children of those whose answer for the point was wrong), so a query on an unchanged tree
sends fewer calls too. A walk (:meth:`AtspiElements.elements_like`, an open menu) asks the
nodes the last walk of that frame described, and their labels, in its first round trip.
Replies asked ahead are kept for the one query only: every answer was given in it.
The connection to the X display (which window is on top) is opened by
:meth:`AtspiElements.warm` too: opening it took 7 ms of the first query.

At a scale, a hit test that skipped levels may be asked and believed in the wrong pixels (a
large node deep in Chromium's page contains the point in either): the leaf's ancestors say
in which pixels it is counted, and where that is not the descent's, the descent is run once
more in the other pixels (before, the libffi manual's link in Chromium at 2x was found as
its page, the ``document web``).

Every query has a deadline (``timeout``): an application that answers slowly or not at all
raises :class:`~askcache.tools.atspi_bus.AtspiTimeoutError` within it, a session with no
accessibility bus :class:`~askcache.tools.atspi_bus.AtspiUnavailableError`; a bus that went away
is reconnected at the next query.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from askcache.foundation.geometry import Point
from askcache.foundation.screen.elements import STABLE_STATES, Element, ElementRef
from askcache.tools.atspi_bus import (
    AtspiBus,
    AtspiError,
    AtspiTimeoutError,
    AtspiUnavailableError,
    Call,
    Ref,
)
from askcache.tools.atspi_nodes import (
    ACCESSIBLE,
    APPLICATION,
    COMPONENT,
    PROPERTIES,
    SCREEN,
    TEXT,
    Node,
    as_ref,
    describe_all,
    description_calls,
)
from askcache.tools.atspi_nodes import extents_of as _extents_of
from askcache.tools.atspi_roles import state_names
from askcache.tools.xlib_windows import StackedWindow, window_at

__all__ = ["AtspiElements"]

_REGISTRY: Ref = ("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
_DBUS: Ref = ("org.freedesktop.DBus", "/org/freedesktop/DBus")
_ROOT = "/org/a11y/atspi/accessible/root"

MAX_DEPTH = 60
"""The deepest descent or walk (levels below the frame)."""
MAX_NODES = 5000
"""The most nodes :meth:`AtspiElements.elements_like` looks at in one window."""
MAX_CHILDREN = 400
"""The most children looked at when a toolkit's answer for a point was wrong."""

_DESCRIBED_WHOLE = 8
"""Up to this many children, a level the toolkit answered wrongly for is described whole in
one round trip; more are glanced at first."""

_PREDICTED = 40
"""The most nodes of a frame's last query asked ahead at the next (:class:`_Memo`)."""

_WALKED_AHEAD = 1000
"""The most nodes of a frame's last walk asked ahead at the next (:class:`_Walked`)."""

_SCALES = (1.0, 2.0, 1.5, 1.25, 1.75, 3.0, 2.5, 4.0)
"""The scales a toolkit's logical pixels may have (the common first)."""

_CONTROLS = frozenset(
    {
        "check box",
        "check menu item",
        "combo box",
        "link",
        "list item",
        "menu",
        "menu item",
        "page tab",
        "push button",
        "push button menu",
        "radio button",
        "radio menu item",
        "spin button",
        "table cell",
        "tearoff menu item",
        "toggle button",
        "tree item",
    }
)
"""Roles an action reaches as a whole (a click on a button's label clicks the button)."""

_INNER = frozenset(
    {"accelerator label", "filler", "icon", "image", "label", "panel", "section", "static"}
)
"""Roles of the parts a control is drawn with."""

_MENU_ITEMS = frozenset(
    {"check menu item", "menu", "menu item", "radio menu item", "tearoff menu item"}
)
"""Roles of what an open menu lists (a submenu's entry is a ``menu``)."""

_MENU_TOOLKITS = frozenset({"gtk"})
"""Toolkits (their ``ToolkitName``, lower case) whose open menus are looked for in their
popups: GTK describes a popup menu's items under the frame it opened from."""

_STRUCTURE = frozenset(
    {
        "filler",
        "glass pane",
        "grouping",
        "invalid",
        "layered pane",
        "panel",
        "redundant object",
        "root pane",
        "scroll pane",
        "section",
        "unknown",
        "viewport",
    }
)
"""Roles of nodes that only arrange others: unnamed, they are not what an action reaches."""

_TEXT_ROLES = frozenset(
    {"document text", "entry", "paragraph", "password text", "terminal", "text"}
)
"""Roles whose character offset at a point is recorded (with the Text interface)."""


class AtspiElements:
    """The elements of an X display's applications, from the session's AT-SPI bus.

    Args:
        display: The X display (``":1"``) whose window stacking says which window is on top
            at a point; ``None``: no X (the one frame containing the point is taken).
        session_address: The session bus's address; default: ``DBUS_SESSION_BUS_ADDRESS``.
        bus_address: The AT-SPI bus's address; default: asked of the session bus.
        timeout: Seconds one :meth:`element_at` may take before it raises.
        search_timeout: Seconds one :meth:`elements_like` may take before it raises.
        windows: Instead of ``display``: what is on top at a point (for tests and other
            window systems).
    """

    def __init__(
        self,
        display: str | None = None,
        *,
        session_address: str | None = None,
        bus_address: str | None = None,
        timeout: float = 0.5,
        search_timeout: float = 1.0,
        windows: Callable[[Point], StackedWindow | None] | None = None,
    ) -> None:
        self.display = display
        self.timeout = timeout
        self.search_timeout = search_timeout
        self._bus = _Memo(AtspiBus(session_address, bus_address=bus_address))
        self._windows = windows
        self._xdisplay: Any = None
        self._x_lock = threading.Lock()
        self._pids: dict[str, int | None] = {}
        self._toolkits: dict[str, str | None] = {}
        self._frame_refs: dict[str, list[Ref]] = {}
        self._scales: dict[Ref, float] = {}
        """The scale each frame was found at, last time."""
        self._screen_points: set[str] = set()
        """Applications that take points in the screen's pixels at a scale (Chromium)."""
        self._known: dict[int, list[tuple[Ref, list[Ref]]]] = {}
        """Per process: its applications and their top-level frames at the last look."""
        self._warming: threading.Thread | None = None
        self._paths: dict[Ref, list[tuple[Ref, bool]]] = {}
        """Per frame: the nodes below it the last :meth:`element_at` there described, and
        whether the descent passed them (True) or they were only its leaf's ancestors (asked
        again with the frames, in the same round trip: :meth:`_cached_frames`)."""
        self._walked: dict[Ref, _Walked] = {}
        """Per frame: the nodes the last walk there described (:meth:`_walk_where`), asked
        again in its first round trip at the next."""
        self._hints: dict[Ref, _Hint] = {}
        """Per frame: what else the last :meth:`element_at` there asked (:class:`_Hint`), so
        that the next query asks it ahead too."""

    # --- the protocol -------------------------------------------------------------------

    def element_at(self, point: Point) -> Element | None:
        """The element an action at ``point`` (screen pixels) reaches; ``None``: no window
        there, or its application has no accessibility tree."""
        deadline = time.monotonic() + self.timeout
        try:
            return self._element_at(point, deadline)
        finally:
            self._bus.forget()

    def _element_at(self, point: Point, deadline: float) -> Element | None:
        window = self._window(point, deadline, ahead=True)
        if window is None:
            return self._menu_item_at(point, deadline)
        frame, scale, box = window.frame, window.scale, window.box
        units = _Units(frame, scale, box)
        searched: set[Ref] = set()
        chain, offsets, leaf_unit = self._descend(
            frame, point, units, deadline, window.answer, searched=searched
        )
        ancestry = self._ancestry(chain, frame, deadline)
        if scale != 1.0:  # a page's root says in which pixels its content is: know it whole
            ancestry = [ancestry[0], *self._completed(ancestry[1:], "document web", deadline)]
            if units.of(ancestry[0], ancestry[1:]) != leaf_unit:
                # the descent took the leaf's extents in pixels its ancestors do not say it
                # uses: a hit test that skipped levels (Chromium's window answers with a node
                # deep in its page) was asked, and believed, in the wrong pixels (a large node
                # contains the point in either): once more in the other pixels
                app = frame.ref[0]
                if app in self._screen_points:
                    self._screen_points.discard(app)
                else:
                    self._screen_points.add(app)
                chain, offsets, leaf_unit = self._descend(
                    frame, point, units, deadline, searched=searched
                )
                ancestry = self._ancestry(chain, frame, deadline)
                ancestry = [ancestry[0], *self._completed(ancestry[1:], "document web", deadline)]
        target = _target(ancestry)
        # described whole: the nodes the descent passed, the target, a page's root at a scale
        whole = {n.ref for n in chain} | {ancestry[target].ref}
        whole |= {n.ref for n in ancestry if scale != 1.0 and n.role == "document web"}
        path = dict.fromkeys(n.ref for n in (*chain[1:], *ancestry) if n.ref != frame.ref)
        self._paths[frame.ref] = [(ref, ref in whole) for ref in path][:_PREDICTED]
        node, ancestors = ancestry[target], ancestry[target + 1 :]
        if not node.complete:
            node = describe_all(self._bus, [node.ref], deadline)[0][0] or node
        unit = units.of(node, ancestors)
        if target == 0 and unit != leaf_unit:
            return None  # the node was found in pixels its ancestors do not say it uses
        offset = None
        text: dict[str, int | None] = {}
        if node.role in _TEXT_ROLES:
            known = offsets.get(node.ref, -1)  # -1: not asked on the way down
            asked = self._asked_unit(node.ref[0], scale)
            offset, caret, count = self._offsets(
                node, _logical(point, asked), deadline, at_point=known == -1
            )
            offset = offset if known == -1 else known
            if offset is None and count == 0:
                offset = 0  # an empty field (GTK answers -1 there): an action reaches its start
            text = {"caret_offset": caret, "character_count": count}
        found, label_refs = self._labels_with([node], deadline)
        self._hints[frame.ref] = _Hint(
            texts=frozenset(n.ref for n in (*chain, node) if n.role in _TEXT_ROLES),
            searched=frozenset(searched),
            target=node.ref,
            text=node.role in _TEXT_ROLES,
            labelled=_may_be_labelled(node),
            labels=tuple(label_refs.get(node.ref, ())),
        )
        element = self._element(
            node, ancestors, unit, window=box, offset=offset, deadline=deadline, labels=found[0]
        )
        return element.model_copy(update=text) if text else element

    def elements_like(self, element: Element, window_point: Point) -> list[Element] | None:
        """The showing elements with ``element``'s role and name in the window on top at
        ``window_point``; ``None``: no window there with a tree, or a tree too large to
        search whole."""
        deadline = time.monotonic() + self.search_timeout
        try:
            return self._elements_like(element, window_point, deadline)
        finally:
            self._bus.forget()

    def _elements_like(
        self, element: Element, window_point: Point, deadline: float
    ) -> list[Element] | None:
        window = self._window(window_point, deadline)
        if window is None:
            return self._menu_items_like(element, window_point, deadline)
        frame, scale, box = window.frame, window.scale, window.box
        units = _Units(frame, scale, box)
        matches = self._walk(frame, element.role, element.name or "", units, deadline)
        if matches is None:
            return None
        labels, targets = self._labels_with([node for node, _, _ in matches], deadline)
        walked = self._walked.get(frame.ref)
        if walked is not None:  # what labelled the matches, asked with the next walk
            calls = [Call(ref, ACCESSIBLE, "GetRelationSet") for ref in targets]
            names = dict.fromkeys(ref for refs in targets.values() for ref in refs)
            calls += [Call(ref, PROPERTIES, "Get", "ss", (ACCESSIBLE, "Name")) for ref in names]
            self._walked[frame.ref] = replace(walked, labels=tuple(calls))
        return [
            self._element(
                node, path, unit, window=box, offset=None, deadline=deadline, labels=label
            )
            for (node, path, unit), label in zip(matches, labels, strict=True)
        ]

    # --- an open menu ------------------------------------------------------------------

    def _menu(self, point: Point, deadline: float) -> _Menu | None:
        """The open menu whose popup window is on top at ``point``: the showing items of
        the popup's process that lie inside it, at the scale where they do (``None``: no
        popup there, or none of its process's items lies inside it). A GTK menu's popup is a
        window of its own that no frame is, while the tree describes its items under the
        menu bar of the frame it opened from: a walk of that process's frames finds them.
        Only for GTK (another toolkit's popup, a tooltip over a web page, is not walked: a
        page's tree is too large to walk within a query's deadline)."""
        top = self._top_window(point)
        if top is None or not top.popup or top.pid is None:
            return None
        apps = self._applications(deadline)
        self._learn_pids([ref[0] for ref in apps], deadline)
        mine = [ref for ref in apps if self._pids.get(ref[0]) == top.pid]
        if not mine or any(
            (self._toolkit(ref[0], deadline) or "").lower() not in _MENU_TOOLKITS for ref in mine
        ):
            return None
        items: list[tuple[Node, list[Node], float]] = []
        for frame in self._frames(mine, deadline):
            scale = self._scales.get(frame.ref, 1.0)
            walked = self._walk_where(
                frame, lambda n: n.role in _MENU_ITEMS, _Units(frame, scale, None), deadline
            )
            if walked is None:
                return None  # too large to know the menu whole
            items.extend(walked)
        for scale in dict.fromkeys((*{unit for _, _, unit in items}, *_SCALES)):
            inside = [
                (node, path, scale, box)
                for node, path, _ in items
                if node.extents is not None
                for box in [_scaled(node.extents, scale)]
                if _fits(box, top.box)
            ]
            if inside and _fills(top.box, [box for *_, box in inside]):
                return _Menu(top.box, scale, [(n, p, u) for n, p, u, _ in inside])
        return None

    def _menu_item_at(self, point: Point, deadline: float) -> Element | None:
        """The item of the open menu on top at ``point`` that contains it (``None``: none,
        or two)."""
        menu = self._menu(point, deadline)
        if menu is None:
            return None
        at = [
            (node, path)
            for node, path, _ in menu.items
            if node.contains(_logical(point, menu.scale))
        ]
        if len(at) != 1:
            return None
        node, path = at[0]
        labels = self._labels([node], deadline)[0]
        return self._element(
            node, path, menu.scale, window=menu.box, offset=None, deadline=deadline, labels=labels
        )

    def _menu_items_like(
        self, element: Element, window_point: Point, deadline: float
    ) -> list[Element] | None:
        """The items of the open menu on top at ``window_point`` with ``element``'s role and
        name (``None``: no open menu there)."""
        menu = self._menu(window_point, deadline)
        if menu is None:
            return None
        name = element.name or ""
        matches = [(n, p) for n, p, _ in menu.items if n.role == element.role and n.name == name]
        labels = self._labels([node for node, _ in matches], deadline)
        return [
            self._element(
                node,
                path,
                menu.scale,
                window=menu.box,
                offset=None,
                deadline=deadline,
                labels=label,
            )
            for (node, path), label in zip(matches, labels, strict=True)
        ]

    def warm(self) -> None:
        """Open the X connection, learn the applications on the bus, their processes, windows
        and toolkits now, in
        a thread of its own, so that the first query asks only about its point (a replay's
        first step waits for its screen meanwhile). Nothing it meets is an error: the first
        query learns what it could not, as it would have."""
        if self._warming is not None or (self.display is None and self._windows is None):
            return
        self._warming = threading.Thread(
            target=self._learn_all, name="askcache-atspi-warm", daemon=True
        )
        self._warming.start()

    def _learn_all(self) -> None:
        deadline = time.monotonic() + self.search_timeout
        if self.display is not None and self._windows is None:
            with self._x_lock, contextlib.suppress(Exception):
                self._x_display()  # the first query's window_at needs it
        with contextlib.suppress(Exception):
            apps = self._applications(deadline)
            names = [ref[0] for ref in apps]
            self._learn_pids(names, deadline)
            unknown = [name for name in names if name not in self._toolkits]
            calls = [
                Call((name, _ROOT), PROPERTIES, "Get", "ss", (APPLICATION, "ToolkitName"))
                for name in unknown
            ]
            for name, reply in zip(unknown, self._bus.exchange(calls, deadline), strict=True):
                if not isinstance(reply, AtspiError) and reply:
                    value = _value(reply[0])
                    self._toolkits[name] = str(value)[:80] if value else None
            self._frames(apps, deadline)
            by_pid: dict[int, list[tuple[Ref, list[Ref]]]] = {}
            for app in apps:
                pid = self._pids.get(app[0])
                if pid is not None and app[0] in self._frame_refs:
                    by_pid.setdefault(pid, []).append((app, self._frame_refs[app[0]]))
            for pid, known in by_pid.items():
                self._known.setdefault(pid, known)

    def close(self) -> None:
        """Close the bus connection and the X connection (once :meth:`warm`'s thread
        ended: it gives up at its deadline)."""
        if self._warming is not None:
            self._warming.join(self.search_timeout + 1.0)
        self._bus.close()
        with self._x_lock:
            if self._xdisplay is not None:
                self._xdisplay.close()
                self._xdisplay = None

    # --- the window ---------------------------------------------------------------------

    def _window(self, point: Point, deadline: float, *, ahead: bool = False) -> _Window | None:
        """The frame on top at ``point``, its scale, its window's box in screen pixels
        (``None``: from the frame's extents), and, when it came with the frames, the frame's
        answer for the point."""
        warming = self._warming
        if warming is not None and warming.is_alive():
            warming.join(max(0.0, deadline - time.monotonic()))  # what it learns is used
        top = self._top_window(point)
        if top is None:
            if self.display is not None or self._windows is not None:
                return None  # no window there
            found = _only_frame(self._frames(self._applications(deadline), deadline), point)
            return None if found is None else _Window(found, 1.0, None)
        cached = self._known.get(top.pid) if top.pid is not None else None
        if cached is not None:
            frames, answers = self._cached_frames(cached, point, deadline, ahead=ahead)
            match = _matching(frames, top)
            if match is not None:
                self._scales[match[0].ref] = match[1]
                return _Window(match[0], match[1], top.box, answers.get(match[0].ref))
        apps = self._applications(deadline)
        if top.pid is not None:
            self._learn_pids([ref[0] for ref in apps], deadline)
            mine = [ref for ref in apps if self._pids.get(ref[0]) == top.pid]
            apps = mine or apps
        frames = self._frames(apps, deadline)
        if top.pid is not None:
            self._known[top.pid] = [(app, self._frame_refs[app[0]]) for app in apps]
        match = _matching(frames, top)
        if match is None:
            return None
        self._scales[match[0].ref] = match[1]
        return _Window(match[0], match[1], top.box)

    def _applications(self, deadline: float) -> list[Ref]:
        reply = self._call(_REGISTRY, "GetChildren", deadline)
        return [ref for ref in (as_ref(r) for r in (reply[0] if reply else ())) if ref is not None]

    def _cached_frames(
        self, known: list[tuple[Ref, list[Ref]]], point: Point, deadline: float, *, ahead: bool
    ) -> tuple[list[Node] | None, dict[Ref, tuple[float, tuple[Any, ...]]]]:
        """The frames of the applications a process had at the last look, described again
        (``None`` when an application's number of windows changed since, or it is gone),
        with each frame's answer for ``point`` asked at its last scale (the descent's first
        step, in the same round trip); ``ahead``: with what the descent will ask the nodes
        the last query there found (kept for it: :class:`_Memo`)."""
        refs = [frame for _, frames in known for frame in frames]
        counts = [
            Call(app, PROPERTIES, "Get", "ss", (ACCESSIBLE, "ChildCount")) for app, _ in known
        ]
        asked = [self._asked_unit(ref[0], self._scales.get(ref, 1.0)) for ref in refs]
        probes = [
            self._at_point_call(ref, _logical(point, unit))
            for ref, unit in zip(refs, asked, strict=True)
        ]
        later = [
            call
            for ref, unit in zip(refs, asked, strict=True)
            if ahead and ref in self._paths
            for call in self._predicted(ref, _logical(point, unit), self._scales.get(ref, 1.0))
        ]
        nodes, replies = describe_all(self._bus, refs, deadline, [*counts, *probes, *later])
        self._bus.remember(later, replies[len(counts) + len(probes) :])
        replies = replies[: len(counts) + len(probes)]
        for (_, frames), reply in zip(known, replies[: len(counts)], strict=True):
            if isinstance(reply, AtspiError) or not reply or _value(reply[0]) != len(frames):
                return None, {}
        answers = {
            ref: (unit, reply)
            for ref, unit, reply in zip(refs, asked, replies[len(counts) :], strict=True)
            if not isinstance(reply, AtspiError)
        }
        return [node for node in nodes if node is not None and node.visible], answers

    def _predicted(self, frame: Ref, point: tuple[float, float], scale: float) -> list[Call]:
        """What the last query below ``frame`` asked (:attr:`_paths`, :attr:`_hints`), at
        ``point`` (in the pixels the toolkit is asked in; ``scale``: the frame's scale at the
        last query): each node the descent passed its description and its answer for the
        point, the character offset there for a node that was a text element (every node at a
        scale other than 1, where the descent asks them all), its children where the descent
        had to list them (its answer was wrong); an ancestor the descent skipped its role, name
        and parent (as :meth:`_ancestry` asks it); the element's text figures
        (:meth:`_offsets`) and what labels it (:meth:`_labels_with`), with the labels' names
        as they were."""
        hint = self._hints.get(frame)
        searched = hint.searched if hint is not None else None
        texts = hint.texts if hint is not None and scale == 1.0 else None
        calls = []
        if searched is None or frame in searched:
            calls.append(Call(frame, ACCESSIBLE, "GetChildren"))
        for below, passed in self._paths[frame]:
            if not passed:
                calls += description_calls(below, full=False)
                continue
            calls += [*description_calls(below), self._at_point_call(below, point)]
            if texts is None or below in texts:
                calls.append(self._offset_call(below, point))
            if searched is None or below in searched:
                calls.append(Call(below, ACCESSIBLE, "GetChildren"))
        if hint is not None:
            target = hint.target
            if hint.text:
                calls += [
                    Call(target, PROPERTIES, "Get", "ss", (TEXT, "CharacterCount")),
                    Call(target, PROPERTIES, "Get", "ss", (TEXT, "CaretOffset")),
                    self._offset_call(target, point),
                ]
            if hint.labelled:
                calls.append(Call(target, ACCESSIBLE, "GetRelationSet"))
                calls += [
                    Call(r, PROPERTIES, "Get", "ss", (ACCESSIBLE, "Name")) for r in hint.labels
                ]
        return list(dict.fromkeys(calls))

    def _asked_unit(self, app: str, scale: float) -> float:
        """The unit of the points ``app`` is asked about at ``scale``."""
        return 1.0 if app in self._screen_points else scale

    def _top_window(self, point: Point) -> StackedWindow | None:
        if self._windows is not None:
            return self._windows(point)
        if self.display is None:
            return None
        with self._x_lock:
            try:
                return window_at(self._x_display(), point)
            except Exception as exc:  # python-xlib's errors: the display went away
                if self._xdisplay is not None:
                    with contextlib.suppress(Exception):
                        self._xdisplay.close()
                    self._xdisplay = None  # opened again at the next query
                raise AtspiUnavailableError(
                    f"cannot ask {self.display!r} for its windows: {exc}"
                ) from exc

    def _x_display(self) -> Any:
        """The connection to the X display, opened at the first use (with ``_x_lock``
        held; opening it takes several milliseconds, so :meth:`warm` does)."""
        if self._xdisplay is None:
            from askcache.foundation.screen.xserver import connect

            assert self.display is not None
            self._xdisplay = connect(self.display)
        return self._xdisplay

    def _learn_pids(self, names: Sequence[str], deadline: float) -> None:
        unknown = [name for name in names if name not in self._pids]
        calls = [
            Call(_DBUS, "org.freedesktop.DBus", "GetConnectionUnixProcessID", "s", (name,))
            for name in unknown
        ]
        for name, reply in zip(unknown, self._bus.exchange(calls, deadline), strict=True):
            if isinstance(reply, AtspiTimeoutError):
                raise reply
            pid = None if isinstance(reply, AtspiError) or not reply else int(reply[0])
            self._pids[name] = pid

    def _frames(self, apps: Sequence[Ref], deadline: float) -> list[Node]:
        """The showing top-level frames (and dialogs) of ``apps``."""
        replies = self._bus.exchange(
            [Call(ref, ACCESSIBLE, "GetChildren") for ref in apps], deadline
        )
        refs: list[Ref] = []
        for app, reply in zip(apps, replies, strict=True):
            if isinstance(reply, AtspiTimeoutError):
                raise reply
            if isinstance(reply, AtspiError) or not reply:
                continue
            frames = [ref for ref in (as_ref(r) for r in reply[0]) if ref is not None]
            self._frame_refs[app[0]] = frames
            refs.extend(frames)
        nodes, _ = describe_all(self._bus, refs, deadline)
        return [node for node in nodes if node is not None and node.visible]

    # --- the element --------------------------------------------------------------------

    def _descend(
        self,
        frame: Node,
        point: Point,
        units: _Units,
        deadline: float,
        first: tuple[float, tuple[Any, ...]] | None = None,
        *,
        searched: set[Ref] | None = None,
    ) -> tuple[list[Node], dict[Ref, int | None], float]:
        """The nodes from ``frame`` down to the deepest one at ``point`` (screen pixels)
        that is showing and contains it, the character offsets there (of the nodes that
        were asked with their description), and
        the unit of the deepest one's extents. One round trip per level: the next level's
        answer is asked with each description.

        At a scale, a toolkit is asked in its logical pixels, except one that answers
        wrongly then but rightly in the screen's (Chromium's window, which counts its own
        extents in logical pixels and takes points in the screen's): it is asked in the
        screen's from then on.

        ``searched`` collects the nodes whose children were listed (their answer was
        wrong). At scale 1 the character offset is not asked of a node that was asked ahead
        without it (it was no text element at the last query: :meth:`_predicted`); a text
        element found so is asked it with its text figures (:meth:`_offsets`), at the same
        point."""
        app = frame.ref[0]
        chain = [frame]
        unit = units.scale  # the unit of the last node's extents
        asked = self._asked_unit(app, units.scale)  # the unit of the points
        retried = units.scale == 1.0
        if first is not None and first[0] == asked:
            answer = first[1]  # asked with the frames
        else:
            answer = self._at_point(frame.ref, _logical(point, asked), deadline)
        offsets: dict[Ref, int | None] = {}
        for _ in range(MAX_DEPTH):
            child = as_ref(answer[0]) if answer else None
            if child is not None and all(child != node.ref for node in chain):
                here = _logical(point, asked)
                node, answer_, offset_ = self._described_at(child, here, units.scale, deadline)
                inside = None
                if node is not None and node.visible:
                    inside = _unit_inside(node, point, units.below(node, unit))
                if node is not None and inside is not None:
                    chain.append(node)
                    if inside == 1.0 and asked != 1.0:
                        # content counted in the screen's pixels (Chromium's page) is asked
                        # in them too
                        asked = 1.0
                        self._screen_points.add(app)
                        answer_, offset_ = self._bus.exchange(
                            [self._at_point_call(child, point), self._offset_call(child, point)],
                            deadline,
                        )
                    unit = inside
                    answer = () if isinstance(answer_, AtspiError) else answer_
                    if offset_ is not None:
                        offsets[node.ref] = _offset_of(offset_)
                    continue
                if not retried:  # a wrong answer: ask in the other pixels, once
                    retried = True
                    asked = 1.0 if asked != 1.0 else units.scale
                    answer = self._at_point(chain[-1].ref, _logical(point, asked), deadline)
                    if asked == 1.0:
                        self._screen_points.add(app)
                    else:
                        self._screen_points.discard(app)
                    continue
            if not chain[-1].child_count or chain[-1].role in _CONTROLS:
                break  # a leaf; or a control, whose children (a menu's items) are elsewhere
            # no answer, a wrong one (a hidden page, a node elsewhere), or a node with no
            # extents of its own (GTK's notebook page whose tab is hidden): the children
            # that contain the point, one level through a node with no extents
            found = self._child_at(chain[-1], _logical(point, unit), deadline, searched=searched)
            if found is None:
                break
            chain.extend(found)
            answer = self._at_point(found[-1].ref, _logical(point, asked), deadline)
        return chain, offsets, unit

    def _described_at(
        self, child: Ref, here: tuple[float, float], scale: float, deadline: float
    ) -> tuple[Node | None, tuple[Any, ...] | AtspiError, tuple[Any, ...] | AtspiError | None]:
        """``child`` described, with its answer for ``here`` and its character offset there
        (``None``: not asked, see :meth:`_descend`), in one round trip."""
        extra = [self._at_point_call(child, here)]
        offset_call = self._offset_call(child, here)
        with_offset = scale != 1.0 or not self._bus.skipped(
            description_calls(child)[0], offset_call
        )
        if with_offset:
            extra.append(offset_call)
        nodes, replies = describe_all(self._bus, [child], deadline, extra)
        return nodes[0], replies[0], replies[1] if with_offset else None

    def _offset_call(self, ref: Ref, point: tuple[float, float]) -> Call:
        x, y = round(point[0]), round(point[1])
        return Call(ref, TEXT, "GetOffsetAtPoint", "iiu", (x, y, SCREEN))

    def _at_point_call(self, ref: Ref, point: tuple[float, float]) -> Call:
        x, y = round(point[0]), round(point[1])
        return Call(ref, COMPONENT, "GetAccessibleAtPoint", "iiu", (x, y, SCREEN))

    def _at_point(self, ref: Ref, point: tuple[float, float], deadline: float) -> tuple[Any, ...]:
        reply = self._bus.exchange([self._at_point_call(ref, point)], deadline)[0]
        if isinstance(reply, AtspiTimeoutError):
            raise reply
        return () if isinstance(reply, AtspiError) else reply

    def _child_at(
        self,
        parent: Node,
        point: tuple[float, float],
        deadline: float,
        through: int = 1,
        *,
        searched: set[Ref] | None = None,
    ) -> list[Node] | None:
        """The last showing child of ``parent`` that contains ``point``, or the path to one
        through up to ``through`` levels of showing children with no extents (GTK's notebook
        page when its tab is hidden); ``None``: none. A few children are described whole at
        once; many are glanced at (extents and states) before the chosen one is described."""
        if searched is not None:
            searched.add(parent.ref)  # its children listed: asked ahead at the next query
        refs = self._children(parent.ref, deadline)[:MAX_CHILDREN]
        if len(refs) <= _DESCRIBED_WHOLE:
            nodes = [n for n in describe_all(self._bus, refs, deadline)[0] if n is not None]
        else:
            nodes = self._glance_all(refs, deadline)
        inside = [n for n in nodes if n.visible and n.contains(point)]
        if inside:
            chosen = inside[-1]
            if not chosen.complete:
                described = describe_all(self._bus, [chosen.ref], deadline)[0][0]
                return None if described is None else [described]
            return [chosen]
        hollow = [n for n in nodes if "showing" in n.states and n.extents is None]
        for each in reversed(hollow[-3:] if through > 0 else []):
            node = each if each.complete else describe_all(self._bus, [each.ref], deadline)[0][0]
            below = (
                None
                if node is None
                else self._child_at(node, point, deadline, through - 1, searched=searched)
            )
            if node is not None and below is not None:
                return [node, *below]
        return None

    def _glance_all(self, refs: Sequence[Ref], deadline: float) -> list[Node]:
        """``refs`` known by their extents and states only (one round trip, two calls each);
        those not showing left out."""
        calls = [
            call
            for ref in refs
            for call in (
                Call(ref, COMPONENT, "GetExtents", "u", (SCREEN,)),
                Call(ref, ACCESSIBLE, "GetState"),
            )
        ]
        replies = self._bus.exchange(calls, deadline)
        found = []
        for index, ref in enumerate(refs):
            extents, state = replies[2 * index], replies[2 * index + 1]
            if isinstance(extents, AtspiTimeoutError) or isinstance(state, AtspiTimeoutError):
                raise AtspiTimeoutError("no answer in time")
            glance = _glance(ref, extents, state)
            if glance is not None:
                found.append(glance)
        return found

    def _ancestry(self, chain: list[Node], frame: Node, deadline: float) -> list[Node]:
        """The deepest node of ``chain`` and its ancestors up to ``frame``, parent first
        (the ancestors a toolkit's answer skipped asked for)."""
        known = {node.ref: node for node in chain}
        ancestry = [chain[-1]]
        while ancestry[-1].ref != frame.ref and len(ancestry) <= MAX_DEPTH:
            parent = ancestry[-1].parent
            if parent is None:
                break
            node = known.get(parent)
            if node is None:
                node = describe_all(self._bus, [parent], deadline, full=False)[0][0]
            if node is None:
                break
            ancestry.append(node)
        if ancestry[-1].ref != frame.ref:
            return chain[::-1]  # the parents led elsewhere: the descent's own path
        return ancestry

    def _completed(self, nodes: Sequence[Node], role: str, deadline: float) -> list[Node]:
        """``nodes``, those of ``role`` described whole."""
        wanted = [n.ref for n in nodes if n.role == role and not n.complete]
        if not wanted:
            return list(nodes)
        described = dict(zip(wanted, describe_all(self._bus, wanted, deadline)[0], strict=True))
        return [described.get(n.ref) or n for n in nodes]

    def _offsets(
        self, node: Node, point: tuple[float, float], deadline: float, *, at_point: bool
    ) -> tuple[int | None, int | None, int | None]:
        """A text node's character offset at ``point`` (asked when ``at_point``; else
        ``None``), its caret's offset when it has the keyboard focus (``Text.CaretOffset``;
        else ``None``) and its number of characters (``Text.CharacterCount``), asked in one
        round trip."""
        focused = "focused" in node.states
        calls = [Call(node.ref, PROPERTIES, "Get", "ss", (TEXT, "CharacterCount"))]
        if focused:
            calls.append(Call(node.ref, PROPERTIES, "Get", "ss", (TEXT, "CaretOffset")))
        if at_point:
            calls.append(self._offset_call(node.ref, point))
        replies = self._bus.exchange(calls, deadline)
        for reply in replies:
            if isinstance(reply, AtspiTimeoutError):
                raise reply
        count = _count_of(replies[0])
        caret = _count_of(replies[1]) if focused else None
        offset = _offset_of(replies[-1]) if at_point else None
        return offset, caret, count

    def _element(
        self,
        node: Node,
        ancestors: Sequence[Node],
        scale: float,
        *,
        window: tuple[int, int, int, int] | None,
        offset: int | None,
        deadline: float,
        labels: str | None = None,
    ) -> Element:
        """``node`` as an :class:`Element`, its extents counted ``scale`` screen pixels to
        the toolkit's one; ``labels``: the names of what labels it (:meth:`_labels`)."""
        frame = ancestors[-1] if ancestors else node
        if window is None and frame.extents is not None:
            window = _scaled(frame.extents, scale)
        boxes = [n.extents for n in (node, *ancestors) if n.extents is not None]
        box = _scaled(boxes[0], scale) if boxes else window or (0, 0, 1, 1)
        return Element(
            role=node.role[:80],
            name=node.name or None,
            states=tuple(sorted(node.states & STABLE_STATES)),
            ancestors=tuple(ElementRef(role=a.role[:80], name=a.name or None) for a in ancestors),
            box=box,
            window_box=window,
            text_offset=offset,
            toolkit=self._toolkit(node.ref[0], deadline),
            labelled_by=labels,
        )

    def _labels(self, nodes: Sequence[Node], deadline: float) -> list[str | None]:
        """For each of ``nodes`` that is unnamed and not a mere arrangement of others, the
        names of the elements its ``LABELLED_BY`` relation names, in the toolkit's order,
        joined by a space (``None``: named, nothing labels it, or no label has a name). Two
        round trips for all of them (the relations, then the labels' names), none when every
        node is named."""
        return self._labels_with(nodes, deadline)[0]

    def _labels_with(
        self, nodes: Sequence[Node], deadline: float
    ) -> tuple[list[str | None], dict[Ref, list[Ref]]]:
        """:meth:`_labels`, with what each node asked names as its labels."""
        asked = [n for n in nodes if _may_be_labelled(n)]
        if not asked:
            return [None] * len(nodes), {}
        replies = self._bus.exchange(
            [Call(n.ref, ACCESSIBLE, "GetRelationSet") for n in asked], deadline
        )
        targets: dict[Ref, list[Ref]] = {}
        for node, reply in zip(asked, replies[: len(asked)], strict=True):
            if isinstance(reply, AtspiTimeoutError):
                raise reply
            targets[node.ref] = [] if isinstance(reply, AtspiError) else _labelled_by(reply)
        wanted = list(dict.fromkeys(ref for refs in targets.values() for ref in refs))
        names: dict[Ref, str] = {}
        if wanted:
            calls = [Call(ref, PROPERTIES, "Get", "ss", (ACCESSIBLE, "Name")) for ref in wanted]
            for ref, reply in zip(wanted, self._bus.exchange(calls, deadline), strict=True):
                if isinstance(reply, AtspiTimeoutError):
                    raise reply
                value = None if isinstance(reply, AtspiError) or not reply else _value(reply[0])
                if isinstance(value, str) and value.strip():
                    names[ref] = " ".join(value.split())
        found: list[str | None] = []
        for node in nodes:
            words = [names[ref] for ref in targets.get(node.ref, []) if ref in names]
            found.append(" ".join(words)[:300] or None)
        return found, targets

    def _toolkit(self, name: str, deadline: float) -> str | None:
        if name not in self._toolkits:
            reply = self._bus.exchange(
                [Call((name, _ROOT), PROPERTIES, "Get", "ss", (APPLICATION, "ToolkitName"))],
                deadline,
            )[0]
            if isinstance(reply, AtspiTimeoutError):
                raise reply
            value = None if isinstance(reply, AtspiError) or not reply else reply[0]
            value = _value(value)
            self._toolkits[name] = str(value)[:80] if value else None
        return self._toolkits[name]

    # --- the walk -----------------------------------------------------------------------

    def _walk(
        self, frame: Node, role: str, name: str, units: _Units, deadline: float
    ) -> list[tuple[Node, list[Node], float]] | None:
        """The showing nodes under ``frame`` with ``role`` and ``name``, each with its
        ancestors (parent first) and unit; ``None``: the tree is larger than the bounds.
        One round trip per level: the level's descriptions and their children's lists are
        asked together."""
        return self._walk_where(frame, lambda n: n.role == role and n.name == name, units, deadline)

    def _walk_where(
        self, frame: Node, keep: Callable[[Node], bool], units: _Units, deadline: float
    ) -> list[tuple[Node, list[Node], float]] | None:
        """:meth:`_walk` for the showing nodes with extents that ``keep`` keeps."""
        found: list[tuple[Node, list[Node], float]] = []
        seen = 1
        last = self._walked.get(frame.ref)
        ahead = [] if last is None else last.calls()
        replies = self._bus.exchange([Call(frame.ref, ACCESSIBLE, "GetChildren"), *ahead], deadline)
        self._bus.remember(ahead, replies[1:])
        children = replies[:1]
        walked: list[Ref] = []
        parents: list[tuple[Node, list[Node], float, tuple[Any, ...] | AtspiError]] = [
            (frame, [], units.scale, children[0])
        ]
        for _ in range(MAX_DEPTH):
            pairs: list[tuple[Ref, list[Node], float]] = []
            for node, path, unit, reply in parents:
                if not node.child_count:
                    continue
                if isinstance(reply, AtspiTimeoutError):
                    raise reply
                if isinstance(reply, AtspiError) or not reply:
                    continue
                for child in reply[0]:
                    ref = as_ref(child)
                    if ref is not None:
                        pairs.append((ref, [node, *path], unit))
            if not pairs:
                self._walked[frame.ref] = _Walked(
                    tuple(walked[:_WALKED_AHEAD]), () if last is None else last.labels
                )
                return found
            seen += len(pairs)
            if seen > MAX_NODES:
                self._walked.pop(frame.ref, None)
                return None
            refs = [ref for ref, _, _ in pairs]
            walked.extend(refs)
            nodes, lists = describe_all(
                self._bus, refs, deadline, [Call(ref, ACCESSIBLE, "GetChildren") for ref in refs]
            )
            parents = []
            for (_, path, unit), child, listed in zip(pairs, nodes, lists, strict=True):
                if child is None or "showing" not in child.states:
                    continue
                inner = units.below(child, unit)
                if child.extents is not None and keep(child):
                    found.append((child, path, inner))
                parents.append((child, path, inner, listed))
        return None

    # --- small calls --------------------------------------------------------------------

    def _children(self, ref: Ref, deadline: float) -> list[Ref]:
        reply = self._call(ref, "GetChildren", deadline)
        return [r for r in (as_ref(c) for c in (reply[0] if reply else ())) if r is not None]

    def _call(
        self,
        ref: Ref,
        method: str,
        deadline: float,
        *,
        interface: str = ACCESSIBLE,
        signature: str | None = None,
        args: tuple[Any, ...] = (),
    ) -> tuple[Any, ...]:
        """One call's reply; ``()`` when the object answered with an error (it went away,
        or has no such interface); a timeout raised."""
        reply = self._bus.exchange([Call(ref, interface, method, signature, args)], deadline)[0]
        if isinstance(reply, AtspiTimeoutError):
            raise reply
        return () if isinstance(reply, AtspiError) else reply


class _Memo:
    """The bus, with the replies to calls asked ahead of one query: a call asked again
    within it is answered from them, not sent again (:meth:`AtspiElements.element_at`
    asks the nodes it found at its last query with the frames, in one round trip; where the
    tree is as it was, the descent then needs no other)."""

    def __init__(self, bus: AtspiBus) -> None:
        self.bus = bus
        self._ahead = threading.local()

    def _known(self) -> dict[Call, tuple[Any, ...] | AtspiError]:
        known: dict[Call, tuple[Any, ...] | AtspiError] | None = getattr(self._ahead, "known", None)
        if known is None:
            known = self._ahead.known = {}
        return known

    def remember(
        self, calls: Sequence[Call], replies: Sequence[tuple[Any, ...] | AtspiError]
    ) -> None:
        """Keep ``replies`` (to ``calls``) for this thread's query (a call that timed out
        is asked again)."""
        known = self._known()
        for call, reply in zip(calls, replies, strict=True):
            if not isinstance(reply, AtspiTimeoutError):
                known[call] = reply

    def skipped(self, asked: Call, left: Call) -> bool:
        """True when ``asked`` was asked ahead of this query and ``left`` was not (the
        prediction left it out)."""
        known = self._known()
        return asked in known and left not in known

    def forget(self) -> None:
        """Drop the replies kept (the query ended)."""
        self._known().clear()

    def exchange(
        self, calls: Sequence[Call], deadline: float
    ) -> list[tuple[Any, ...] | AtspiError]:
        """:meth:`AtspiBus.exchange`, answering the calls kept from the replies kept."""
        known = self._known()
        missing = [call for call in calls if call not in known]
        if not missing:
            return [known[call] for call in calls]
        sent = dict(zip(missing, self.bus.exchange(missing, deadline), strict=True))
        return [known[call] if call in known else sent[call] for call in calls]

    def close(self) -> None:
        self.forget()
        self.bus.close()


@dataclass(frozen=True)
class _Hint:
    """What the last :meth:`AtspiElements.element_at` below a frame asked besides the
    nodes' descriptions and answers (asked ahead at the next, :meth:`~AtspiElements._predicted`)."""

    texts: frozenset[Ref]
    """The nodes passed that were text elements (their offset at the point is asked)."""
    searched: frozenset[Ref]
    """The nodes whose children were listed (the frame's too, when it was)."""
    target: Ref
    """The element found."""
    text: bool
    """It was a text element (its number of characters, caret and offset were asked)."""
    labelled: bool
    """It was unnamed and not a mere arrangement (its ``LABELLED_BY`` relations were asked)."""
    labels: tuple[Ref, ...]
    """What those relations named (their names were asked)."""


@dataclass(frozen=True)
class _Walked:
    """What the last walk of a frame asked (:meth:`AtspiElements._walk_where`): asked again
    in the next walk's first round trip, so that where the tree is as it was, the walk and
    the labels of what it found (:meth:`AtspiElements.elements_like`) take one round trip,
    not one per level; where it changed, what was not asked ahead is asked as before."""

    refs: tuple[Ref, ...]
    """The nodes it described, level by level."""
    labels: tuple[Call, ...] = ()
    """The calls that asked what labels the elements it found, and their labels' names."""

    def calls(self) -> list[Call]:
        """The calls asked ahead: each node's description and list of children, then the
        labels'."""
        calls = [
            call
            for ref in self.refs
            for call in (*description_calls(ref), Call(ref, ACCESSIBLE, "GetChildren"))
        ]
        return [*calls, *self.labels]


def _may_be_labelled(node: Node) -> bool:
    """True when what labels ``node`` is asked (:meth:`AtspiElements._labels`): it is
    unnamed and not a mere arrangement of others."""
    return not node.name and node.role not in _STRUCTURE


@dataclass(frozen=True)
class _Window:
    """The frame on top at a point (:meth:`AtspiElements._window`)."""

    frame: Node
    scale: float
    box: tuple[int, int, int, int] | None
    answer: tuple[float, tuple[Any, ...]] | None = None
    """The frame's answer for the point and the unit it was asked in, when it came with
    the frames."""


@dataclass(frozen=True)
class _Menu:
    """An open menu's popup window (:meth:`AtspiElements._menu`)."""

    box: tuple[int, int, int, int]
    """The popup's box in screen pixels."""
    scale: float
    items: list[tuple[Node, list[Node], float]]
    """Its showing items, each with its ancestors (parent first) and unit."""


class _Units:
    """How many screen pixels make one of a toolkit's, node by node.

    A toolkit at a scale speaks logical pixels (the frame's scale, :func:`_scale_of`), but
    Chromium's web content speaks the screen's own pixels while its window around the page
    speaks logical ones: a ``document web`` whose extents do not fit in its frame counted
    in logical pixels but do in the screen's is such content, and so is all below it."""

    def __init__(self, frame: Node, scale: float, box: tuple[int, int, int, int] | None) -> None:
        self.scale = scale
        self.frame = frame.extents
        self.box = box

    def below(self, node: Node, unit: float) -> float:
        """The unit of ``node``, whose parent's is ``unit``."""
        if unit == 1.0 or node.role != "document web" or node.extents is None:
            return unit
        if self.frame is None or self.box is None or _fits(node.extents, self.frame):
            return unit
        return 1.0 if _fits(node.extents, self.box) else unit

    def of(self, node: Node, ancestors: Sequence[Node]) -> float:
        """The unit of ``node``, whose ancestors (parent first) are ``ancestors``."""
        unit = self.scale
        for each in (*reversed(ancestors), node):
            unit = self.below(each, unit)
        return unit


def _unit_inside(node: Node, point: Point, unit: float) -> float | None:
    """The unit in which ``node``'s extents contain ``point`` (screen pixels): its parent's
    ``unit``, else the screen's own (Chromium's page inside its window); ``None``: neither."""
    if node.contains(_logical(point, unit)):
        return unit
    if unit != 1.0 and node.contains((point[0], point[1])):
        return 1.0
    return None


def _fits(inner: tuple[int, int, int, int], outer: tuple[int, int, int, int]) -> bool:
    """True when box ``inner`` lies inside ``outer`` (give or take two pixels)."""
    x, y, width, height = inner
    ox, oy, owidth, oheight = outer
    return (
        x >= ox - 2
        and y >= oy - 2
        and x + width <= ox + owidth + 2
        and y + height <= oy + oheight + 2
    )


def _fills(box: tuple[int, int, int, int], items: Sequence[tuple[int, int, int, int]]) -> bool:
    """True when ``items`` (boxes, screen pixels, ``box`` holding each) span most of
    ``box``'s height: they are what the popup shows, not items of another menu (or of this
    one at another scale) that happen to lie inside it."""
    top = min(item[1] for item in items)
    bottom = max(item[1] + item[3] for item in items)
    return (bottom - top) >= 0.8 * box[3]


def _logical(point: Point, unit: float) -> tuple[float, float]:
    return (point[0] / unit, point[1] / unit)


def _glance(
    ref: Ref, extents: tuple[Any, ...] | AtspiError, state: tuple[Any, ...] | AtspiError
) -> Node | None:
    """A node known by its extents and states only (``None``: not showing)."""
    words = state[0] if not isinstance(state, AtspiError) and state else ()
    states = state_names([int(w) for w in words])
    if "showing" not in states:
        return None
    return Node(ref, "", "", None, states, _extents_of(extents))


def _offset_of(reply: tuple[Any, ...] | AtspiError) -> int | None:
    """A ``GetOffsetAtPoint`` reply's offset; ``None``: an error, or -1 (no offset)."""
    if isinstance(reply, AtspiError) or not reply or not isinstance(reply[0], int):
        return None
    return reply[0] if reply[0] >= 0 else None


def _count_of(reply: tuple[Any, ...] | AtspiError) -> int | None:
    """A ``Text`` property's whole number (an offset, a count); ``None``: an error, or
    negative."""
    value = None if isinstance(reply, AtspiError) or not reply else _value(reply[0])
    return value if isinstance(value, int) and value >= 0 else None


_LABELLED_BY = 2
"""AT-SPI's ``ATSPI_RELATION_LABELLED_BY``."""


def _labelled_by(reply: tuple[Any, ...]) -> list[Ref]:
    """The targets of the ``LABELLED_BY`` relations in a ``GetRelationSet`` reply
    (``a(ua(so))``)."""
    found: list[Ref] = []
    for relation in reply[0] if reply else ():
        if not isinstance(relation, tuple | list) or len(relation) != 2:
            continue
        kind, targets = relation
        if kind != _LABELLED_BY or not isinstance(targets, tuple | list):
            continue
        found.extend(ref for ref in (as_ref(t) for t in targets) if ref is not None)
    return found


def _reply_of(reply: tuple[Any, ...] | AtspiError) -> Any:
    """A reply's first value (``None``: an error, or none)."""
    return None if isinstance(reply, AtspiError) or not reply else reply[0]


def _value(value: Any) -> Any:
    """A variant's value (``(signature, value)``), or ``value``."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return value[1]
    return value


def _matching(frames: list[Node] | None, window: StackedWindow) -> tuple[Node, float] | None:
    """The one frame of ``frames`` that is ``window`` at some scale (two: the one titled as
    the window); ``None``: none, or more than one."""
    matched = [
        (frame, scale)
        for frame in frames or ()
        if frame.extents is not None
        for scale in [_scale_of(frame.extents, window)]
        if scale is not None
    ]
    if len(matched) > 1:
        matched = [
            (f, s) for f, s in matched if window.title is not None and f.name == window.title
        ]
    return matched[0] if len(matched) == 1 else None


def _target(ancestry: list[Node]) -> int:
    """Which of ``ancestry`` (the deepest node first, its frame last) an action on the
    first reaches: a control for its inner part, a named or meaningful node for an unnamed
    filler."""
    leaf = ancestry[0]
    if leaf.role in _INNER or (leaf.role == "text" and "editable" not in leaf.states):
        for index, node in enumerate(ancestry[1:4], start=1):
            if node.role in _CONTROLS:
                return index
            if node.role not in _INNER:
                break
    index = 0
    while (
        index < len(ancestry) - 1
        and ancestry[index].role in _STRUCTURE
        and not ancestry[index].name
    ):
        index += 1
    return index


def _scale_of(extents: tuple[int, int, int, int], window: StackedWindow) -> float | None:
    """The scale at which a frame's extents are ``window``'s client box (or its frame's,
    when a toolkit counts a window manager's decorations); ``None``: at none."""
    for box in (window.box, window.outer):
        for scale in _SCALES:
            slack = math.ceil(scale) + 1
            if all(abs(e * scale - b) <= slack for e, b in zip(extents, box, strict=True)):
                return scale
    return None


def _only_frame(frames: list[Node], point: Point) -> Node | None:
    inside = [frame for frame in frames if frame.contains(point)]
    if len(inside) > 1:
        inside = [frame for frame in inside if "active" in frame.states]
    return inside[0] if len(inside) == 1 else None


def _scaled(extents: tuple[int, int, int, int], scale: float) -> tuple[int, int, int, int]:
    x, y, width, height = extents
    return (
        round(x * scale),
        round(y * scale),
        max(1, round(width * scale)),
        max(1, round(height * scale)),
    )
