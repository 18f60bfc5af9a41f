"""The AT-SPI element source on real applications of three toolkits, at 1x and 2x.

One Xvfb (1920x1200) and one private accessibility session (a D-Bus session bus, the AT-SPI
bus and its registry, :class:`askcache.testing.accessibility.AccessibilitySession`) for the
module; one application at a time on it: mousepad (GTK 3), FeatherPad (Qt 5, its bridge
on) and Debian's Chromium (its accessibility on, a local page), each at scale 1 and 2
(``GDK_SCALE``, ``QT_SCALE_FACTOR``, ``--force-device-scale-factor``). Points are found the
way a recording finds them: the control's place comes from the tree
(:meth:`~askcache.tools.atspi.AtspiElements.elements_like`), and what is at its centre is
asked again (:meth:`~askcache.tools.atspi.AtspiElements.element_at`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from askcache.foundation.screen.elements import Element, ElementSource, element_center
from askcache.foundation.screen.xserver import connect
from askcache.parity.evidence import _CHROMIUM_FLAGS, find_chromium
from askcache.testing import VirtualDisplay
from askcache.testing.accessibility import AccessibilitySession
from askcache.tools.atspi import AtspiElements
from askcache.tools.atspi_bus import AtspiTimeoutError, AtspiUnavailableError
from askcache.tools.computer import ComputerTool
from askcache.tools.desktop import DesktopBackend
from askcache.tools.xlib_windows import window_at

pytestmark = pytest.mark.integration

PAGE = """<!doctype html><html><head><title>Anchor page</title></head><body>
<h1>Anchors</h1><p>Some text to read here.</p>
<button id="go" style="font-size:20px;margin:20px"
  onclick="this.textContent = 'Sent'">Send now</button>
<input aria-label="Message" value="hello world" style="font-size:20px">
</body></html>
"""


@dataclass(frozen=True)
class Expected:
    """What the tests expect of one application."""

    command: tuple[str, ...]
    scale_env: str
    toolkit: str
    control: tuple[str, str]
    """A control's role and name."""
    control_ancestors: tuple[str, ...]
    """The roles of its ancestors, parent first, up to the frame."""
    frame: str
    """The frame's name."""
    text: tuple[str, str | None]
    """A text element's role and name."""
    offsets: bool
    """The toolkit gives character offsets."""
    settled: tuple[str, str] | None = None
    """An element (role, name) whose box lies inside the window once the layout settled."""


APPS = {
    "mousepad": Expected(
        command=("mousepad",),
        scale_env="GDK_SCALE",
        toolkit="gtk",
        control=("menu", "File"),
        control_ancestors=("menu bar", "filler", "filler", "frame"),
        frame="Untitled 1 - Mousepad",
        text=("text", None),
        offsets=True,
    ),
    "featherpad": Expected(
        command=("featherpad",),
        scale_env="QT_SCALE_FACTOR",
        toolkit="Qt",
        control=("push button", "Open"),
        control_ancestors=("tool bar", "frame"),
        frame="Untitled",
        text=("text", None),
        offsets=False,  # Qt 5 answers -1
    ),
    "chromium": Expected(
        command=(),
        scale_env="",
        toolkit="Chromium",
        control=("push button", "Send now"),
        control_ancestors=("document web",),
        frame="Anchor page - Chromium",
        text=("entry", "Message"),
        offsets=True,
        # At start the page's extents can be stale for a moment (an infobar pushed the page
        # down, its height not yet shrunk): past the window, they say no unit (fail closed).
        settled=("document web", "Anchor page"),
    ),
}


@dataclass
class Running:
    name: str
    scale: int
    display: str
    session: AccessibilitySession
    process: subprocess.Popen[bytes]
    source: AtspiElements
    expected: Expected

    def window(self) -> tuple[int, int, int, int]:
        """The application's window, as the X server has it."""
        connection = connect(self.display)
        try:
            top = window_at(connection, (5, 5))
        finally:
            connection.close()
        assert top is not None
        return top.box

    def like(self, role: str, name: str | None) -> Element:
        """The one showing element of ``role`` and ``name`` in the window."""
        x, y, width, height = self.window()
        probe = Element(role=role, name=name, box=(0, 0, 1, 1))
        found = self.source.elements_like(probe, (x + width // 2, y + height // 2))
        assert found is not None
        assert len(found) == 1, found
        return found[0]


def _inside(point: tuple[int, int], box: tuple[int, int, int, int]) -> bool:
    x, y, width, height = box
    return x <= point[0] < x + width and y <= point[1] < y + height


def _command(name: str, scale: int, folder: Path) -> tuple[list[str], dict[str, str]]:
    expected = APPS[name]
    if name != "chromium":
        return list(expected.command), {expected.scale_env: str(scale)}
    page = folder / "page.html"
    page.write_text(PAGE)
    return [
        find_chromium(),
        *_CHROMIUM_FLAGS,
        "--force-renderer-accessibility",
        "--no-default-browser-check",
        f"--user-data-dir={folder / 'profile'}",
        f"--force-device-scale-factor={scale}",
        "--window-position=0,0",
        "--window-size=900,600",
        page.as_uri(),
    ], {}


@pytest.fixture(
    scope="module",
    params=[(n, s) for n in APPS for s in (1, 2)],
    ids=lambda p: f"{p[0]}-{p[1]}x",
)
def app(
    request: pytest.FixtureRequest,
    screen: tuple[str, AccessibilitySession],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Running]:
    name, scale = request.param
    display, session = screen
    command, env = _command(name, scale, tmp_path_factory.mktemp(name))
    frame = APPS[name].frame
    with session.launch(
        *command, env=env, ready=lambda frames: ("frame", frame) in frames
    ) as process:
        source = AtspiElements(
            display, session_address=session.address, timeout=10, search_timeout=20
        )
        try:
            running = Running(name, scale, display, session, process, source, APPS[name])
            settled = APPS[name].settled
            if settled is not None:
                session.wait_for(lambda: _settled(running, *settled), what=f"{name}'s layout")
            yield running
        finally:
            source.close()


def _settled(running: Running, role: str, name: str) -> bool:
    """True when the one ``role`` ``name`` element lies inside the window."""
    window = running.window()
    probe = Element(role=role, name=name, box=(0, 0, 1, 1))
    found = running.source.elements_like(probe, (window[0] + 5, window[1] + 5))
    return found is not None and len(found) == 1 and _fits(found[0].box, window)


def _fits(inner: tuple[int, int, int, int], outer: tuple[int, int, int, int]) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[0] + inner[2] <= outer[0] + outer[2]
        and inner[1] + inner[3] <= outer[1] + outer[3]
    )


def test_the_control_at_its_centre_is_itself(app: Running) -> None:
    role, name = app.expected.control
    control = app.like(role, name)
    centre = element_center(control)
    found = app.source.element_at(centre)
    assert found is not None
    assert (found.role, found.name) == (role, name)
    assert "enabled" in found.states
    assert tuple(a.role for a in found.ancestors[: len(app.expected.control_ancestors)]) == (
        app.expected.control_ancestors
    )
    assert found.ancestors[-1].role == "frame"
    assert found.ancestors[-1].name == app.expected.frame
    assert _inside(centre, found.box)
    assert found.box == control.box
    assert found.window_box == app.window()
    assert found.toolkit == app.expected.toolkit
    assert found.identity() == control.identity()


def test_a_text_element_and_its_offset(app: Running) -> None:
    role, name = app.expected.text
    if name is not None:  # a field: on its text ("hello world"), not past its end
        field = app.like(role, name)
        point = (field.box[0] + field.box[2] // 8, element_center(field)[1])
    else:  # an editor: the middle of its window is its text
        x, y, width, height = app.window()
        point = (x + width // 2, y + height // 2)
    found = app.source.element_at(point)
    assert found is not None
    assert (found.role, found.name) == (role, name)
    assert "editable" in found.states
    if app.expected.offsets:
        assert found.text_offset is not None
        assert found.text_offset >= 0
    else:  # no offsets (Qt answers -1), but the document is empty: its only place is 0
        assert found.text_offset == 0


@pytest.mark.parametrize(
    "app", [("mousepad", 1), ("featherpad", 1)], indirect=True, ids=["mousepad", "featherpad"]
)
def test_a_focused_text_element_says_where_its_caret_is(app: Running) -> None:
    """Qt gives the caret's offset where it gives none at a point: what a key step checks."""
    x, y, width, height = app.window()
    point = (x + width // 2, y + height // 2)
    backend = DesktopBackend(app.display)
    try:
        backend.click(point, "left", 1, None)
        backend.key("ctrl+End", 1)
        start = app.session.wait_for(
            lambda: (f := app.source.element_at(point)) and f.caret_offset is not None and f,
            what="a focused editor",
        )
        backend.type_text("abc")
        typed = app.session.wait_for(
            lambda: (
                (f := app.source.element_at(point))
                and f.caret_offset == start.caret_offset + 3
                and f
            ),
            what="the caret three characters on",
        )
    finally:
        backend.close()
    assert typed.role == "text"
    assert typed.identity() == start.identity()  # the caret is no part of who it is


@pytest.mark.parametrize("app", [("mousepad", 1)], indirect=True, ids=["mousepad-1x"])
def test_the_model_sees_elements_in_its_own_pixels(
    app: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", app.session.address)
    backend = DesktopBackend(app.display)
    try:
        tool = ComputerTool(backend)
        assert tool.api_size == (1280, 800)  # the screen is 1920x1200
        elements = tool.elements()
        assert isinstance(elements, ElementSource)
        on_screen = app.like(*app.expected.control)
        model_point = tool.from_screen(element_center(on_screen))
        found = elements.element_at(model_point)
        assert found is not None
        assert (found.role, found.name) == app.expected.control
        assert _inside(model_point, found.box)
        assert found.box == on_screen.scaled((1920, 1200), (1280, 800)).box
        like = elements.elements_like(found, model_point)
        assert like is not None
        assert [e.box for e in like] == [found.box]
    finally:
        backend.close()


@pytest.mark.parametrize("app", [("chromium", 1), ("chromium", 2)], indirect=True, ids=["1x", "2x"])
def test_a_page_relabelled_is_another_element(app: Running) -> None:
    """The page relabels its button when it is clicked."""
    before = app.like(*app.expected.control)
    point = element_center(before)
    backend = DesktopBackend(app.display)
    try:
        backend.click(point, "left", 1, None)
    finally:
        backend.close()

    def relabelled() -> Element | None:
        found = app.source.element_at(point)
        return found if found is not None and found.name != before.name else None

    after = app.session.wait_for(relabelled, what="the relabelled button")
    assert (after.role, after.name) == ("push button", "Sent")
    assert after.identity() != before.identity()


@pytest.mark.parametrize("app", [("featherpad", 1)], indirect=True, ids=["featherpad-1x"])
def test_an_application_that_does_not_answer_costs_the_timeout(app: Running) -> None:
    point = element_center(app.like(*app.expected.control))
    quick = AtspiElements(app.display, session_address=app.session.address, timeout=0.3)
    try:
        assert quick.element_at(point) is not None
        os.kill(app.process.pid, signal.SIGSTOP)
        try:
            with pytest.raises(AtspiTimeoutError):
                quick.element_at(point)
        finally:
            os.kill(app.process.pid, signal.SIGCONT)
        assert app.session.wait_for(lambda: quick.element_at(point), what="the answer again")
    finally:
        quick.close()


def test_a_translated_application_names_its_controls_otherwise(
    screen: tuple[str, AccessibilitySession],
) -> None:
    display, session = screen
    source = AtspiElements(display, session_address=session.address, timeout=10)
    names = []
    try:
        for language in ("C", "de"):
            env = {"LANG": "C.UTF-8", "LANGUAGE": language, "LC_ALL": ""}
            title = "Untitled 1 - Mousepad" if language == "C" else "Unbenannt 1 - Mousepad"
            with session.launch("mousepad", env=env, ready=lambda f, t=title: ("frame", t) in f):
                menus = source.elements_like(Element(role="menu bar", box=(0, 0, 1, 1)), (5, 5))
                assert menus is not None
                assert len(menus) == 1
                found = source.element_at((menus[0].box[0] + 5, menus[0].box[1] + 5))
                assert found is not None
                assert found.role == "menu"
                names.append(found.name)
    finally:
        source.close()
    assert names == ["File", "Datei"]


def test_of_two_overlapping_windows_the_one_on_top_answers(
    screen: tuple[str, AccessibilitySession],
) -> None:
    from Xlib import X

    display, session = screen
    source = AtspiElements(display, session_address=session.address, timeout=10)
    point = (300, 300)  # in both windows: mousepad's 640x480 and FeatherPad's 700x500
    try:
        with (
            session.launch(
                "mousepad", ready=lambda f: ("frame", "Untitled 1 - Mousepad") in f
            ) as gtk,
            session.launch("featherpad", ready=lambda f: ("frame", "Untitled") in f),
        ):
            found = source.element_at(point)
            assert found is not None
            assert found.toolkit == "Qt"  # mapped last: on top
            connection = connect(display)
            try:
                pid = connection.get_atom("_NET_WM_PID")
                for window in connection.screen().root.query_tree().children:
                    owner = window.get_full_property(pid, 0)
                    viewable = window.get_attributes().map_state == X.IsViewable
                    if owner is not None and owner.value[0] == gtk.pid and viewable:
                        window.configure(stack_mode=X.Above)
                connection.sync()
            finally:
                connection.close()
            found = source.element_at(point)
            assert found is not None
            assert found.toolkit == "gtk"
            assert (found.role, found.ancestors[-1].name) == ("text", "Untitled 1 - Mousepad")
    finally:
        source.close()


def test_without_an_accessibility_bus_a_query_fails_at_once() -> None:
    with (
        VirtualDisplay(320, 240) as display,
        AccessibilitySession(display.display, accessibility=False) as session,
    ):
        source = AtspiElements(session_address=session.address, timeout=5)
        try:
            with pytest.raises(AtspiUnavailableError):
                source.element_at((10, 10))
        finally:
            source.close()


def test_a_bus_that_went_away_fails_then_comes_back_and_no_session_gives_no_source(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with VirtualDisplay(320, 240) as display:
        session = AccessibilitySession(display.display)
        session.start()
        source = AtspiElements(session_address=session.address, timeout=5)
        try:
            assert source.element_at((10, 10)) is None  # no application: nothing there
            session.stop_bus()  # the accessibility bus crashed
            with pytest.raises(AtspiUnavailableError):
                source.element_at((10, 10))
            assert source.element_at((10, 10)) is None  # a new bus, found again
            session.stop()  # the whole session went away
            with pytest.raises(AtspiUnavailableError):
                source.element_at((10, 10))
        finally:
            source.close()
            session.stop()
        monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
        backend = DesktopBackend(display.display)
        try:
            assert backend.elements() is None
            assert ComputerTool(backend).elements() is None
        finally:
            backend.close()


def test_a_qt_application_started_before_the_bus_registers_when_it_starts() -> None:
    with (
        VirtualDisplay(800, 600) as display,
        AccessibilitySession(display.display, start_bus=False) as session,
    ):
        process = subprocess.Popen(
            ["featherpad"],
            env=session.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            connection = connect(display.display)
            try:
                deadline = time.monotonic() + 60
                while window_at(connection, (5, 5)) is None:  # its window, before any bus
                    assert process.poll() is None
                    assert time.monotonic() < deadline
                    time.sleep(0.02)
            finally:
                connection.close()
            session.start_bus()
            frames = session.wait_for(lambda: session.frames(process.pid), what="FeatherPad")
            assert ("frame", "Untitled") in frames
            source = AtspiElements(display.display, session_address=session.address, timeout=10)
            try:
                found = source.element_at((5, 5))
                assert found is not None
                assert found.toolkit == "Qt"
            finally:
                source.close()
        finally:
            process.terminate()
            process.wait(timeout=10)
