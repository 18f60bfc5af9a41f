"""Re-rendered and relabelled screens on real applications of five toolkits: does a replay
act on first sight where only the drawing changed, and stop before a control whose label
changed? The benchmark of issue 33 (element anchors); its first run is the pixel-only
baseline.

    python bench/rerender.py [--runs N] [--only NAME ...] [--situations NAME ...]
                             [--detail-hash on|off]
                             [--pixels-only] [--minutes M] [--json PATH] [--no-write]

Applications (each task recorded once in the normal situation, then replayed with
``strategy="execute"`` and the default :class:`~askcache.CacheExecutionSettings`, under Xvfb,
with the real :class:`~askcache.tools.desktop.DesktopBackend`, a scripted model through the
real ``anthropic`` client and :class:`~askcache.testing.MessagesApiStandIn`; when the replay
hands back, the model stops at once, so every action that reaches the application is the
replay's):

- GTK 3, accessible: Debian's ``mousepad`` (used by bench/drift.py) and, **chosen before any
  tuning and used by no test or bench before**, Debian's ``yad`` (a GTK 3 form dialog:
  ``yad --form``, its answer printed on stdout);
- Qt 5, accessible (``QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1``): Debian's ``featherpad`` and,
  **unseen**, Debian's ``speedcrunch`` (a calculator);
- Chromium, accessible (``--force-renderer-accessibility``, not headless): bench/weblist.py's
  list page with a Save button and, **unseen**, the HTML manual of libffi from Debian's
  ``libffi-dev`` (GNU Texinfo's HTML, served by bench/rerender_page.py);
- no accessibility: the project's Tk form (``askcache.testing.tk_form``) and ``xcalc``
  (X Athena widgets).

The tasks (model coordinates on the recording's 1024x768 screen):

- mousepad, featherpad: click below the list, Return, type "apples", then the File menu and
  its Save item (so that a labelled control is clicked);
- yad: click the Name field, type "Ada Lovelace", click Save;
- speedcrunch: click the expression field, type "12+37", Return, the Edit menu and its
  "Copy Last Result" item (the answer is read from the clipboard);
- the list page: click below the list, Return, type "apples", click the page's Save button;
- the manual (its chapter "Using libffi"): click the "Simple Example" link of its menu;
- the Tk form: click Name, type "Ada Lovelace", click Save;
- xcalc: click 1 2 + 3 7 =.

Situations (each on a fresh X server, D-Bus session bus and AT-SPI registry, application,
home folder and copy of the files):

- *unchanged*;
- *2x density*: an Xvfb screen of twice the size (2048x1536, sent to the model as 1024x768),
  the application drawn at 2x: ``GDK_SCALE=2``, ``QT_SCALE_FACTOR=2``, Chromium's
  ``--force-device-scale-factor=2``, the Tk form's ``--zoom 2``, xcalc through X resources
  (bench/screens.py's: font 12x24, keys and gaps doubled);
- *other theme*: ``GTK_THEME=Adwaita:dark``; ``QT_STYLE_OVERRIDE=Windows`` (Fusion
  otherwise); Chromium's ``--force-dark-mode --enable-features=WebContentsForceDark``; the Tk
  form's ``--theme dark``; xcalc ``-rv`` (reverse video);
- *bigger font*: GTK ``gtk-font-name=DejaVu Sans 13`` in ``gtk-3.0/settings.ini`` (10
  otherwise); ``QT_FONT_DPI=120`` (96 otherwise); the list page's text at 20 px (16
  otherwise), the manual with Chromium's default font size 20 (16 otherwise, in the
  profile's Preferences); the Tk form's ``--font-scale 1.3``; xcalc ``*Font: 9x15bold``;
- *relabelled*: the clicked control's text changed: mousepad ``LANGUAGE=de`` (Datei,
  Speichern), featherpad and speedcrunch ``LANG=de_DE.UTF-8`` (their own translations),
  yad's, the list page's and the Tk form's Save button reads Send, the manual's link reads
  "Complex Example", xcalc's 7 key reads 9 (``*ti.button37.label: 9``);
- *moved window*: every window of the application 150 px right and 120 px down;
- *started late*: the application starts at the same moment as the replay;
- *extra line* (the editors and the list page): the file has a fourth line.

Counted from the application's side, never from askcache's own report:

- **wrong actions** (dangerous): a replayed click on another control than the recording's
  (the control under the point just before the click is sent: the AT-SPI tree for the
  accessible applications, asked by the benchmark itself over its own D-Bus connection, in
  logical pixels; the form's published widget boxes for Tk; xwininfo's key boxes for xcalc;
  with its label: a click on a relabelled control is always wrong), and a replay that
  completed with another result than the recording's (the saved file, yad's answer, the
  clipboard, the pages the browser asked for, the form's saved contacts). On *extra line*
  (the content changed) drift's rule instead: an action that ran on a screen that differs from
  the recording's before it;
- **needless hand-backs** (costly): hand-backs on a harmless re-render (every situation but
  *relabelled* and *extra line*), and on *extra line* drift's rule;
- **0-call replays**: replays that made no model call (first sight: each run starts from the
  recording's own cache folder, so no run learns from another);
- **relabels caught**: replays of *relabelled* that handed back before any action reached
  the relabelled control.

``--detail-hash off`` records without the tuned detail hash
(``CacheWritingSettings(visual_validation_detail_region_size=None)``, which also drops the
other-density hash); ``--pixels-only`` turns the element anchors (issue 33: on by default)
off, ``record_elements=False`` and ``check_elements=False``, as the baseline ran before they
existed; the bench says which mode ran. The bench/drift.py and demo settings are the defaults
(the demo only adds ``keep_step_views``, which keeps images and changes no decision), so one
settings set runs. Writes the "rerender" section of docs/benchmarks.md unless
``--no-write``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.drift import _differing, _same
from bench.screens import Screen
from PIL import Image

from askcache import (
    ActResult,
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.foundation.actions import ACTING_ACTIONS, parse_action
from askcache.foundation.messages import ToolUseBlockParam
from askcache.testing import MessagesApiStandIn, VirtualDisplay, text_reply, tool_use_reply
from askcache.testing._process import stop_process
from askcache.tools.desktop import DesktopBackend
from askcache.tools.tool import ToolOutput

SCREEN = (1024, 768)
MOVE = (150, 120)
WAIT = 30.0
"""Seconds before waiting for an application gives up."""
HERE = Path(__file__).resolve().parent
STOP = "The screen is not as the replay expected; I stop here."

UNCHANGED = "unchanged"
DENSITY = "2x density"
THEME = "other theme"
FONT = "bigger font"
RELABEL = "relabelled"
MOVED = "moved window"
LATE = "started late"
EXTRA = "extra line"
SITUATIONS = [UNCHANGED, DENSITY, THEME, FONT, RELABEL, MOVED, LATE, EXTRA]
HARMLESS = {UNCHANGED, DENSITY, THEME, FONT, MOVED, LATE}
"""Re-renders: the same controls with the same labels, drawn otherwise or elsewhere."""

LIST = "milk\neggs\nbread"
EXTRA_LIST = "milk\neggs\nbread\nbutter"

Identity = tuple[Any, ...]
"""What a click reached, from the application's side (role or widget, label, place)."""


def click(x: int, y: int) -> dict[str, Any]:
    return tool_use_reply("computer", {"action": "left_click", "coordinate": [x, y]})


def key(text: str) -> dict[str, Any]:
    return tool_use_reply("computer", {"action": "key", "text": text})


def write(text: str) -> dict[str, Any]:
    return tool_use_reply("computer", {"action": "type", "text": text})


# The accessibility tree, asked by the benchmark --------------------------------------------

NULL = "/org/a11y/atspi/null"
ROOT = ("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
SELECTED, SHOWING = 1 << 23, 1 << 25
"""AT-SPI state bits (``ATSPI_STATE_SELECTED``, ``ATSPI_STATE_SHOWING``)."""
CONTAINERS = {"filler", "panel", "menu bar"}


class Tree:
    """The AT-SPI tree of one run's session bus (jeepney, the benchmark's own connection)."""

    def __init__(self, session_address: str) -> None:
        self.session_address = session_address
        self._bus: Any = None
        self._menubars: dict[tuple[str, str], tuple[str, str] | None] = {}

    def _connection(self) -> Any:
        from jeepney import DBusAddress, new_method_call
        from jeepney.io.blocking import open_dbus_connection

        if self._bus is None:
            session = open_dbus_connection(bus=self.session_address)
            try:
                bus = DBusAddress(
                    "/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Bus"
                )
                address = session.send_and_get_reply(
                    new_method_call(bus, "GetAddress"), timeout=10
                ).body[0]
            finally:
                session.close()
            self._bus = open_dbus_connection(bus=address)
        return self._bus

    def _call(
        self,
        ref: tuple[str, str],
        interface: str,
        method: str,
        sig: str | None = None,
        body: tuple[Any, ...] = (),
    ) -> Any:
        from jeepney import DBusAddress, new_method_call

        address = DBusAddress(ref[1], bus_name=ref[0], interface=f"org.a11y.atspi.{interface}")
        reply = self._connection().send_and_get_reply(
            new_method_call(address, method, sig, body), timeout=5
        )
        if reply.header.message_type.name == "error":
            raise RuntimeError(f"{method}: {reply.body}")
        return reply.body

    def _name(self, ref: tuple[str, str]) -> str:
        from jeepney import DBusAddress, Properties

        address = DBusAddress(ref[1], bus_name=ref[0], interface="org.a11y.atspi.Accessible")
        reply = self._connection().send_and_get_reply(Properties(address).get("Name"), timeout=5)
        return str(reply.body[0][1]).strip()

    def _role(self, ref: tuple[str, str]) -> str:
        return str(self._call(ref, "Accessible", "GetRoleName")[0])

    def _children(self, ref: tuple[str, str]) -> list[tuple[str, str]]:
        return [tuple(c) for c in self._call(ref, "Accessible", "GetChildren")[0]]  # type: ignore[misc]

    def _states(self, ref: tuple[str, str]) -> int:
        low, high = self._call(ref, "Accessible", "GetState")[0]
        return int(low) | int(high) << 32

    def _extents(self, ref: tuple[str, str]) -> tuple[int, int, int, int]:
        return tuple(self._call(ref, "Component", "GetExtents", "u", (0,))[0])  # type: ignore[return-value]

    def _at(self, ref: tuple[str, str], point: tuple[int, int]) -> tuple[str, str] | None:
        child = tuple(self._call(ref, "Component", "GetAccessibleAtPoint", "iiu", (*point, 0))[0])
        return None if child[1] == NULL else child  # type: ignore[return-value]

    def windows(self) -> list[tuple[tuple[str, str], tuple[int, int, int, int]]]:
        """Every application's top-level windows and their boxes."""
        found = []
        for app in self._children(ROOT):
            with suppress(Exception):
                for window in self._children(app):
                    with suppress(Exception):
                        box = self._extents(window)
                        if box[2] > 1 and box[3] > 1:
                            found.append((window, box))
        return found

    def identity(self, point: tuple[int, int]) -> Identity | None:
        """The element an action at ``point`` (logical pixels) reaches: an open menu's item,
        else the end of a descent by ``GetAccessibleAtPoint`` from the window under it:
        its role, name and the path of (role, index) from the window."""
        windows = self.windows()
        for window, _ in windows:
            item = self._menu_item(window, point)
            if item is not None:
                return item
        # the window under the point first; then the others (Chromium at 2x gives its
        # window's box in device-independent pixels and answers hit tests in device ones)
        windows.sort(key=lambda w: not _inside(point, w[1]))
        for window, box in windows:
            ref = window
            for _ in range(40):
                child = self._at(ref, point)
                if child is None or child == ref:
                    break
                ref = child
            if ref != window or _inside(point, box):
                return self._canonical(ref, window)
        return None

    def _canonical(self, ref: tuple[str, str], window: tuple[str, str]) -> Identity:
        """``ref`` as an identity: a text leaf stands for the control around it (a button's
        label, a link's text); the path is each ancestor's role and index, up to the window."""
        role = self._role(ref)
        while role == "static":
            parent = self._parent(ref)
            if parent is None or parent == window:
                break
            ref, role = parent, self._role(parent)
        path = []
        node: tuple[str, str] | None = ref
        for _ in range(40):
            if node is None or node == window:
                break
            path.append(
                (self._role(node), int(self._call(node, "Accessible", "GetIndexInParent")[0]))
            )
            node = self._parent(node)
        return (role, self._name(ref), tuple(reversed(path)))

    def _parent(self, ref: tuple[str, str]) -> tuple[str, str] | None:
        from jeepney import DBusAddress, Properties

        address = DBusAddress(ref[1], bus_name=ref[0], interface="org.a11y.atspi.Accessible")
        reply = self._connection().send_and_get_reply(Properties(address).get("Parent"), timeout=5)
        parent = tuple(reply.body[0][1])
        return None if parent[1] == NULL else parent  # type: ignore[return-value]

    def _menubar(self, window: tuple[str, str]) -> tuple[str, str] | None:
        if window not in self._menubars:
            found = None
            level = [window]
            for _ in range(4):
                following = []
                for ref in level:
                    for child in self._children(ref):
                        role = self._role(child)
                        if role == "menu bar":
                            found = child
                            break
                        if role in CONTAINERS:
                            following.append(child)
                    if found:
                        break
                if found:
                    break
                level = following[:12]
            self._menubars[window] = found
        return self._menubars[window]

    def _menu_item(self, window: tuple[str, str], point: tuple[int, int]) -> Identity | None:
        """The item of an open menu of ``window``'s menu bar under ``point``: GTK lists an
        open menu's items under the (selected) menu; Qt shows a popup menu under the menu
        bar's item."""
        bar = self._menubar(window)
        if bar is None:
            return None
        x, y = point
        for number, menu in enumerate(self._children(bar)):
            role = self._role(menu)
            if role == "menu" and self._states(menu) & SELECTED:
                for index, item in enumerate(self._children(menu)):
                    left, top, width, height = self._extents(item)
                    if left <= x < left + width and top <= y < top + height:
                        return (self._role(item), self._name(item), (("menu", number), index))
            elif role == "menu item":
                for popup in self._children(menu):
                    if self._role(popup) == "popup menu" and self._states(popup) & SHOWING:
                        item = self._at(popup, point)
                        if item is not None:
                            index = int(self._call(item, "Accessible", "GetIndexInParent")[0])
                            return (self._role(item), self._name(item), (("menu", number), index))
        return None

    def close(self) -> None:
        if self._bus is not None:
            with suppress(Exception):
                self._bus.close()
            self._bus = None


def _inside(point: tuple[int, int], box: tuple[int, int, int, int]) -> bool:
    left, top, width, height = box
    return left <= point[0] < left + width and top <= point[1] < top + height


# Applications ---------------------------------------------------------------------------


@dataclass
class Run:
    """One run's world: its folder, display, situation and the application's process."""

    app: App
    folder: Path
    situation: str
    display: str = ""
    bus: str = ""
    process: subprocess.Popen[bytes] | None = None
    tree: Tree | None = None

    @property
    def scale(self) -> int:
        return 2 if self.situation == DENSITY else 1

    @property
    def home(self) -> Path:
        return self.folder / "home"

    def env(self) -> dict[str, str]:
        runtime = self.folder / "runtime"
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("GDK_", "GTK_", "QT_", "LANG", "LC_", "NO_AT_BRIDGE"))
        }
        return {
            **base,
            "DISPLAY": self.display,
            "DBUS_SESSION_BUS_ADDRESS": self.bus,
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "XDG_DATA_HOME": str(self.home / "data"),
            "XDG_CACHE_HOME": str(self.home / "cache"),
            "XDG_RUNTIME_DIR": str(runtime),
            "LANG": "C.UTF-8",
        }


class App:
    """One application, its task and how each situation is made."""

    name = ""
    toolkit = ""
    unseen = False
    accessible = True
    goal = ""
    relabel_action = 0
    """The 1-based acting action that first reaches the relabelled control."""
    editor = False
    """Has a list file (the *extra line* situation)."""
    bus_after_window = False
    """Start the AT-SPI bus only once the application shows a window: a Qt application
    started after the bus is often never listed (the start-up race issue 33 describes)."""

    def script(self, run: Run) -> list[dict[str, Any]]:
        """The recording's model replies after its first screenshot (model coordinates)."""
        raise NotImplementedError

    def command(self, run: Run) -> tuple[list[str], dict[str, str]]:
        """The command line and the environment additions for ``run``."""
        raise NotImplementedError

    def prepare(self, run: Run) -> None:
        if self.editor:
            (run.folder / "list.txt").write_text(EXTRA_LIST if run.situation == EXTRA else LIST)

    def outcome(self, run: Run) -> str:
        if self.editor:
            return (run.folder / "list.txt").read_text()
        return ""

    def logical(self, run: Run, point: tuple[int, int]) -> tuple[int, int]:
        """A screen point in the accessibility tree's pixels (logical: at 2x, halved)."""
        return (point[0] // run.scale, point[1] // run.scale)

    def judge(self, run: Run, point: tuple[int, int]) -> Identity | None:
        """What a click at ``point`` (screen pixels) reaches, from the application's side."""
        if run.tree is None:
            return None
        try:
            return run.tree.identity(self.logical(run, point))
        except Exception as error:  # a tree that does not answer is no evidence
            return ("unanswered", type(error).__name__)

    def ready(self, run: Run) -> bool:
        """The application is up for judging (listed in the accessibility tree)."""
        if run.tree is None:
            return True
        try:
            return bool(run.tree.windows())
        except Exception:
            return False


def _gtk(run: Run) -> dict[str, str]:
    env = {}
    if run.situation == DENSITY:
        env["GDK_SCALE"] = "2"
    if run.situation == THEME:
        env["GTK_THEME"] = "Adwaita:dark"
    if run.situation == FONT:
        settings = run.home / "config" / "gtk-3.0" / "settings.ini"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text("[Settings]\ngtk-font-name=DejaVu Sans 13\n")
    return env


def _qt(run: Run) -> dict[str, str]:
    env = {"QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1", "QT_QPA_PLATFORM": "xcb"}
    if run.situation == DENSITY:
        env["QT_SCALE_FACTOR"] = "2"
    if run.situation == THEME:
        env["QT_STYLE_OVERRIDE"] = "Windows"
    if run.situation == FONT:
        env["QT_FONT_DPI"] = "120"
    if run.situation == RELABEL:
        env["LANG"] = "de_DE.UTF-8"
    return env


class ChromiumApp(App):
    """A page in Chromium: its accessibility tree is in device pixels (not halved at 2x)."""

    toolkit = "Chromium"

    def logical(self, run: Run, point: tuple[int, int]) -> tuple[int, int]:
        return point


def _chromium(run: Run) -> list[str]:
    flags = ["--force-renderer-accessibility"]
    if run.situation == DENSITY:
        flags.append("--force-device-scale-factor=2")
    if run.situation == THEME:
        flags += ["--force-dark-mode", "--enable-features=WebContentsForceDark"]
    return [f"--chromium-flag={flag}" for flag in flags]


class Mousepad(App):
    name = "mousepad"
    toolkit = "GTK 3"
    goal = "Add apples after bread in the shopping list and save it"
    relabel_action = 4
    editor = True

    def script(self, run: Run) -> list[dict[str, Any]]:
        return [click(200, 250), key("Return"), write("apples"), click(19, 12), click(44, 164)]

    def command(self, run: Run) -> tuple[list[str], dict[str, str]]:
        env = {"GSETTINGS_BACKEND": "memory", **_gtk(run)}
        if run.situation == RELABEL:
            env["LANGUAGE"] = "de"
        return ["mousepad", str(run.folder / "list.txt")], env


class Yad(App):
    name = "yad (unseen)"
    toolkit = "GTK 3"
    unseen = True
    goal = "Enter Ada Lovelace as the contact's name and save it"
    relabel_action = 3

    def script(self, run: Run) -> list[dict[str, Any]]:
        return [click(130, 18), write("Ada Lovelace"), click(79, 95)]

    def command(self, run: Run) -> tuple[list[str], dict[str, str]]:
        save = "Send" if run.situation == RELABEL else "Save"
        out = shlex.quote(str(run.folder / "answer.txt"))
        line = (
            "yad --form --title Contact --field=Name --field=Email "
            f'--button={save}:0 --button=Cancel:1 > {out}; echo "exit $?" >> {out}'
        )
        return ["sh", "-c", line], _gtk(run)

    def outcome(self, run: Run) -> str:
        path = run.folder / "answer.txt"
        return path.read_text() if path.exists() else ""


class Featherpad(App):
    name = "featherpad"
    toolkit = "Qt 5"
    bus_after_window = True
    goal = "Add apples after bread in the shopping list and save it"
    relabel_action = 4
    editor = True

    def script(self, run: Run) -> list[dict[str, Any]]:
        return [click(200, 250), key("Return"), write("apples"), click(20, 11), click(50, 340)]

    def command(self, run: Run) -> tuple[list[str], dict[str, str]]:
        return ["featherpad", str(run.folder / "list.txt")], _qt(run)


class Speedcrunch(App):
    name = "speedcrunch (unseen)"
    toolkit = "Qt 5"
    bus_after_window = True
    unseen = True
    goal = "Compute 12+37 in SpeedCrunch and copy the result"
    relabel_action = 4

    def script(self, run: Run) -> list[dict[str, Any]]:
        return [click(500, 613), write("12+37"), key("Return"), click(278, 154), click(344, 203)]

    def command(self, run: Run) -> tuple[list[str], dict[str, str]]:
        return ["speedcrunch"], _qt(run)

    def outcome(self, run: Run) -> str:
        return _clipboard(run.display)


class WebList(ChromiumApp):
    name = "list page (Chromium)"
    goal = "Add apples after bread in the shopping list and save it"
    relabel_action = 4
    editor = True

    def script(self, run: Run) -> list[dict[str, Any]]:
        return [click(200, 250), key("Return"), write("apples"), click(53, 413)]

    def command(self, run: Run) -> tuple[list[str], dict[str, str]]:
        label = "Send" if run.situation == RELABEL else "Save"
        line = [sys.executable, str(HERE / "weblist.py"), f"--save-button={label}"]
        line.append("--chromium-flag=--window-size=640,520")
        if run.situation == FONT:
            line.append("--font-size=20")
        return [*line, *_chromium(run), str(run.folder / "list.txt")], {}


class Manual(ChromiumApp):
    name = "libffi manual (Chromium, unseen)"
    unseen = True
    goal = "Open the Simple Example section of the libffi manual"
    relabel_action = 1

    def script(self, run: Run) -> list[dict[str, Any]]:
        return [click(100, 201)]

    def command(self, run: Run) -> tuple[list[str], dict[str, str]]:
        line = [sys.executable, str(HERE / "rerender_page.py"), str(run.folder / "pages.log")]
        if run.situation == RELABEL:
            line += ["--relabel", "Simple Example", "Complex Example"]
        if run.situation == FONT:
            profile = run.home / "config" / "chromium" / "Default"
            profile.mkdir(parents=True, exist_ok=True)
            prefs = {"webkit": {"webprefs": {"default_font_size": 20}}}
            (profile / "Preferences").write_text(json.dumps(prefs))
        return [*line, *_chromium(run)], {}

    def outcome(self, run: Run) -> str:
        log = run.folder / "pages.log"
        pages = log.read_text().split() if log.exists() else []
        return " ".join(p for p in pages if p.endswith(".html") and p != "Using-libffi.html")


class TkForm(App):
    name = "Tk form"
    toolkit = "Tk"
    accessible = False
    goal = "Type Ada Lovelace into the Name field and press Save"
    relabel_action = 3

    def script(self, run: Run) -> list[dict[str, Any]]:
        return [click(360, 88), write("Ada Lovelace"), click(115, 230)]

    def command(self, run: Run) -> tuple[list[str], dict[str, str]]:
        line = [sys.executable, "-m", "askcache.testing.tk_form", "--state", str(self._state(run))]
        source = str(HERE.parent / "src")  # this checkout's askcache, wherever it runs from
        line += {
            DENSITY: ["--zoom", "2"],
            THEME: ["--theme", "dark"],
            FONT: ["--font-scale", "1.3"],
            RELABEL: ["--save-label", "Send"],
        }.get(run.situation, [])
        return line, {
            "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
        }

    @staticmethod
    def _state(run: Run) -> Path:
        return run.folder / "form.json"

    def _published(self, run: Run) -> dict[str, Any]:
        with suppress(FileNotFoundError, json.JSONDecodeError):
            return dict(json.loads(self._state(run).read_text()))
        return {}

    def ready(self, run: Run) -> bool:
        return bool(self._published(run))

    def _current(self, run: Run) -> dict[str, Any]:
        """The form's state once it has handled every event the X server sent it (a moved
        window included: it publishes only after its own changes), as TkFormApp asks."""
        token = uuid.uuid4().hex
        request, tmp = (
            self._state(run).with_suffix(".ask"),
            self._state(run).with_suffix(".ask.tmp"),
        )
        tmp.write_text(json.dumps({"token": token, "mode": "current"}))
        os.replace(tmp, request)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            state = self._published(run)
            if state.get("answer") == token:
                return state
            time.sleep(0.02)
        return {}

    def judge(self, run: Run, point: tuple[int, int]) -> Identity | None:
        widgets = self._current(run).get("widgets", {})
        for name, (left, top, right, bottom) in widgets.items():
            if left <= point[0] < right and top <= point[1] < bottom:
                label = "Send" if name == "save" and run.situation == RELABEL else name
                return ("widget", name, label)
        return ("widget", None, None)

    def outcome(self, run: Run) -> str:
        return json.dumps(self._current(run).get("saved", []))


class XCalc(App):
    name = "xcalc"
    toolkit = "X Athena"
    accessible = False
    goal = "Compute 12+37 in xcalc"
    relabel_action = 5
    keys = (47, 48, 50, 49, 37, 55)
    """xcalc's buttons (TI app-defaults numbers) for 1 2 + 3 7 =."""

    def script(self, run: Run) -> list[dict[str, Any]]:
        boxes, s = _xcalc_keys(run.display, run.scale), run.scale  # (2x: only to probe)
        return [
            click(
                (boxes[k - 1][0] + boxes[k - 1][2]) // (2 * s),
                (boxes[k - 1][1] + boxes[k - 1][3]) // (2 * s),
            )
            for k in self.keys
        ]

    def command(self, run: Run) -> tuple[list[str], dict[str, str]]:
        line = Screen("", (0, 0), run.scale).xcalc()
        extra = {
            THEME: ["-rv"],
            FONT: ["-xrm", "XCalc*Font: 9x15bold"],
            RELABEL: ["-xrm", "XCalc*ti.button37.label: 9"],
        }.get(run.situation, [])
        return [*line, *extra], {}

    def ready(self, run: Run) -> bool:
        return True

    def judge(self, run: Run, point: tuple[int, int]) -> Identity | None:
        from bench.screens import _button_at

        number = _button_at(_xcalc_keys(run.display, run.scale), point)
        label = "9" if number == 37 and run.situation == RELABEL else None
        return ("key", number, label)


def _xcalc_keys(display: str, scale: int) -> list[tuple[int, int, int, int]]:
    """xcalc's 55 keys (TI layout) in app-defaults order, as screen boxes (xwininfo): the
    55 lowest key-sized windows (with a bigger font a label of the display is key-sized
    too)."""
    text = subprocess.run(
        ["xwininfo", "-root", "-tree"],
        env={"DISPLAY": display, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    boxes = []
    for match in re.finditer(r"(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)", text):
        width, height, x, y = (int(v) for v in match.groups())
        if 30 * scale < width < 70 * scale and 15 * scale < height < 35 * scale:
            boxes.append((x, y, x + width, y + height))
    boxes.sort(key=lambda b: (b[1], b[0]))
    if len(boxes) < 55:
        raise RuntimeError(f"expected xcalc's 55 keys, found {len(boxes)}")
    return boxes[-55:]


APPS: list[App] = [
    Mousepad(),
    Yad(),
    Featherpad(),
    Speedcrunch(),
    WebList(),
    Manual(),
    TkForm(),
    XCalc(),
]


def _clipboard(display: str, timeout: float = 3.0) -> str:
    """The CLIPBOARD selection's text (UTF-8), asked of its owner over X."""
    from Xlib import X
    from Xlib import display as xdisplay

    connection = xdisplay.Display(display)
    try:
        window = connection.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        clipboard = connection.intern_atom("CLIPBOARD")
        target = connection.intern_atom("UTF8_STRING")
        into = connection.intern_atom("RERENDER_CLIP")
        if connection.get_selection_owner(clipboard) == X.NONE:
            return ""
        window.convert_selection(clipboard, target, into, X.CurrentTime)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while connection.pending_events():
                event = connection.next_event()
                if event.type == X.SelectionNotify:
                    if event.property == X.NONE:
                        return ""
                    value = window.get_full_property(into, X.AnyPropertyType)
                    if value is None:
                        return ""
                    if isinstance(value.value, str):
                        return value.value
                    return bytes(value.value).decode(errors="replace")
            time.sleep(0.02)
        return ""
    finally:
        connection.close()


# One run -----------------------------------------------------------------------------------


class Witness(ComputerTool):
    """The computer tool on the real desktop; before each acting call, the screen and (for
    a click) what the click will reach, from the application's side."""

    def __init__(self, backend: DesktopBackend, run: Run) -> None:
        super().__init__(backend, settle_delay=0.3)
        self.desktop, self.run_ = backend, run
        self.before: list[Image.Image] = []
        self.reached: list[Identity | None] = []
        self.replayed: list[bool] = []

    def run(self, block: ToolUseBlockParam) -> ToolOutput:
        action = parse_action(block)
        if action is not None and action.name in ACTING_ACTIONS:
            self.before.append(self.desktop.screenshot().convert("RGB"))
            reached = None
            if action.point is not None:
                try:
                    reached = self.run_.app.judge(self.run_, self.to_screen(action.point))
                except Exception as error:  # the judge never fails the action
                    reached = ("unanswered", repr(error))
            self.reached.append(reached)
            self.replayed.append(bool(block.replayed))
        return super().run(block)


class Stopper:
    """The replay's scripted model: notes the screen when first asked, then stops."""

    def __init__(self, backend: DesktopBackend) -> None:
        self.backend = backend
        self.calls = 0
        self.first: Image.Image | None = None

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.calls == 0:
            self.first = self.backend.screenshot().convert("RGB")
        self.calls += 1
        return text_reply(STOP)


@contextmanager
def _session(display: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A D-Bus session bus for one run (the AT-SPI bus and registry are activated on it)."""
    process = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "DISPLAY": display},
        start_new_session=True,
    )
    assert process.stdout is not None
    address = process.stdout.readline().decode().strip()
    try:
        yield address, process
    finally:
        _stop(process)


def _enable_accessibility(address: str) -> None:
    """Start the AT-SPI bus on the session bus (D-Bus activation) and say accessibility is on
    (``org.a11y.Status.IsEnabled``): Chromium registers only when it is on as it starts."""
    from jeepney import DBusAddress, Properties
    from jeepney.io.blocking import open_dbus_connection

    session = open_dbus_connection(bus=address)
    try:
        status = DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Status")
        session.send_and_get_reply(Properties(status).set("IsEnabled", "b", True), timeout=10)
    finally:
        session.close()


def _enable_when_shown(display: str, address: str) -> None:
    """Enable accessibility once a window larger than 100x100 is mapped on ``display``."""
    from Xlib import X
    from Xlib import display as xdisplay

    deadline = time.monotonic() + WAIT
    connection = xdisplay.Display(display)
    try:
        while time.monotonic() < deadline:
            for child in connection.screen().root.query_tree().children:
                with suppress(Exception):
                    geometry = child.get_geometry()
                    if (
                        child.get_attributes().map_state == X.IsViewable
                        and geometry.width > 100
                        and geometry.height > 100
                    ):
                        _enable_accessibility(address)
                        return
            time.sleep(0.05)
    finally:
        connection.close()


def _start(run: Run) -> subprocess.Popen[bytes]:
    run.home.mkdir(parents=True, exist_ok=True)
    line, extra = run.app.command(run)
    return subprocess.Popen(
        line,
        env={**run.env(), **extra},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        cwd=run.folder,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    stop_process(process)


def _settled(backend: DesktopBackend, run: Run, *, ended: bool = False) -> None:
    """Wait until the screen is drawn, two looks 0.4 s apart match, and the application is
    up for judging (``ended``: only until two looks match; the application may be gone)."""
    deadline = time.monotonic() + WAIT
    previous: Image.Image | None = None
    still = False
    while time.monotonic() < deadline:
        now = backend.screenshot().convert("RGB")
        drawn = ended or now.convert("L").getextrema()[1] > 0
        still = drawn and previous is not None and _same(now, previous)
        if still and (ended or run.app.ready(run)):
            return
        previous = now if drawn else None
        time.sleep(0.4)
    if not still:
        raise RuntimeError(f"{run.app.name} / {run.situation}: the application did not settle")
    print(f"{run.app.name} / {run.situation}: not in the accessibility tree", flush=True)


def _move(display: str, by: tuple[int, int]) -> None:
    """Move every mapped top-level window (but tiny ones) by ``by``."""
    from Xlib import X
    from Xlib import display as xdisplay

    connection = xdisplay.Display(display)
    try:
        for child in connection.screen().root.query_tree().children:
            attributes = child.get_attributes()
            geometry = child.get_geometry()
            if attributes.map_state == X.IsViewable and geometry.width > 100:
                child.configure(x=geometry.x + by[0], y=geometry.y + by[1])
        connection.sync()
    finally:
        connection.close()


@dataclass
class Outcome:
    """What one replay did, seen from the application."""

    app: str
    situation: str
    status: str
    model_calls: int
    replayed: int
    """Acting actions the replay sent."""
    wrong: list[str] = field(default_factory=list)
    needless: int = 0
    relabel_caught: bool | None = None
    """*relabelled* only: handed back before any action reached the relabelled control."""
    unjudged: int = 0
    """Replayed clicks the application's side could not place."""
    handed_back_at: int | None = None
    reason: str = ""
    note: str = ""
    """The handed-back step's note (what its element check said, when it gave no word)."""
    result: str = ""
    seconds: float = 0.0
    element_ms: dict[str, float] = field(default_factory=dict)
    """Acting step index -> milliseconds its element check took in this replay (every look
    of the step summed): the time the anchors add to the step."""
    element_trips: dict[str, int] = field(default_factory=dict)
    """Acting step index -> round trips to the accessibility bus and the applications its
    element check made (every look summed; an exchange with several applications counts
    one per application)."""
    element_looks: dict[str, int] = field(default_factory=dict)
    """Acting step index -> looks its element check ran on in this replay."""


@dataclass
class Recording:
    folder: Path
    before: list[Image.Image]
    reached: list[Identity | None]
    result: str


def _settings(cache: Path, strategy: str, options: Options) -> CachingSettings:
    writing: dict[str, Any] = {"filename": "task.json"}
    if not options.detail_hash:
        writing["visual_validation_detail_region_size"] = None
    execution: dict[str, Any] = {}
    if options.pixels_only:  # the element anchors off: record none, check none
        writing["record_elements"] = False
        execution["check_elements"] = False
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache,
        writing_settings=CacheWritingSettings(**writing),
        execution_settings=CacheExecutionSettings(**execution),
    )


@dataclass
class Options:
    detail_hash: bool = True
    pixels_only: bool = False


@contextmanager
def _world(
    app: App, folder: Path, situation: str, *, late: bool = False
) -> Iterator[tuple[Run, DesktopBackend, Callable[[], None]]]:
    """A fresh X server, session bus and (unless ``late``) the application, settled."""
    folder.mkdir(parents=True, exist_ok=True)
    run = Run(app, folder, situation)
    app.prepare(run)
    size = (SCREEN[0] * run.scale, SCREEN[1] * run.scale)
    with VirtualDisplay(*size) as screen, _session(screen.display) as (address, _):
        run.display, run.bus = screen.display, address
        os.environ["DBUS_SESSION_BUS_ADDRESS"] = address  # for an element source in-process
        run.tree = Tree(address) if app.accessible else None
        backend = DesktopBackend(screen.display)

        def start() -> None:
            if not app.bus_after_window:
                _enable_accessibility(address)
            run.process = _start(run)
            if app.bus_after_window:
                threading.Thread(
                    target=_enable_when_shown, args=(screen.display, address), daemon=True
                ).start()

        try:
            if not late:
                start()
                _settled(backend, run)
                if situation == MOVED:
                    _move(screen.display, MOVE)
                    _settled(backend, run)
            yield run, backend, start
        finally:
            if run.process is not None:
                _stop(run.process)
            if run.tree is not None:
                run.tree.close()
            backend.close()
            os.environ.pop("DBUS_SESSION_BUS_ADDRESS", None)


def record(
    app: App, folder: Path, options: Options, situation: str = UNCHANGED, probe: bool = False
) -> Recording:
    """Record ``app``'s task in ``situation`` (the normal one; another only to probe: then
    the screens before each action and at the end are kept as PNG files in ``folder``)."""
    with _world(app, folder / "record", situation) as (run, backend, _):
        script = [tool_use_reply("computer", {"action": "screenshot"}), *app.script(run)]
        script.append(text_reply("Done."))
        tool = Witness(backend, run)
        with MessagesApiStandIn(script) as api:
            result = Agent(api.client(), [tool], model="claude-test").act(
                app.goal, _settings(folder / "cache", "record", options)
            )
        time.sleep(0.5)
        _settled(backend, run, ended=True)
        outcome = app.outcome(run)
        if probe:
            for n, image in enumerate([*tool.before, backend.screenshot()]):
                image.save(folder / f"probe-{n + 1}.png")
    if result.conversation.recorded_file != "task.json":
        raise RuntimeError(f"{app.name}: the recording was not written")
    recording = Recording(folder, tool.before, tool.reached, outcome)
    print(f"{app.name}: recorded; reached {tool.reached}; result {outcome!r}", flush=True)
    return recording


_ELEMENT_MS: dict[str, float] = {}
"""The running replay's element-check time per step (:func:`_timed_element_checks`)."""
_ELEMENT_TRIPS: dict[str, int] = {}
"""The running replay's element-check round trips per step (:func:`_timed_element_checks`)."""
_ELEMENT_LOOKS: dict[str, int] = {}
"""The running replay's element-checked looks per step (:func:`_timed_element_checks`)."""
_TRIPS = [0]
"""Round trips made so far (every connection's replies read: :func:`_timed_element_checks`)."""


def _timed_element_checks() -> None:
    """Time :func:`askcache.replay.element_check.with_element` where the pixel check calls
    it, summed per step into :data:`_ELEMENT_MS` (the bench's own measurement: the check is
    run as it is, only timed)."""
    from askcache.replay import check as check_module

    checked = check_module.with_element
    if getattr(checked, "timed", False):
        return

    from askcache.tools import atspi_bus

    receive = atspi_bus._Connection.receive

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        _TRIPS[0] += 1
        return receive(self, *args, **kwargs)

    atspi_bus._Connection.receive = counted  # type: ignore[method-assign]

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        trips = _TRIPS[0]
        try:
            return checked(*args, **kwargs)
        finally:
            key = str(args[1])
            _ELEMENT_MS[key] = _ELEMENT_MS.get(key, 0.0) + (time.perf_counter() - started) * 1000
            _ELEMENT_TRIPS[key] = _ELEMENT_TRIPS.get(key, 0) + _TRIPS[0] - trips
            _ELEMENT_LOOKS[key] = _ELEMENT_LOOKS.get(key, 0) + 1

    timed.timed = True  # type: ignore[attr-defined]
    check_module.with_element = timed  # type: ignore[assignment]


def _handback_note(replay_: Any) -> str:
    """The note of the step a replay handed back at (``""``: none)."""
    if replay_ is None or not replay_.handback_steps:
        return ""
    at = replay_.handback_steps[0]
    notes = [r.note for r in replay_.steps if r.step_index == at and r.note]
    return notes[-1] if notes else ""


def replay(
    app: App, recording: Recording, situation: str, number: int, options: Options
) -> Outcome:
    """One replay of the recording in ``situation``, from a fresh copy of its cache folder."""
    _timed_element_checks()
    _ELEMENT_MS.clear()
    _ELEMENT_TRIPS.clear()
    _ELEMENT_LOOKS.clear()
    folder = recording.folder / f"{situation.replace(' ', '-')}-{number}"
    cache = folder / "cache"
    shutil.copytree(recording.folder / "cache", cache)
    late = situation == LATE
    with _world(app, folder, situation, late=late) as (run, backend, start):
        tool = Witness(backend, run)
        model = Stopper(backend)
        with MessagesApiStandIn(model) as api:
            agent = Agent(api.client(), [tool], model="claude-test")
            if late:
                start()
            started = time.monotonic()
            result = agent.act(app.goal, _settings(cache, "execute", options))
            seconds = time.monotonic() - started
        time.sleep(0.3)
        result_text = app.outcome(run)
    if os.environ.get("RERENDER_STEPS") and result.replay is not None:
        for record in result.replay.steps:  # each step's verdict, for reading a run
            print(f"  step {record.step_index} {record.action}: {record.decided_by}; {record.note}")
    outcome = _judge(
        app=app,
        recording=recording,
        situation=situation,
        result=result,
        tool=tool,
        model=model,
        result_text=result_text,
        seconds=seconds,
    )
    outcome.element_ms = {k: round(v, 2) for k, v in _ELEMENT_MS.items()}
    outcome.element_trips = dict(_ELEMENT_TRIPS)
    outcome.element_looks = dict(_ELEMENT_LOOKS)
    return outcome


def _judge(
    *,
    app: App,
    recording: Recording,
    situation: str,
    result: ActResult,
    tool: Witness,
    model: Stopper,
    result_text: str,
    seconds: float,
) -> Outcome:
    replay_ = result.replay
    status = "no replay" if replay_ is None else replay_.status
    replayed = [n for n, r in enumerate(tool.replayed) if r]
    outcome = Outcome(
        app=app.name,
        situation=situation,
        status=status,
        model_calls=result.model_calls,
        replayed=len(replayed),
        handed_back_at=replay_.handback_steps[0] if replay_ and replay_.handback_steps else None,
        reason="" if replay_ is None else (replay_.reason or ""),
        note=_handback_note(replay_),
        result=result_text,
        seconds=seconds,
    )
    handed_back = result.model_calls > 0
    if situation == EXTRA:
        for n in replayed:
            if n < len(recording.before) and not _same(tool.before[n], recording.before[n]):
                outcome.wrong.append(
                    f"action {n + 1} on a changed screen "
                    f"({_differing(tool.before[n], recording.before[n])} px differ)"
                )
        if handed_back and model.first is not None:
            at = min(len(replayed), len(recording.before) - 1)
            outcome.needless = int(_same(model.first, recording.before[at]))
        return outcome
    for n in replayed:
        recorded = recording.reached[n] if n < len(recording.reached) else None
        now = tool.reached[n]
        if recorded is None:
            continue  # not a click
        if now is None or now[0] == "unanswered":
            outcome.unjudged += 1
        elif now != recorded:
            outcome.wrong.append(f"action {n + 1} reached {now!r}, recorded {recorded!r}")
    if situation in HARMLESS:
        outcome.needless = int(handed_back)
        if not handed_back and result_text != recording.result and not outcome.wrong:
            outcome.wrong.append(f"result {result_text!r}, recorded {recording.result!r}")
    if situation == RELABEL:
        reached = any(n + 1 >= app.relabel_action for n in replayed)
        outcome.relabel_caught = handed_back and not reached
        if reached and not any(f"action {app.relabel_action} " in w for w in outcome.wrong):
            outcome.wrong.append(f"action {app.relabel_action} (the relabelled control) replayed")
    return outcome


# The table -------------------------------------------------------------------------------


def table(outcomes: list[Outcome]) -> str:
    rows = [
        "| application | toolkit | situation | runs | 0-call replays | wrong actions "
        "| needless hand-backs | relabels caught before acting | status | median `act` s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    groups: dict[tuple[str, str], list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault((o.app, o.situation), []).append(o)
    toolkits = {a.name: a.toolkit for a in APPS}
    for (app, situation), group in groups.items():
        statuses: dict[str, int] = {}
        for o in group:
            statuses[o.status] = statuses.get(o.status, 0) + 1
        wrong = sum(len(o.wrong) for o in group)
        caught = (
            f"{sum(bool(o.relabel_caught) for o in group)} of {len(group)}"
            if situation == RELABEL
            else "-"
        )
        needless = "-" if situation == RELABEL else str(sum(o.needless for o in group))
        rows.append(
            f"| {app} | {toolkits[app]} | {situation} | {len(group)} "
            f"| {sum(o.model_calls == 0 for o in group)} | {f'**{wrong}**' if wrong else 0} "
            f"| {needless} | {caught} "
            f"| {', '.join(f'{n} {s}' for s, n in statuses.items())} "
            f"| {statistics.median(o.seconds for o in group):.1f} |"
        )
    return "\n".join(rows)


def summary(outcomes: list[Outcome]) -> str:
    """The issue's goals against these runs, seen and unseen applications apart."""
    unseen = {a.name for a in APPS if a.unseen}
    accessible = {a.name for a in APPS if a.accessible}
    lines = []
    for label, chosen in (
        ("accessible, used before", lambda o: o.app in accessible and o.app not in unseen),
        ("accessible, unseen (chosen before tuning)", lambda o: o.app in unseen),
        ("no accessibility (Tk, xcalc)", lambda o: o.app not in accessible),
    ):
        group = [o for o in outcomes if chosen(o)]
        if not group:
            continue
        drawn = [o for o in group if o.situation in (DENSITY, THEME, FONT)]
        placed = [o for o in group if o.situation in (MOVED, LATE)]
        relabel = [o for o in group if o.situation == RELABEL]
        extra = [o for o in group if o.situation == EXTRA]

        def share(runs: list[Outcome]) -> str:
            zero = sum(o.model_calls == 0 for o in runs)
            return f"{zero} of {len(runs)}" + (f" ({100 * zero / len(runs):.0f} %)" if runs else "")

        lines.append(
            f"- **{label}**: first sight of a re-render (2x density, other theme, bigger "
            f"font) replayed with 0 model calls in {share(drawn)} runs, of a moved window or "
            f"a late start in {share(placed)}; **wrong actions** "
            f"(dangerous) {sum(len(o.wrong) for o in group if o.situation != EXTRA)}"
            + (
                f", and {sum(len(o.wrong) for o in extra)} on extra line by drift's rule "
                "(acted on a screen that differed)"
                if extra
                else ""
            )
            + f"; **needless hand-backs** (costly) {sum(o.needless for o in group)}; relabels "
            f"handed back before their action {sum(bool(o.relabel_caught) for o in relabel)} "
            f"of {len(relabel)}; replayed clicks the application's side could not place "
            f"{sum(o.unjudged for o in group)}."
        )
    cost = _element_cost(outcomes)
    if cost:
        lines += ["", cost]
    wrong: dict[str, int] = {}
    for o in outcomes:
        for w in o.wrong:
            line = f"{o.app}, {o.situation}: {w}; then {o.status}"
            wrong[line] = wrong.get(line, 0) + 1
    if wrong:
        lines += ["", "The wrong actions:", ""]
        lines += [f"- {line}" + (f" ({n} runs)" if n > 1 else "") for line, n in wrong.items()]
    return "\n".join(lines)


def _element_cost(outcomes: list[Outcome]) -> str:
    """The element check's time per acting step (every look of the step summed), on
    unchanged screens, per application: what the anchors add to a step that acts."""
    per_app: dict[str, list[float]] = {}
    trips: dict[str, list[int]] = {}
    for o in outcomes:
        if o.situation == "unchanged" and o.element_ms:
            per_app.setdefault(o.app, []).extend(o.element_ms.values())
            trips.setdefault(o.app, []).extend(o.element_trips.values())
    if not per_app:
        return ""
    parts = []
    for app, times in per_app.items():
        ordered = sorted(times)
        p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
        counted = trips.get(app, [])
        words = f", {statistics.median(counted):g} round trips" if any(counted) else ""
        parts.append(
            f"{app} {statistics.median(ordered):.1f} ms (p90 {p90:.1f}{words}, "
            f"{len(ordered)} steps)"
        )
    return (
        "**Time the element check adds per acting step** (`with_element`, every look of the "
        "step summed; *unchanged*, median): " + "; ".join(parts) + "."
    )


def measure(
    plan: list[tuple[App, str]], folder: Path, options: Options, runs: int, minutes: float | None
) -> list[Outcome]:
    """Record each planned application's task, then replay it in its planned situations,
    one round after another (each round one run of each), ``runs`` rounds or until
    ``minutes`` have passed."""
    started = time.monotonic()
    recordings = {}
    for app in dict.fromkeys(app for app, _ in plan):
        recordings[app.name] = record(app, folder / app.name.split()[0], options)
    outcomes: list[Outcome] = []
    for number in range(runs):
        if minutes is not None and time.monotonic() - started > minutes * 60:
            print(f"time is up after {number} rounds", flush=True)
            break
        for app, situation in plan:
            try:
                o = replay(app, recordings[app.name], situation, number, options)
            except Exception as error:  # one broken run is reported, not fatal
                print(f"{app.name} / {situation}: run failed: {error!r}", flush=True)
                continue
            outcomes.append(o)
            print(
                f"{o.app} / {o.situation} #{number + 1}: {o.status}, calls {o.model_calls}, "
                f"replayed {o.replayed}, wrong {o.wrong}, needless {o.needless}, "
                f"caught {o.relabel_caught}, unjudged {o.unjudged}, at {o.handed_back_at}, "
                f"result {o.result!r}, {o.seconds:.1f} s; {o.reason}",
                flush=True,
            )
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="replays per application and situation")
    parser.add_argument("--only", nargs="*", help="applications or situations containing these")
    parser.add_argument(
        "--situations", nargs="*", help="and of these, only the situations containing these"
    )
    parser.add_argument("--detail-hash", choices=["on", "off"], default="on")
    parser.add_argument(
        "--pixels-only", action="store_true", help="the element anchors off (the baseline)"
    )
    parser.add_argument(
        "--minutes", type=float, default=None, help="stop starting rounds after this long"
    )
    parser.add_argument("--json", type=Path, help="also write every run's figures here")
    parser.add_argument("--keep", type=Path, help="keep the runs' folders here")
    parser.add_argument("--no-write", action="store_true", help="print, do not write the docs")
    parser.add_argument(
        "--probe",
        metavar="SITUATION",
        help="record the chosen applications' tasks in this situation, keep the screens "
        "(in --keep) and stop",
    )
    parser.add_argument(
        "--from-json", type=Path, help="write the docs section of a run saved by --json, and stop"
    )
    args = parser.parse_args(argv)
    if args.from_json is not None:
        _write(json.loads(args.from_json.read_text()))
        return 0
    options = Options(detail_hash=args.detail_hash == "on", pixels_only=args.pixels_only)
    mode = "pixel-only" if args.pixels_only else "element anchors on (the defaults)"
    mode += f", detail hash {args.detail_hash}"
    print(f"mode: {mode}", flush=True)

    def chosen(*names: str) -> bool:
        return not args.only or any(o.lower() in n.lower() for o in args.only for n in names)

    plan = [
        (app, situation)
        for app in APPS
        for situation in SITUATIONS
        if (situation != EXTRA or app.editor)
        and chosen(app.name, situation)
        and (not args.situations or any(s.lower() in situation.lower() for s in args.situations))
    ]
    started = time.monotonic()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="rerender-"))
    if args.probe:
        for app in dict.fromkeys(app for app, _ in plan):
            record(app, folder / app.name.split()[0], options, args.probe, probe=True)
        return 0
    try:
        outcomes = measure(plan, folder, options, args.runs, args.minutes)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    elapsed = time.monotonic() - started
    text = table(outcomes) + "\n\n" + summary(outcomes)
    print(text)
    print(f"mode: {mode}; {len(outcomes)} replays in {elapsed / 60:.1f} min")
    from bench._common import machine

    saved = {
        "mode": mode,
        "detail_hash": args.detail_hash,
        "elapsed": elapsed,
        "where": machine(),
        "note": f"{len(outcomes) // max(1, len(plan))} rounds of the {len(plan)} cells "
        "(runs per application and situation).",
        "outcomes": [asdict(o) for o in outcomes],
    }
    if args.json is not None:
        args.json.write_text(json.dumps(saved, indent=1))
    if not args.no_write:
        _write(saved)
    return 0


def _write(saved: dict[str, Any]) -> None:
    """Write a run (as ``--json`` saves it) into its section of docs/benchmarks.md."""
    from bench._common import write_section

    outcomes = [Outcome(**o) for o in saved["outcomes"]]
    text = table(outcomes) + "\n\n" + summary(outcomes)
    anchors = "" if saved["mode"].startswith("pixel-only") else "anchors-"
    write_section(f"rerender-{anchors}{saved['detail_hash']}", _section(text, saved, len(outcomes)))


def _section(text: str, saved: dict[str, Any], count: int) -> str:
    def run(*command: str) -> str:
        return subprocess.run(command, check=False, capture_output=True, text=True).stdout.strip()

    packages = "mousepad yad featherpad speedcrunch chromium libffi-dev x11-apps"
    versions = run("dpkg-query", "-W", "-f", "${Package} ${Version}; ", *packages.split())
    return f"""## Re-rendered and relabelled screens (`bench/rerender.py`, {saved["mode"]})

{saved["where"]} `uname -srm`: {run("uname", "-srm")}; Debian packages: {versions.rstrip("; ")}.
{saved.get("note", "")}
{count} replays in {saved["elapsed"] / 60:.0f} minutes, each on a fresh X server, D-Bus
session bus and AT-SPI registry, application and copy of the recording's cache folder (so
each is a first sight). The machine is shared: the load average above counts the other work
on it.

Each application's task is recorded once in the normal situation (a scripted model through
the real `anthropic` client and the local stand-in), then replayed with
`strategy="execute"` and the default settings (bench/drift.py's and the demo's; the demo
only adds `keep_step_views`, which changes no decision) in each situation; when the replay
hands back, the model stops. The applications, tasks and situations are listed in
`bench/rerender.py`'s docstring: GTK 3 (mousepad; **yad**, unseen), Qt 5 (featherpad;
**speedcrunch**, unseen), Chromium (bench/weblist.py's list page with a Save button;
**libffi's HTML manual**, unseen), and without accessibility the Tk form and xcalc; *2x
density* (2048x1536, the application drawn at 2x), *other theme* (Adwaita dark, Qt's
Windows style, Chromium's forced dark page, a dark Tk form, xcalc in reverse video),
*bigger font* (GTK 13 pt, Qt at 120 dpi, 20 px pages, Tk text 1.3x, xcalc 9x15bold),
*relabelled* (the clicked control's text: German menus, Save reads Send, a link reads
another title, xcalc's 7 reads 9), drift's *moved window*, *started late* and *extra line*.
The unseen applications were chosen before any run and nothing was tuned on them.

**Wrong actions** (dangerous), judged from the application's side: a replayed click on
another control than the recording's (the AT-SPI tree, asked by the benchmark over its own
D-Bus connection just before the click; the Tk form's published widget boxes; xcalc's key
windows; with its label, so that any click on a relabelled control is wrong), or a replay
that completed with another result (the saved file, yad's answer, the clipboard, the page
the browser asked for, the form's saved contacts); on *extra line* drift's rule (an action
on a screen that differed from the recording's). **Needless hand-backs** (costly):
hand-backs on the harmless re-renders (every situation but *relabelled* and *extra line*).
**0-call replays**: replays that made no model call. **Relabels caught**: replays of
*relabelled* that handed back before any action reached the relabelled control.

{text}
"""


if __name__ == "__main__":
    sys.exit(main())
