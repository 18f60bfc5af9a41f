"""A simulated form shown as a window on a larger simulated screen, which can be moved.

:class:`WindowedFormApp` is a :class:`~askcache.tools.computer.ComputerBackend` and a
:class:`~askcache.foundation.screen.windows.WindowSource`: the :class:`SimulatedFormApp` is drawn at
:attr:`WindowedFormApp.at` on a plain desktop, and input is passed to it in its own
coordinates. Offline tests of window-anchored replay move it between runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PIL import Image

from askcache.foundation.geometry import Point
from askcache.foundation.screen.elements import Element
from askcache.foundation.screen.windows import WindowFrame
from askcache.testing.simulated import SimulatedFormApp

__all__ = ["WindowedFormApp"]


@dataclass
class WindowedFormApp:
    """``app`` as a window at ``at`` on a ``screen``-sized desktop."""

    app: SimulatedFormApp = field(default_factory=SimulatedFormApp)
    at: Point = (0, 0)
    """The window's top-left corner on the screen."""
    screen: tuple[int, int] = (1024, 768)
    wm_class: str | None = "SimulatedForm"
    title: str | None = "Contacts"
    others: list[WindowFrame] = field(default_factory=list)
    """More windows listed (not drawn), below the form."""
    background: tuple[int, int, int] = (40, 44, 52)

    def to_app(self, point: Point) -> Point:
        """A screen position in the form's own coordinates."""
        return (point[0] - self.at[0], point[1] - self.at[1])

    def to_screen(self, point: Point) -> Point:
        """A position of the form on the screen."""
        return (point[0] + self.at[0], point[1] + self.at[1])

    def windows(self) -> list[WindowFrame]:
        form = WindowFrame(
            x=self.at[0],
            y=self.at[1],
            width=self.app.width,
            height=self.app.height,
            wm_class=self.wm_class,
            title=self.title,
        )
        return [*self.others, form]

    def elements(self) -> WindowedFormApp | None:
        """The window itself, when its form is accessible."""
        return self if self.app.accessible else None

    def _on_screen(self, element: Element) -> Element:
        x, y, width, height = element.box
        dx, dy = self.at
        return element.model_copy(
            update={
                "box": (x + dx, y + dy, width, height),
                "window_box": (dx, dy, self.app.width, self.app.height),
            }
        )

    def element_at(self, point: Point) -> Element | None:
        found = self.app.element_at(self.to_app(point))
        return None if found is None else self._on_screen(found)

    def elements_like(self, element: Element, window_point: Point) -> list[Element] | None:
        found = self.app.elements_like(element, self.to_app(window_point))
        return None if found is None else [self._on_screen(e) for e in found]

    @property
    def size(self) -> tuple[int, int]:
        return self.screen

    def screenshot(self) -> Image.Image:
        image = Image.new("RGB", self.screen, self.background)
        image.paste(self.app.screenshot(), self.at)
        return image

    def click(self, point: Point | None, button: str, count: int, modifiers: str | None) -> None:
        self.app.click(None if point is None else self.to_app(point), button, count, modifiers)

    def drag(self, start: Point, end: Point) -> None:
        self.app.drag(self.to_app(start), self.to_app(end))

    def mouse_button(self, down: bool) -> None:
        self.app.mouse_button(down)

    def move(self, point: Point) -> None:
        self.app.move(self.to_app(point))

    def type_text(self, text: str) -> None:
        self.app.type_text(text)

    def key(self, combo: str, repeat: int) -> None:
        self.app.key(combo, repeat)

    def scroll(self, point: Point | None, direction: str, amount: int) -> None:
        self.app.scroll(None if point is None else self.to_app(point), direction, amount)

    def pointer(self) -> Point:
        return self.to_screen(self.app.pointer())
