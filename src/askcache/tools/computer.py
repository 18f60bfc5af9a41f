"""Anthropic's computer tool, in both shapes, executed on a pluggable screen backend.

:class:`ComputerTool` reads the action (either tool shape), checks its arguments, calls the
backend, waits ``settle_delay`` (not for calls a replay emits: the replay watches the
screen itself) and answers with a text line and a PNG screenshot taken after the action.
A bad coordinate, an unknown action or a backend failure is an ``is_error`` result with a
clear text: never a crash, never a silent no-op.

Backends implement :class:`ComputerBackend`: :mod:`askcache.testing` ships a simulated
screen rendered with Pillow; a real desktop backend (pyautogui + mss) plugs in the same way.
A backend that also lists its windows (a :class:`~askcache.foundation.screen.windows.WindowSource`)
lets recording store the window each step acted in, and a replay find it where it is now; one that
reports where its screen was drawn (a :class:`~askcache.foundation.screen.damage.DamageReporter`)
lets a replay act as soon as the screen is still (:meth:`ComputerTool.screen_damage`); one that
says what element is where (an :class:`~askcache.foundation.screen.elements.ElementReporter`)
lets recording and replay compare the element under each action
(:meth:`ComputerTool.elements`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

from PIL import Image

from askcache.foundation.actions import (
    COMPUTER_TOOL_NAME,
    Action,
    ToolShape,
    as_point,
    parse_action,
)
from askcache.foundation.geometry import Point
from askcache.foundation.messages import (
    Base64ImageSource,
    ImageBlockParam,
    TextBlockParam,
    ToolResultContent,
    ToolUseBlockParam,
)
from askcache.foundation.scaling import Size, api_resolution, scale_point
from askcache.foundation.screen.damage import DamageReporter, DamageSource, ScaledDamage
from askcache.foundation.screen.elements import ElementReporter, ElementSource, ScaledElements
from askcache.foundation.screen.png import encode_png
from askcache.foundation.screen.windows import WindowFrame, WindowSource
from askcache.tools.tool import Tool, ToolOutput

__all__ = ["ComputerBackend", "ComputerTool", "ToolVersion", "encode_png"]

ToolVersion = Literal["computer_20250124", "computer_20251124", "computer_toolset_20260801"]
"""The computer tool definitions askcache can offer."""

_BETAS: dict[str, str] = {
    "computer_20250124": "computer-use-2025-01-24",
    "computer_20251124": "computer-use-2025-11-24",
}

MouseButton = Literal["left", "right", "middle"]


class ComputerBackend(Protocol):
    """The screen and input devices a :class:`ComputerTool` drives (screenshot coordinates)."""

    @property
    def size(self) -> tuple[int, int]:
        """Width and height of the screen, as screenshots show it."""
        ...

    def screenshot(self) -> Image.Image:
        """The current screen."""
        ...

    def click(
        self, point: Point | None, button: MouseButton, count: int, modifiers: str | None
    ) -> None:
        """Click ``count`` times at ``point`` (``None``: where the pointer is)."""
        ...

    def drag(self, start: Point, end: Point) -> None:
        """Press the left button at ``start``, move to ``end``, release."""
        ...

    def mouse_button(self, down: bool) -> None:
        """Press (``down``) or release the left button where the pointer is."""
        ...

    def move(self, point: Point) -> None:
        """Move the pointer."""
        ...

    def type_text(self, text: str) -> None:
        """Type text into whatever has the focus."""
        ...

    def key(self, combo: str, repeat: int) -> None:
        """Press a key or combination such as ``Return`` or ``ctrl+s``."""
        ...

    def scroll(self, point: Point | None, direction: str, amount: int) -> None:
        """Scroll ``amount`` clicks in ``direction`` (up, down, left, right)."""
        ...

    def pointer(self) -> Point:
        """Where the pointer is."""
        ...


_CLICKS: dict[str, tuple[MouseButton, int]] = {
    "left_click": ("left", 1),
    "right_click": ("right", 1),
    "middle_click": ("middle", 1),
    "double_click": ("left", 2),
    "triple_click": ("left", 3),
}


class ComputerTool(Tool):
    """The computer tool, offered in one of its shapes and executed on ``backend``."""

    name = COMPUTER_TOOL_NAME

    def __init__(
        self,
        backend: ComputerBackend,
        *,
        version: ToolVersion = "computer_20250124",
        settle_delay: float = 0.0,
        scale: bool = True,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.backend = backend
        self.version = version
        self.settle_delay = settle_delay
        self.scale = scale
        self._sleep = sleep

    @property
    def screen_size(self) -> Size:
        """The real screen's size (the backend's)."""
        return self.backend.size

    @property
    def api_size(self) -> Size:
        """The size the model sees: screenshots are scaled to it, its coordinates from it."""
        return api_resolution(self.screen_size) if self.scale else self.screen_size

    def to_screen(self, point: Point) -> Point:
        """A model coordinate on the real screen."""
        api, screen = self.api_size, self.screen_size
        return point if api == screen else scale_point(point, api, screen)

    def from_screen(self, point: Point) -> Point:
        """A real screen position in model coordinates."""
        api, screen = self.api_size, self.screen_size
        return point if api == screen else scale_point(point, screen, api)

    def windows(self) -> list[WindowFrame] | None:
        """The screen's top-level windows in model coordinates, bottom first; ``None`` when
        the backend cannot list windows (it is not a
        :class:`~askcache.foundation.screen.windows.WindowSource`)."""
        if not isinstance(self.backend, WindowSource):
            return None
        api, screen = self.api_size, self.screen_size
        return [frame.scaled(screen, api) for frame in self.backend.windows()]

    def screen_damage(self) -> DamageSource | None:
        """Where and when the screen was drawn (:mod:`askcache.foundation.screen.damage`), its boxes
        in model coordinates (the space of :meth:`capture`'s images); ``None`` when the backend
        cannot tell (it is not a :class:`~askcache.foundation.screen.damage.DamageReporter`, or its
        platform reports no drawing): a replay then samples the screen to see it still."""
        if not isinstance(self.backend, DamageReporter):
            return None
        source = self.backend.screen_damage()
        api, screen = self.api_size, self.screen_size
        if source is None or api == screen:
            return source
        return ScaledDamage(source, screen=screen, space=api)

    def elements(self) -> ElementSource | None:
        """What element is where (:mod:`askcache.foundation.screen.elements`), its points and
        boxes in model coordinates (the space of :meth:`capture`'s images); ``None`` when the
        backend cannot tell (it is not an
        :class:`~askcache.foundation.screen.elements.ElementReporter`, or its platform has no
        accessibility tree to ask)."""
        if not isinstance(self.backend, ElementReporter):
            return None
        source = self.backend.elements()
        api, screen = self.api_size, self.screen_size
        if source is None or api == screen:
            return source
        return ScaledElements(source, screen=screen, space=api)

    def capture(self) -> Image.Image:
        """A screenshot as the model sees it (scaled to :attr:`api_size`)."""
        image = self.backend.screenshot()
        size = self.api_size
        if image.size != size:
            image = image.resize(size, Image.Resampling.LANCZOS)
        return image

    @property
    def shape(self) -> ToolShape:
        """``toolset`` for the computer toolset, ``tool`` for the single computer tool."""
        return "toolset" if self.version == "computer_toolset_20260801" else "tool"

    def to_params(self) -> dict[str, Any]:
        if self.shape == "toolset":
            return {"type": self.version}
        width, height = self.api_size
        return {
            "type": self.version,
            "name": COMPUTER_TOOL_NAME,
            "display_width_px": width,
            "display_height_px": height,
        }

    def betas(self) -> list[str]:
        beta = _BETAS.get(self.version)
        return [beta] if beta else []

    def handles(self, block: ToolUseBlockParam) -> bool:
        return (block.toolset_name == COMPUTER_TOOL_NAME) or (
            block.name == COMPUTER_TOOL_NAME and block.toolset_name is None
        )

    def run(self, block: ToolUseBlockParam) -> ToolOutput:
        action = parse_action(block)
        if action is None:
            return ToolOutput.text("The computer tool needs an 'action'.", is_error=True)
        problem = self._check(action, block.input)
        if problem:
            return ToolOutput.text(problem, is_error=True)
        summary = self._perform(action, block.input)
        if summary is None:
            return ToolOutput.text(f"Unknown computer action {action.name!r}.", is_error=True)
        if self.settle_delay and action.name != "screenshot" and not block.replayed:
            self._sleep(self.settle_delay)
        return self.observe(summary)

    def observe(self, summary: str) -> ToolOutput:
        """A tool output with ``summary`` and a fresh screenshot (its image kept with its
        text: a replay reading the result back needs no decoding,
        :func:`askcache.foundation.screen.png.decode_png`)."""
        data = encode_png(self.capture(), keep=True)
        content: list[ToolResultContent] = [
            TextBlockParam(text=summary),
            ImageBlockParam(source=Base64ImageSource(data=data)),
        ]
        return ToolOutput(content)

    def _check(self, action: Action, arguments: dict[str, Any]) -> str | None:
        for key in ("coordinate", "start_coordinate"):
            if key in arguments and as_point(arguments[key]) is None:
                return f"{key} must be [x, y] integers, got {arguments[key]!r}."
        width, height = self.api_size
        for point in (action.point, action.pointer_after):
            if point is not None and not (0 <= point[0] < width and 0 <= point[1] < height):
                return f"coordinate {list(point)} is outside the screen ({width}x{height})."
        if action.name in ("type", "key", "hold_key") and not isinstance(
            arguments.get("text"), str
        ):
            return f"{action.name} needs a 'text' string."
        needs_point = action.name in ("mouse_move", "left_click_drag")
        if needs_point and (action.point is None or action.pointer_after is None):
            return f"{action.name} needs a coordinate."
        return None

    def _perform(self, action: Action, arguments: dict[str, Any]) -> str | None:
        backend, name = self.backend, action.name
        point = None if action.point is None else self.to_screen(action.point)
        after = None if action.pointer_after is None else self.to_screen(action.pointer_after)
        if name in _CLICKS:
            button, count = _CLICKS[name]
            modifiers = arguments.get("text") if isinstance(arguments.get("text"), str) else None
            backend.click(point, button, count, modifiers)
            where = (
                action.point if action.point is not None else self.from_screen(backend.pointer())
            )
            return f"{name} at {list(where)}"
        if name == "left_click_drag":
            assert point is not None
            assert after is not None
            backend.drag(point, after)
            return f"dragged from {action.point} to {action.pointer_after}"
        if name in ("left_mouse_down", "left_mouse_up"):
            backend.mouse_button(down=name == "left_mouse_down")
            return name
        if name == "mouse_move":
            assert point is not None
            backend.move(point)
            return f"moved pointer to {action.point}"
        if name == "type":
            backend.type_text(arguments["text"])
            return f"typed {len(arguments['text'])} characters"
        if name in ("key", "hold_key"):
            repeat = arguments.get("repeat", 1)
            backend.key(arguments["text"], repeat if isinstance(repeat, int) and repeat > 0 else 1)
            return f"pressed {arguments['text']}"
        if name == "scroll":
            direction = str(arguments.get("scroll_direction", "down"))
            amount = arguments.get("scroll_amount", 3)
            backend.scroll(point, direction, amount if isinstance(amount, int) else 3)
            return f"scrolled {direction}"
        if name == "wait":
            duration = arguments.get("duration", 1)
            self._sleep(float(duration) if isinstance(duration, int | float) else 1.0)
            return "waited"
        if name == "screenshot":
            return "screenshot"
        if name == "cursor_position":
            return f"pointer at {list(self.from_screen(backend.pointer()))}"
        return None
