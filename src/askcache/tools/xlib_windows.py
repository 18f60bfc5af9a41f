"""The X11 windows of a display: the only module that asks the X server about windows.

:func:`list_windows` answers :meth:`askcache.foundation.screen.windows.WindowSource.windows` for an
open python-xlib ``Display``. Under a window manager that keeps EWMH's
``_NET_CLIENT_LIST_STACKING`` (or ``_NET_CLIENT_LIST``), its client windows; without one (a
bare Xvfb), the root's mapped children, each taken as itself or, when it has no class (a
frame a window manager drew around it), as its first child that has one. Frames are client
areas in root coordinates. A window that goes away while it is asked about is left out. Atoms
are looked up once per connection (``get_atom``), not at every listing.
"""

from __future__ import annotations

from typing import Any

from askcache.foundation.screen.windows import WindowFrame

__all__ = ["list_windows"]


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
