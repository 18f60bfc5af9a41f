"""The real desktop: a :class:`~askcache.tools.computer.ComputerBackend` on pyautogui and mss.

pyautogui moves the mouse and presses keys through the X server's XTEST extension; mss takes
screenshots; the windows are listed (:mod:`askcache.tools.xlib_windows`) and the screen's drawing is
reported (:mod:`askcache.foundation.screen.damage`, the DAMAGE extension) through python-xlib. All
are optional dependencies, imported only when a backend is created::

    pip install 'askcache[desktop]'

The applications' accessibility trees say what element is where (:meth:`DesktopBackend.elements`,
AT-SPI over the session's D-Bus, :mod:`askcache.tools.atspi`), with ``jeepney`` installed
(``pip install 'askcache[anchors]'``).

Key names follow the computer tool's convention (xdotool keysyms such as ``Return``,
``ctrl+s``, ``Page_Down``) and are translated to pyautogui's; a key or character pyautogui
cannot produce is an error, never silently dropped.

No action sleeps: every pyautogui call passes ``_pause=False`` (pyautogui otherwise sleeps
``pyautogui.PAUSE``, 0.1 s by default, after each call), clicks come with no interval between
them, and a drag moves in steps without a duration. Whoever acts waits for the screen itself
(a replay watches it; the computer tool has its ``settle_delay``). pyautogui's own settings
are left as the program set them: its fail-safe is off and its X connection is this backend's
only for the length of one action, then both are put back.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from PIL import Image

from askcache.foundation.errors import AskCacheError
from askcache.foundation.geometry import Point
from askcache.foundation.screen.damage import ScreenDamage
from askcache.foundation.screen.elements import ElementSource
from askcache.foundation.screen.windows import WindowFrame
from askcache.foundation.screen.xserver import connect, ensure_xauthority, quiet_xlib
from askcache.tools.xlib_windows import list_windows

if TYPE_CHECKING:
    from askcache.tools.atspi import AtspiElements

__all__ = ["DesktopBackend", "translate_key"]

_IMPORT_CONNECTIONS: list[Any] = []

DRAG_STEPS = 8
"""Pointer moves between a drag's press and release."""

_INSTALL_HINT = "the desktop backend needs pyautogui and mss: pip install 'askcache[desktop]'"

_KEY_ALIASES = {
    "return": "enter",
    "kp_enter": "enter",
    "escape": "esc",
    "page_down": "pagedown",
    "page_up": "pageup",
    "next": "pagedown",
    "prior": "pageup",
    "control": "ctrl",
    "control_l": "ctrlleft",
    "control_r": "ctrlright",
    "shift_l": "shiftleft",
    "shift_r": "shiftright",
    "alt_l": "altleft",
    "alt_r": "altright",
    "super": "win",
    "super_l": "winleft",
    "super_r": "winright",
    "meta": "alt",
    "cmd": "command",
    "kp_add": "add",
    "kp_subtract": "subtract",
    "kp_multiply": "multiply",
    "kp_divide": "divide",
    "kp_decimal": "decimal",
    "plus": "+",
    "minus": "-",
    "asterisk": "*",
    "slash": "/",
    "equal": "=",
    "period": ".",
    "comma": ",",
    "underscore": "_",
    "parenleft": "(",
    "parenright": ")",
    **{f"kp_{digit}": f"num{digit}" for digit in range(10)},
}


def translate_key(name: str, valid: set[str]) -> str:
    """A computer-tool key name (``Return``, ``KP_Add``) as pyautogui's (``enter``, ``add``)."""
    key = name if len(name) == 1 else name.lower()
    key = _KEY_ALIASES.get(key, key)
    if key not in valid:
        raise ValueError(f"unknown key {name!r}")
    return key


def _load(display: str) -> tuple[ModuleType, ModuleType]:
    """Import pyautogui (which connects to ``$DISPLAY`` when first imported) and mss."""
    ensure_xauthority()
    previous = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display
    try:
        with quiet_xlib():
            import mss
            import pyautogui
    except ImportError as exc:
        raise AskCacheError(f"{_INSTALL_HINT} ({exc})") from exc
    except Exception as exc:  # Xlib raises its own errors when the display is unreachable
        raise AskCacheError(f"cannot open the X display {display!r}: {exc}") from exc
    finally:
        if previous is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = previous
    # Backends rebind pyautogui's X connection to their own display; keep the one it opened
    # at import alive, or it is collected with its socket open.
    _IMPORT_CONNECTIONS.append(pyautogui._pyautogui_x11._display)
    return pyautogui, mss


class DesktopBackend:
    """The screen, mouse and keyboard of an X display.

    Args:
        display: The X display, e.g. ``":1"``; default: ``$DISPLAY``.
        type_interval: Seconds between typed characters.
    """

    def __init__(self, display: str | None = None, *, type_interval: float = 0.0) -> None:
        chosen = display or os.environ.get("DISPLAY")
        if not chosen:
            raise AskCacheError("no X display: set DISPLAY or pass display=':N'")
        self.display = chosen
        self.type_interval = type_interval
        self._gui, mss = _load(chosen)
        try:
            self._xdisplay: Any = connect(chosen)
            grabber = getattr(mss, "MSS", None) or mss.mss  # mss.mss is deprecated in 10.2
            self._grabber: Any = grabber(display=chosen)
        except Exception as exc:
            raise AskCacheError(f"cannot open the X display {chosen!r}: {exc}") from exc
        self._damage: ScreenDamage | None = None
        self._damage_asked = False
        self._elements: AtspiElements | None = None
        self._elements_asked = False
        self._keys = {  # what the X11 layer can really press: names and characters
            key
            for key, code in self._gui._pyautogui_x11.keyboardMapping.items()
            if isinstance(key, str) and code
        }

    @contextlib.contextmanager
    def _driving(self) -> Iterator[Any]:
        """pyautogui for one action: pointed at this backend's display (its X11 layer keeps
        one global) with its fail-safe off (a click at (0, 0) is a legitimate action here);
        both put back afterwards, for whoever else uses pyautogui in this process."""
        gui: Any = self._gui
        x11 = gui._pyautogui_x11
        display, failsafe = x11._display, gui.FAILSAFE
        x11._display, gui.FAILSAFE = self._xdisplay, False
        try:
            yield gui
        finally:
            x11._display, gui.FAILSAFE = display, failsafe

    @property
    def size(self) -> tuple[int, int]:
        screen = self._xdisplay.screen()
        return (int(screen.width_in_pixels), int(screen.height_in_pixels))

    def screenshot(self) -> Image.Image:
        monitor = self._grabber.monitors[0]
        shot = self._grabber.grab(monitor)
        # the grab's own BGRX pixels, unpacked to RGB by Pillow in C: a tenth of the time
        # mss's ``rgb`` takes to reorder them in Python (0.7 ms against 6 ms at 1280x800)
        return Image.frombytes("RGB", shot.size, shot.raw, "raw", "BGRX")

    def click(self, point: Point | None, button: str, count: int, modifiers: str | None) -> None:
        held = [translate_key(k, self._keys) for k in modifiers.split("+")] if modifiers else []
        x, y = point if point is not None else self.pointer()
        with self._driving() as gui:
            for key in held:
                gui.keyDown(key, _pause=False)
            try:
                gui.click(x=x, y=y, clicks=count, button=button, _pause=False)
            finally:
                for key in reversed(held):
                    gui.keyUp(key, _pause=False)

    def drag(self, start: Point, end: Point) -> None:
        with self._driving() as gui:
            gui.moveTo(*start, _pause=False)
            gui.mouseDown(button="left", _pause=False)
            try:
                # motion events on the way, as a hand makes them (some toolkits start a drag
                # only after the pointer moved a few pixels with the button down); no sleep
                for step in range(1, DRAG_STEPS + 1):
                    x = start[0] + (end[0] - start[0]) * step // DRAG_STEPS
                    y = start[1] + (end[1] - start[1]) * step // DRAG_STEPS
                    gui.moveTo(x, y, _pause=False)
            finally:
                gui.mouseUp(button="left", _pause=False)

    def mouse_button(self, down: bool) -> None:
        with self._driving() as gui:
            (gui.mouseDown if down else gui.mouseUp)(button="left", _pause=False)

    def move(self, point: Point) -> None:
        with self._driving() as gui:
            gui.moveTo(*point, _pause=False)

    def type_text(self, text: str) -> None:
        untypable = sorted({c for c in text if c not in self._keys})
        if untypable:
            raise ValueError(f"cannot type {''.join(untypable)!r} on this keyboard")
        with self._driving() as gui:
            gui.write(text, interval=self.type_interval, _pause=False)

    def key(self, combo: str, repeat: int) -> None:
        keys = [translate_key(part, self._keys) for part in combo.split("+") if part]
        if not keys:
            raise ValueError(f"no key in {combo!r}")
        with self._driving() as gui:
            for _ in range(repeat):
                gui.hotkey(*keys, _pause=False)

    def scroll(self, point: Point | None, direction: str, amount: int) -> None:
        if direction not in ("up", "down", "left", "right"):
            raise ValueError(f"unknown scroll direction {direction!r}")
        x, y = point if point is not None else self.pointer()
        with self._driving() as gui:
            if direction in ("up", "down"):
                gui.vscroll(amount if direction == "up" else -amount, x=x, y=y, _pause=False)
            else:
                gui.hscroll(amount if direction == "right" else -amount, x=x, y=y, _pause=False)

    def pointer(self) -> Point:
        data = self._xdisplay.screen().root.query_pointer()._data
        return (int(data["root_x"]), int(data["root_y"]))

    def windows(self) -> list[WindowFrame]:
        """The visible top-level windows, bottom first (:mod:`askcache.tools.xlib_windows`)."""
        return list_windows(self._xdisplay)

    def screen_damage(self) -> ScreenDamage | None:
        """Where and when the X server drew on the screen, in screen pixels
        (:mod:`askcache.foundation.screen.damage`), opened at the first call and kept until
        :meth:`close`; ``None`` when the server has no DAMAGE extension."""
        if not self._damage_asked:
            self._damage_asked = True
            self._damage = ScreenDamage.open(self.display)
        return self._damage

    def elements(self) -> ElementSource | None:
        """What element is where, from the applications' accessibility trees (AT-SPI,
        :class:`askcache.tools.atspi.AtspiElements`), in screen pixels; made at the first
        call and kept until :meth:`close` (it learns the applications on the bus at once,
        in a thread of its own). ``None`` when there is no session bus
        (``DBUS_SESSION_BUS_ADDRESS``) or ``jeepney`` is not installed (``pip install
        'askcache[anchors]'``). A session bus with no accessibility bus on it, or an
        application that does not answer, makes each query raise: the caller goes on
        without the element."""
        if not self._elements_asked:
            self._elements_asked = True
            from askcache.tools.atspi_bus import session_bus_address

            address = session_bus_address()
            if address is not None and importlib.util.find_spec("jeepney") is not None:
                from askcache.tools.atspi import AtspiElements

                self._elements = AtspiElements(self.display, session_address=address)
                self._elements.warm()  # the first step waits for its screen meanwhile
        return self._elements

    def close(self) -> None:
        """Release the X connections and the accessibility bus's."""
        if self._elements is not None:
            self._elements.close()
        if self._damage is not None:
            self._damage.close()
        self._grabber.close()
        self._xdisplay.close()
