"""AT-SPI's numbers, named: roles and states as ``libatspi`` names them.

An application's bridge answers ``GetRoleName`` in its own words (GTK's ``statusbar`` is
Qt's ``status bar``); the role's number is the same everywhere, so :func:`role_name` names
the number, as ``atspi_role_get_name`` does (AT-SPI 2.46's ``AtspiRole``). States come as a
bit set of ``AtspiStateType`` (:func:`state_names`).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["STATE_NAMES", "role_name", "state_names"]

_ROLES = (
    "invalid", "accelerator label", "alert", "animation", "arrow", "calendar", "canvas",
    "check box", "check menu item", "color chooser", "column header", "combo box", "date editor",
    "desktop icon", "desktop frame", "dial", "dialog", "directory pane", "drawing area",
    "file chooser", "filler", "focus traversable", "font chooser", "frame", "glass pane",
    "html container", "icon", "image", "internal frame", "label", "layered pane", "list",
    "list item", "menu", "menu bar", "menu item", "option pane", "page tab", "page tab list",
    "panel", "password text", "popup menu", "progress bar", "push button", "radio button",
    "radio menu item", "root pane", "row header", "scroll bar", "scroll pane", "separator",
    "slider", "spin button", "split pane", "status bar", "table", "table cell",
    "table column header", "table row header", "tearoff menu item", "terminal", "text",
    "toggle button", "tool bar", "tool tip", "tree", "tree table", "unknown", "viewport",
    "window", "extended", "header", "footer", "paragraph", "ruler", "application", "autocomplete",
    "editbar", "embedded", "entry", "chart", "caption", "document frame", "heading", "page",
    "section", "redundant object", "form", "link", "input method window", "table row",
    "tree item", "document spreadsheet", "document presentation", "document text", "document web",
    "document email", "comment", "list box", "grouping", "image map", "notification", "info bar",
    "level bar", "title bar", "block quote", "audio", "video", "definition", "article",
    "landmark", "log", "marquee", "math", "rating", "timer", "static", "math fraction",
    "math root", "subscript", "superscript", "description list", "description term",
    "description value", "footnote", "content deletion", "content insertion", "mark",
    "suggestion", "push button menu",
)  # fmt: skip
"""``AtspiRole``'s names by number."""

STATE_NAMES = (
    "invalid", "active", "armed", "busy", "checked", "collapsed", "defunct", "editable",
    "enabled", "expandable", "expanded", "focusable", "focused", "has_tooltip", "horizontal",
    "iconified", "modal", "multi_line", "multiselectable", "opaque", "pressed", "resizable",
    "selectable", "selected", "sensitive", "showing", "single_line", "stale", "transient",
    "vertical", "visible", "manages_descendants", "indeterminate", "required", "truncated",
    "animated", "invalid_entry", "supports_autocompletion", "selectable_text", "is_default",
    "visited", "checkable", "has_popup", "read_only",
)  # fmt: skip
"""``AtspiStateType``'s names by number (``-`` written ``_``)."""


def role_name(number: int) -> str | None:
    """The name of role ``number`` (``push button``); ``None``: a number AT-SPI 2.46 does not
    know (the caller asks the application for its own name)."""
    if 0 < number < len(_ROLES):
        return _ROLES[number]
    return None


def state_names(words: Sequence[int]) -> frozenset[str]:
    """The states set in AT-SPI's bit set (``GetState``'s two 32-bit words)."""
    found = set()
    for word_index, word in enumerate(words[:2]):
        for bit in range(32):
            number = word_index * 32 + bit
            if word >> bit & 1 and number < len(STATE_NAMES):
                found.add(STATE_NAMES[number])
    return frozenset(found)
