"""AT-SPI's D-Bus messages as askcache writes and reads them (askcache.tools.atspi_wire),
checked against jeepney's general codec, and the source's pure rules (askcache.tools.atspi):
the scale a window is drawn at, what an action on an inner part reaches, models in scaled
pixels, and a source that works without jeepney's import at askcache's."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from jeepney import DBusAddress, new_error, new_method_call, new_method_return
from jeepney.low_level import Endianness, Header, HeaderFields, Message, MessageType

from askcache.foundation.geometry import Point
from askcache.foundation.screen.elements import Element, ScaledElements
from askcache.tools.atspi import _scale_of, _target
from askcache.tools.atspi_nodes import Node
from askcache.tools.atspi_roles import role_name, state_names
from askcache.tools.atspi_wire import ERROR, METHOD_RETURN, decode, encode_call, message_length
from askcache.tools.xlib_windows import StackedWindow

_OBJECT = DBusAddress("/org/a11y/atspi/accessible/12", bus_name=":1.5", interface="x.Y")


@pytest.mark.parametrize(
    ("signature", "args"),
    [("", ()), ("u", (0,)), ("iiu", (5, -7, 0)), ("ss", ("org.a11y.atspi.Accessible", "Name"))],
)
def test_a_call_is_written_as_jeepney_writes_it(signature: str, args: tuple[Any, ...]) -> None:
    theirs = new_method_call(_OBJECT, "GetExtents", signature or None, args).serialise(serial=9)
    ours = encode_call(
        9,
        destination=":1.5",
        path="/org/a11y/atspi/accessible/12",
        interface="x.Y",
        member="GetExtents",
        signature=signature,
        args=args,
    )
    assert ours == theirs


def _reply(signature: str, body: tuple[Any, ...], endianness: Endianness) -> bytes:
    call = new_method_call(_OBJECT, "X")
    call.header.serial = 7
    reply = new_method_return(call, signature or None, body)
    reply.header.fields[HeaderFields.sender] = ":1.9"
    header = Header(endianness, MessageType.method_return, 0, 1, 0, -1, reply.header.fields)
    return bytes(Message(header, body).serialise(serial=5))


@pytest.mark.parametrize("endianness", [Endianness.little, Endianness.big])
@pytest.mark.parametrize(
    ("signature", "body"),
    [
        ("", ()),
        ("(iiii)", ((1, -2, 3, 4),)),
        ("(so)", ((":1.2", "/a/b"),)),
        ("a(so)", ([(":1.2", "/a/b"), (":1.3", "/c")],)),
        ("as", (["org.a11y.atspi.Accessible", "é"],)),
        ("au", ([0x43200100, 0],)),
        ("v", (("(so)", (":1.2", "/x")),)),
        ("a{sv}", ({"Name": ("s", "hi"), "n": ("i", 3)},)),
        ("yb(ix)d", (3, True, (1, 2**40), 0.5)),
        ("aai", ([[1, 2], [], [3]],)),
    ],
)
def test_a_reply_is_read_as_jeepney_wrote_it(
    signature: str, body: tuple[Any, ...], endianness: Endianness
) -> None:
    data = _reply(signature, body, endianness)
    assert message_length(data + b"more") == len(data)
    assert message_length(data[:15]) is None
    message = decode(data)
    assert message.kind == METHOD_RETURN
    assert message.reply_serial == 7
    assert message.body == body


def test_an_error_is_read_with_its_name() -> None:
    call = new_method_call(_OBJECT, "X")
    call.header.serial = 3
    error = new_error(call, "org.freedesktop.DBus.Error.UnknownMethod", "s", ("no such",))
    message = decode(error.serialise(serial=4))
    assert message.kind == ERROR
    assert message.reply_serial == 3
    assert message.error_name == "org.freedesktop.DBus.Error.UnknownMethod"
    assert message.body == ("no such",)


def test_roles_and_states_are_named_as_libatspi_names_them() -> None:
    assert role_name(43) == "push button"
    assert role_name(54) == "status bar"  # GTK says "statusbar": the number decides
    assert role_name(0) is None
    assert role_name(1000) is None
    assert state_names([0x43200100, 0]) == {
        "enabled",
        "resizable",
        "sensitive",
        "showing",
        "visible",
    }
    assert state_names([0, 1 << 11]) == {"read_only"}


def _window(
    box: tuple[int, int, int, int], outer: tuple[int, int, int, int] | None = None
) -> StackedWindow:
    return StackedWindow(box=box, outer=outer or box, pid=1, title=None, popup=False)


def test_the_scale_is_the_one_at_which_the_frame_is_the_window() -> None:
    assert _scale_of((0, 0, 640, 480), _window((0, 0, 640, 480))) == 1.0
    assert _scale_of((0, 0, 640, 480), _window((0, 0, 1280, 960))) == 2.0
    assert _scale_of((10, 20, 640, 480), _window((15, 30, 960, 720))) == 1.5
    assert _scale_of((0, 0, 640, 480), _window((0, 0, 700, 480))) is None
    # a toolkit that counts the window manager's frame (GTK): the outer box
    window = _window((4, 30, 640, 480), outer=(0, 0, 648, 514))
    assert _scale_of((0, 0, 648, 514), window) == 1.0


def _node(role: str, name: str = "", states: frozenset[str] = frozenset()) -> Node:
    return Node(("a", f"/{role}/{name}"), role, name, None, states, (0, 0, 10, 10), 0, True)


def test_an_action_on_a_buttons_label_reaches_the_button() -> None:
    label, button = _node("static", "Send"), _node("push button", "Send")
    ancestry = [label, button, _node("document web", "Page"), _node("frame", "Page")]
    assert _target(ancestry) == 1
    # a label on its own stays itself
    assert _target([label, _node("paragraph"), _node("frame", "Page")]) == 0
    # an editable text is what it is, whatever holds it
    text = _node("text", states=frozenset({"editable"}))
    assert _target([text, _node("list item", "Row"), _node("frame")]) == 0


def test_an_unnamed_filler_is_the_nearest_element_that_means_something() -> None:
    viewport = _node("filler")
    ancestry = [viewport, _node("text", states=frozenset({"editable"})), _node("frame", "Ed")]
    assert _target(ancestry) == 1
    assert _target([_node("panel"), _node("filler"), _node("frame", "Ed")]) == 2
    assert _target([_node("panel", "Tools"), _node("frame", "Ed")]) == 0


class _Fixed:
    def __init__(self, element: Element) -> None:
        self.element = element
        self.asked: list[Point] = []

    def element_at(self, point: Point) -> Element | None:
        self.asked.append(point)
        return self.element

    def elements_like(self, element: Element, window_point: Point) -> list[Element] | None:
        self.asked.append(window_point)
        return [self.element]


def test_a_scaled_source_takes_points_to_the_screen_and_boxes_back() -> None:
    on_screen = Element(
        role="push button", name="OK", box=(300, 150, 90, 30), window_box=(0, 0, 1920, 1200)
    )
    source = _Fixed(on_screen)
    scaled = ScaledElements(source, screen=(1920, 1200), space=(1280, 800))
    found = scaled.element_at((230, 110))
    assert found is not None
    assert source.asked == [(345, 165)]
    assert found.box == (200, 100, 60, 20)
    assert found.window_box == (0, 0, 1280, 800)
    assert scaled.elements_like(found, (1000, 700)) == [found]
    assert source.asked[-1] == (1500, 1050)


def test_askcache_imports_without_jeepney() -> None:
    code = (
        "import sys\n"
        "sys.modules['jeepney'] = None\n"
        "import askcache.tools.atspi, askcache.tools.desktop\n"
        "from askcache.tools.atspi import AtspiElements\n"
        "from askcache.foundation.errors import MissingDependencyError\n"
        "source = AtspiElements(session_address='unix:path=/nonexistent')\n"
        "try:\n"
        "    source.element_at((1, 1))\n"
        "except MissingDependencyError as exc:\n"
        "    assert 'anchors' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('no error')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
