"""A small form application drawn with Pillow: a screen for offline tests and demos.

:class:`SimulatedFormApp` implements :class:`~askcache.tools.computer.ComputerBackend`: clicks
focus fields and press buttons, typing fills the focused field, ``Save`` stores the form.
Screenshots are real PNG renderings. :meth:`SimulatedFormApp.set_layout` moves things around
to simulate an application update, the case visual validation exists for.

:class:`FormFillingScript` is a scripted stand-in for the model (no AI): it answers each
request from the app's current layout and state. Use it with
:class:`~askcache.testing.MessagesApiStandIn` to run an agent offline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from PIL import Image, ImageDraw, ImageFont

from askcache.foundation.geometry import Point
from askcache.foundation.screen.elements import Element, ElementRef
from askcache.testing.messages_api import Reply, text_reply, tool_use_reply

__all__ = ["FormFillingScript", "FormView", "Layout", "SimulatedFormApp", "Widget"]

Layout = Literal["original", "banner", "swapped"]
"""``original``; ``banner``: a notice pushes the form down (``Escape`` dismisses it);
``swapped``: Save and Clear swap."""

_FONT_SIZE = 16


@dataclass(frozen=True)
class Widget:
    """A rectangle on screen with a role."""

    name: str
    """Identifier, e.g. ``name`` or ``save``."""
    kind: Literal["field", "button"]
    """What it is."""
    label: str
    """Caption drawn on or beside it."""
    box: tuple[int, int, int, int]
    """``(left, top, right, bottom)``."""

    @property
    def center(self) -> Point:
        """Its middle point."""
        left, top, right, bottom = self.box
        return ((left + right) // 2, (top + bottom) // 2)

    def contains(self, point: Point) -> bool:
        """True when ``point`` is inside."""
        left, top, right, bottom = self.box
        return left <= point[0] < right and top <= point[1] < bottom


@dataclass
class SimulatedFormApp:
    """A contact form: Name and Email fields, Save and Clear buttons, a status line."""

    width: int = 640
    height: int = 400
    layout: Layout = "original"
    values: dict[str, str] = field(default_factory=lambda: {"name": "", "email": ""})
    saved: list[dict[str, str]] = field(default_factory=list)
    focus: str | None = None
    status: str = "Ready"
    pointer_at: Point = (0, 0)
    events: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    """Drawn labels that differ from the original ones, by button (an update that relabelled
    it)."""
    accessible: bool = False
    """The form answers what element is where (:meth:`elements`), as an application with an
    accessibility tree does (the element anchors' tests); ``False``: as one without (Tk, X
    Athena), so steps are checked by their pixels (and labels) alone."""
    names: dict[str, str] = field(default_factory=dict)
    """Accessible names that differ from the drawn labels, by widget (an update that renamed
    a control's accessible name and not its text)."""
    offsets: bool = True
    """The fields say which character is at a point (GTK's do); ``False``: only where their
    caret is, as Qt's and Chromium's fields (the focused field's caret is always said)."""
    dark: bool = False
    """Drawn in a dark theme: the same form at the same density, drawn otherwise."""
    undescribed: frozenset[str] = frozenset()
    """Widgets the tree does not describe (as toolkits leave an open menu's items out): at
    them it answers nothing, and their steps are checked by their pixels and labels."""

    def set_layout(self, layout: Layout) -> None:
        """Switch to another layout (the application "was updated")."""
        self.layout = layout

    @property
    def zoom(self) -> float:
        """Drawing scale: the layout is designed for 640 pixels wide and grows with the screen."""
        return self.width / 640

    def _box(
        self, left: float, top: float, right: float, bottom: float
    ) -> tuple[int, int, int, int]:
        z = self.zoom
        return (round(left * z), round(top * z), round(right * z), round(bottom * z))

    def widgets(self) -> list[Widget]:
        """The widgets at their positions in the current layout."""
        top = 150 if self.layout == "banner" else 70
        save_x, clear_x = (200, 60) if self.layout == "swapped" else (60, 200)
        return [
            Widget("name", "field", "Name", self._box(160, top, 560, top + 36)),
            Widget("email", "field", "Email", self._box(160, top + 60, 560, top + 96)),
            Widget(
                "save",
                "button",
                self.labels.get("save", "Save"),
                self._box(save_x, top + 140, save_x + 110, top + 180),
            ),
            Widget(
                "clear",
                "button",
                self.labels.get("clear", "Clear"),
                self._box(clear_x, top + 140, clear_x + 110, top + 180),
            ),
        ]

    def widget(self, name: str) -> Widget:
        """The widget called ``name``."""
        return next(w for w in self.widgets() if w.name == name)

    def widget_at(self, point: Point) -> Widget | None:
        """The widget under ``point``, if any."""
        return next((w for w in self.widgets() if w.contains(point)), None)

    # ElementReporter: what an accessibility tree would say -------------------------------

    def elements(self) -> SimulatedFormApp | None:
        """The form itself, when it is :attr:`accessible`."""
        return self if self.accessible else None

    def _element(self, widget: Widget, point: Point | None = None) -> Element:
        left, top, right, bottom = widget.box
        states = ("editable", "enabled") if widget.kind == "field" else ("enabled",)
        return Element(
            role="text" if widget.kind == "field" else "push button",
            name=self.names.get(widget.name, widget.label),
            states=states,
            ancestors=(
                ElementRef(role="panel", name="Contact"),
                ElementRef(role="frame", name="Contacts - New entry"),
            ),
            box=(left, top, right - left, bottom - top),
            window_box=(0, 0, self.width, self.height),
            text_offset=None if widget.kind != "field" or point is None or not self.offsets else 0,
            caret_offset=(
                len(self.values[widget.name])
                if widget.kind == "field" and self.focus == widget.name
                else None
            ),
            character_count=len(self.values[widget.name]) if widget.kind == "field" else None,
            toolkit="simulated",
        )

    def element_at(self, point: Point) -> Element | None:
        widget = self.widget_at(point)
        if widget is None or widget.name in self.undescribed:
            return None
        return self._element(widget, point)

    def elements_like(self, element: Element, window_point: Point) -> list[Element] | None:
        described = [w for w in self.widgets() if w.name not in self.undescribed]
        found = [self._element(widget) for widget in described]
        return [e for e in found if e.role == element.role and e.name == element.name]

    # ComputerBackend -------------------------------------------------------------------

    @property
    def size(self) -> tuple[int, int]:
        return (self.width, self.height)

    def screenshot(self) -> Image.Image:
        z = self.zoom
        font = ImageFont.load_default(size=round(_FONT_SIZE * z))
        ink, paper = ("white", (45, 45, 50)) if self.dark else ("black", "white")
        image = Image.new("RGB", self.size, (30, 32, 36) if self.dark else (236, 239, 244))
        draw = ImageDraw.Draw(image)
        draw.rectangle(self._box(0, 0, 640, 36), fill=(15, 15, 20) if self.dark else (52, 73, 94))
        draw.text((12 * z, 9 * z), "Contacts - New entry", font=font, fill="white")
        if self.layout == "banner":
            draw.rectangle(
                self._box(20, 56, 620, 120), fill=(255, 243, 205), outline=(200, 160, 60)
            )
            notice = "Update: a new version of Contacts is installed."
            draw.text((36 * z, 78 * z), notice, font=font, fill=(90, 70, 20))
        for widget in self.widgets():
            left, top, right, _ = widget.box
            if widget.kind == "field":
                draw.text((left - 90 * z, top + 9 * z), f"{widget.label}:", font=font, fill=ink)
                outline = (52, 120, 220) if self.focus == widget.name else (150, 150, 150)
                draw.rectangle(widget.box, fill=paper, outline=outline, width=max(1, round(2 * z)))
                draw.text(
                    (left + 8 * z, top + 9 * z), self.values[widget.name], font=font, fill=ink
                )
            else:
                fill = (46, 125, 50) if widget.name == "save" else (120, 120, 120)
                draw.rounded_rectangle(widget.box, radius=round(6 * z), fill=fill)
                text_width = draw.textlength(widget.label, font=font)
                x = (left + right - text_width) / 2
                draw.text((x, top + 11 * z), widget.label, font=font, fill="white")
        status = (200, 200, 200) if self.dark else (60, 60, 60)
        draw.text((20 * z, self.height - 30 * z), f"Status: {self.status}", font=font, fill=status)
        return image

    def click(self, point: Point | None, button: str, count: int, modifiers: str | None) -> None:
        if point is not None:
            self.pointer_at = point
        target = self.widget_at(self.pointer_at)
        self.events.append(f"{button}_click {self.pointer_at} -> {target.name if target else None}")
        if target is None or button != "left":
            return
        if target.kind == "field":
            self.focus = target.name
        elif target.name == "save":
            self._save()
        else:
            self.values = dict.fromkeys(self.values, "")
            self.status = "Cleared"

    def _save(self) -> None:
        self.saved.append(dict(self.values))
        self.status = f"Saved {self.values['name'] or '(empty)'}"

    def drag(self, start: Point, end: Point) -> None:
        self.pointer_at = end

    def mouse_button(self, down: bool) -> None:
        return

    def move(self, point: Point) -> None:
        self.pointer_at = point

    def type_text(self, text: str) -> None:
        if self.focus is None:
            raise ValueError("no field has the keyboard focus; click a field first")
        self.values[self.focus] += text

    def key(self, combo: str, repeat: int) -> None:
        for _ in range(repeat):
            if combo in ("Return", "KP_Enter"):
                self._save()
            elif combo == "Tab":
                self.focus = "email" if self.focus == "name" else "name"
            elif combo == "BackSpace" and self.focus:
                self.values[self.focus] = self.values[self.focus][:-1]
            elif combo == "Escape":
                if self.layout == "banner":  # the notice can be dismissed
                    self.layout = "original"
            else:
                raise ValueError(f"the form does not handle the key {combo!r}")

    def scroll(self, point: Point | None, direction: str, amount: int) -> None:
        return

    def pointer(self) -> Point:
        return self.pointer_at


class FormView(Protocol):
    """What the scripted model reads of a form app: values, saved rows, focus, widgets."""

    @property
    def values(self) -> dict[str, str]: ...
    @property
    def saved(self) -> list[dict[str, str]]: ...
    @property
    def focus(self) -> str | None: ...
    def widget(self, name: str) -> Widget: ...


class FormFillingScript:
    """A scripted model (not AI) that fills the form's Name field with ``name`` and saves.

    Called with each request body, it looks at the app (not at the screenshot) and answers
    with the next sensible computer action, so it can also take over after a replay hands
    back on a changed layout. ``shape`` picks the computer tool's shape; ``to_model`` maps a
    screen position to the model's coordinates (``ComputerTool.from_screen``) when the
    screenshots are scaled.
    """

    def __init__(
        self,
        app: FormView,
        name: str,
        *,
        shape: Literal["tool", "toolset"] = "tool",
        to_model: Callable[[Point], Point] | None = None,
    ) -> None:
        self.app = app
        self.name = name
        self.shape = shape
        self.to_model = to_model
        self.calls = 0

    def _at(self, widget: str) -> list[int]:
        point = self.app.widget(widget).center
        return list(self.to_model(point) if self.to_model else point)

    def _action(self, action: str, **arguments: Any) -> Reply:
        if self.shape == "toolset":
            return tool_use_reply(action, arguments, toolset_name="computer")
        return tool_use_reply("computer", {"action": action, **arguments})

    def __call__(self, request: dict[str, Any]) -> Reply:
        self.calls += 1
        app = self.app
        values, saved = app.values, app.saved
        last = request["messages"][-1]
        saw_screen = isinstance(last.get("content"), list) and any(
            block.get("type") == "tool_result" for block in last["content"]
        )
        if not saw_screen:
            return self._action("screenshot")
        if saved and saved[-1].get("name") == self.name:
            return text_reply(f"Saved the contact {self.name}.")
        if values["name"] != self.name:
            if values["name"]:
                return self._action("left_click", coordinate=self._at("clear"))
            if app.focus != "name":
                return self._action("left_click", coordinate=self._at("name"))
            return self._action("type", text=self.name)
        return self._action("left_click", coordinate=self._at("save"))
