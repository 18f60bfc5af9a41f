"""The X11 windows of a display: the only module that asks the X server about windows.

:func:`list_windows` answers :meth:`askcache.foundation.screen.windows.WindowSource.windows` for an
open python-xlib ``Display``. Under a window manager that keeps EWMH's
``_NET_CLIENT_LIST_STACKING`` (or ``_NET_CLIENT_LIST``), its client windows; without one (a
bare Xvfb), the root's mapped children, each taken as itself or, when it has no class (a
frame a window manager drew around it), as its first child that has one. Frames are client
areas in root coordinates. A window that goes away while it is asked about is left out. Atoms
are looked up once per connection (``get_atom``), not at every listing.

:func:`window_at` answers another question: which window is on top at a point, whatever
kind it is (a popup menu, which no window manager lists, included), and which process drew
it (``_NET_WM_PID``): what an action at that point reaches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from askcache.foundation.geometry import Point
from askcache.foundation.screen.windows import WindowFrame

__all__ = ["StackedWindow", "list_windows", "window_at"]


@dataclass(frozen=True)
class StackedWindow:
    """The window on top at a point (:func:`window_at`)."""

    box: tuple[int, int, int, int]
    """Its client area (``x``, ``y``, width, height) in root coordinates."""
    outer: tuple[int, int, int, int]
    """The same of the window around it that a window manager drew (the client's own box
    without one)."""
    pid: int | None
    """The process that drew it (``_NET_WM_PID``); ``None``: not set."""
    title: str | None
    """Its title (``None``: not set)."""
    popup: bool
    """True for a window no window manager manages (override-redirect: a menu, a tooltip)."""


def list_windows(display: Any) -> list[WindowFrame]:
    """The visible top-level windows of ``display`` (python-xlib), bottom first."""
    from Xlib import X
    from Xlib.error import XError

    root = display.screen().root
    clients = _client_list(display, root)
    if clients is None:
        clients = [_named(display, child) for child in root.query_tree().children]
    found = []
    for window in clients:
        if window is None:
            continue
        try:
            if window.get_attributes().map_state != X.IsViewable:
                continue
            geometry = window.get_geometry()
            origin = window.translate_coords(root, 0, 0)
            frame = WindowFrame(
                x=-int(origin.x),
                y=-int(origin.y),
                width=max(1, int(geometry.width)),
                height=max(1, int(geometry.height)),
                wm_class=_class_of(window),
                title=_title_of(display, window),
            )
        except XError:
            continue
        found.append(frame)
    return found


def _client_list(display: Any, root: Any) -> list[Any] | None:
    """The window manager's clients, bottom first; ``None`` when no EWMH manager runs."""
    for name in ("_NET_CLIENT_LIST_STACKING", "_NET_CLIENT_LIST"):
        prop = root.get_full_property(display.get_atom(name), 0)  # 0: AnyPropertyType
        if prop is not None and len(prop.value):
            return [display.create_resource_object("window", int(w)) for w in prop.value]
    return None


def _named(display: Any, window: Any) -> Any | None:
    """``window``, or its first child with a class (a window manager's frame)."""
    from Xlib.error import XError

    try:
        if _class_of(window) is not None:
            return window
        for child in window.query_tree().children:
            if _class_of(child) is not None:
                return child
    except XError:
        return None
    return window


def _class_of(window: Any) -> str | None:
    found = window.get_wm_class()
    if not found:
        return None
    return str(found[1] or found[0])[:200] or None


def _title_of(display: Any, window: Any) -> str | None:
    prop = window.get_full_property(
        display.get_atom("_NET_WM_NAME"), display.get_atom("UTF8_STRING")
    )
    if prop is not None and prop.value:
        value = prop.value
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    else:
        name = window.get_wm_name()
        if not name:
            return None
        text = name.decode("latin-1") if isinstance(name, bytes) else str(name)
    return text[:500] or None


def window_at(display: Any, point: Point) -> StackedWindow | None:
    """The topmost viewable window of ``display`` (python-xlib) whose frame contains ``point``,
    described by its client (the window inside a window manager's frame); ``None``: none, or
    the point is on the frame's decoration, outside the client. The X server names it
    (``TranslateCoordinates``' child: one round trip, whatever the number of windows); past
    an input-only window there, the root's children are looked at from the top."""
    from Xlib import X
    from Xlib.error import XError

    root = display.screen().root
    try:
        child = root.translate_coords(root, point[0], point[1]).child
        if not child:
            return None
        attributes = child.get_attributes()
        if attributes.map_state == X.IsViewable and attributes.win_class != X.InputOnly:
            geometry = child.get_geometry()
            if _outer(geometry, point) is not None:
                return _described(display, child, geometry, attributes, point)
    except XError:
        pass
    for window in reversed(root.query_tree().children):
        try:
            attributes = window.get_attributes()
            if attributes.map_state != X.IsViewable or attributes.win_class == X.InputOnly:
                continue
            geometry = window.get_geometry()
            if _outer(geometry, point) is not None:
                return _described(display, window, geometry, attributes, point)
        except XError:
            continue
    return None


def _outer(geometry: Any, point: Point) -> tuple[int, int, int, int] | None:
    """A root child's box, borders included, when it contains ``point``."""
    left, top = int(geometry.x), int(geometry.y)
    border = 2 * int(geometry.border_width)
    width, height = int(geometry.width) + border, int(geometry.height) + border
    inside = left <= point[0] < left + width and top <= point[1] < top + height
    return (left, top, width, height) if inside else None


def _described(
    display: Any, window: Any, geometry: Any, attributes: Any, point: Point
) -> StackedWindow | None:
    """``window`` (a child of the root, containing ``point``) described by its client;
    ``None``: the point is on the decoration a window manager drew around the client."""
    outer = _outer(geometry, point)
    assert outer is not None
    client = _named(display, window) or window
    if client.id == window.id:
        box = (outer[0], outer[1], int(geometry.width), int(geometry.height))
    else:
        inner = client.get_geometry()
        origin = client.translate_coords(display.screen().root, 0, 0)
        box = (-int(origin.x), -int(origin.y), int(inner.width), int(inner.height))
    x, y = point
    if not (box[0] <= x < box[0] + box[2] and box[1] <= y < box[1] + box[3]):
        return None
    return StackedWindow(
        box=box,
        outer=outer,
        pid=_pid_of(display, client),
        title=_title_of(display, client),
        popup=bool(attributes.override_redirect),
    )


def _pid_of(display: Any, window: Any) -> int | None:
    prop = window.get_full_property(display.get_atom("_NET_WM_PID"), 0)  # 0: AnyPropertyType
    if prop is None or not len(prop.value):
        return None
    return int(prop.value[0])
