"""What the X server says was drawn, and when: its DAMAGE extension, read on the caller's
thread.

A replayed step acts only on a screen that has stopped changing. Without word from the
platform that means sampling: a second look, a settle period later, must show the same
screen. Where the X server has the DAMAGE extension it says itself where it drew:
:class:`ScreenDamage` keeps a damage object on the root window, reads its reports on a
connection of its own and answers two questions:

- :meth:`~ScreenDamage.mark`: a token for "now" in the stream of reports;
- :meth:`~ScreenDamage.damaged_since`: whether anything was drawn since a mark, anywhere or
  inside a box.

The protocol a step follows::

    mark = damage.mark()
    image = capture()                     # any connection: mss, the backend, ...
    if check(image):
        sleep until FRAME_PERIOD after mark.at
        if not damage.damaged_since(mark, box):
            act                           # image is the screen, and it was still a frame long
        else:
            look again

How the reports work: the damage object (``DamageReportDeltaRectangles``) gathers what was
drawn into a region, and reports each drawing that adds to it, with the part it adds. Each
:meth:`~ScreenDamage.mark` empties the region (``DamageSubtract``), so drawing after a mark is
always reported at least once, and drawing again and again over the same pixels (an animation)
is reported once between two marks, however long: the reports a replay that does not ask for
an hour must read stay few.

Why it is safe (an answer "not damaged" is never wrong about the capture):

- Every report describes drawing the server has already done: the server draws when it
  handles a request and reports it then (Xvfb draws at once; a GPU server finishes its
  drawing before it answers a capture).
- A mark sends the ``DamageSubtract`` and then makes a round trip (a ``GetInputFocus`` request
  and its reply, as ``XSync`` does). Each report carries the number of the last request of
  this connection the server had handled: those handled after the subtract are after the mark,
  the others before it. So a pixel drawn after the mark is always in a report after the mark:
  either it was added to the region emptied at this mark or a later one (reported then), or it
  was already in it (reported when it was added, after that emptying).
- The mark returns before the capture is asked for, so drawing the capture does not show
  was done after the mark: its report counts after it. Drawing done after the subtract but
  before the capture counts after the mark too, although the capture shows it: the answer is
  then "damaged" (a look more, never a wrong action).
- :meth:`~ScreenDamage.damaged_since` first makes a round trip. The server sends a client its
  events and replies in order, so when the reply is in, every report of drawing done until the
  server answered is in too: nothing drawn before the question is missed.
- :attr:`DamageMark.at` is taken after the mark's round trip: the quiet period counted from it
  is, if anything, longer than the one the server saw.
- Reports are kept for the latest :data:`KEPT_REPORTS`; a mark older than that is answered
  "damaged".

What "still" cannot be told from damage: an application that has not yet sent the drawing of
an input it received. That is what the quiet period is for: an application answers an input
within a frame or two (GTK and Chromium draw at most once per frame, 60 a second), so no
drawing for one :data:`FRAME_PERIOD` after a look means the look shows a finished frame, as
far as the application is drawing at the pace of the screen (``bench/damage_still.py``
measures how often the frame seen at that instant is the final one).

What reports what, measured on Xvfb (``tests/integration/test_screen_damage.py``,
``bench/damage_still.py``): drawing by any window, top-level or child, and by any toolkit
(Tk, Xt's xterm, GTK 3, Chromium), reaches the root window's damage object: a window that is
not redirected draws into the screen's own pixels, and the root's damage covers its
inferiors. Mapping, unmapping and moving windows are drawing too; moving the pointer is not.
Under a compositing manager, windows draw into pixmaps of their own and reach the screen
when the manager paints them, which is then what is reported (not measured). An X server
without DAMAGE (``Xvfb -extension DAMAGE``), no X display, or no python-xlib:
:meth:`ScreenDamage.open` returns ``None`` and the caller keeps sampling.

Boxes are ``(left, top, right, bottom)`` in the screen's pixels
(:data:`askcache.foundation.geometry.Box`, right and bottom exclusive); :class:`ScaledDamage` takes
them in another space, such as the computer tool's scaled screenshots
(:meth:`askcache.tools.computer.ComputerTool.screen_damage`). A :class:`ScreenDamage` is used from
one thread at a time.
"""

from __future__ import annotations

import math
import os
import struct
import time
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol, runtime_checkable

from askcache.foundation.errors import AskCacheError
from askcache.foundation.geometry import Box
from askcache.foundation.screen.xserver import connect

__all__ = [
    "FRAME_PERIOD",
    "KEPT_REPORTS",
    "DamageMark",
    "DamageReporter",
    "DamageSource",
    "ScaledDamage",
    "ScreenDamage",
    "ScreenDamageLostError",
]

FRAME_PERIOD = 0.017
"""Seconds of one frame at 60 Hz (rounded up): how long the screen must stay undamaged after
a look before that look counts as a finished frame."""

KEPT_REPORTS = 65536
"""Reports kept: a mark older than the latest this many is answered "damaged"."""

_EXTENSION = "DAMAGE"
_VERSION = (1, 1)
_REPORT_DELTA_RECTANGLES = 1
"""``DamageReportDeltaRectangles``: a report per drawing that adds to the damaged region,
with the rectangles it adds."""
_NOTIFY = struct.Struct("=BBHIIIhhHHhhHH")
"""``DamageNotify``: type, level, sequence, drawable, damage, timestamp, the area drawn
(x, y, width, height) and the drawable's geometry; in the client's byte order, which
python-xlib announces to the server."""


class ScreenDamageLostError(AskCacheError, ConnectionError):
    """The connection that reads the X server's drawing reports is gone (the server exited):
    whether the screen was drawn on can no longer be told.

    Attributes:
        display: The X display, e.g. ``":3"``.
    """

    def __init__(self, display: str, reason: object) -> None:
        self.display = display
        super().__init__(f"lost the drawing reports of X display {display}: {reason}")


@dataclass(frozen=True)
class DamageMark:
    """A moment in the stream of drawing reports (:meth:`ScreenDamage.mark`)."""

    index: int
    """Reports received before it, since the stream was opened."""
    at: float
    """``time.monotonic()`` when it was taken (after its round trip to the server)."""


@runtime_checkable
class DamageSource(Protocol):
    """Says whether the screen was drawn on since a moment (:class:`ScreenDamage`)."""

    def mark(self) -> DamageMark:
        """A token for now: every drawing reported later counts as after it."""
        ...

    def damaged_since(self, mark: DamageMark, box: Box | None = None) -> bool:
        """True when drawing was reported after ``mark`` inside ``box`` (``None``: anywhere)."""
        ...


@runtime_checkable
class DamageReporter(Protocol):
    """A screen backend that can say where its screen was drawn
    (:meth:`askcache.tools.desktop.DesktopBackend.screen_damage`)."""

    def screen_damage(self) -> DamageSource | None:
        """The screen's drawing reports in its own pixels; ``None`` where the platform
        gives none."""
        ...


class ScreenDamage:
    """The drawing reports of an X display's screen (see the module's text). Open it with
    :meth:`open`; close it with :meth:`close` or a ``with`` block."""

    def __init__(self, connection: Any, display: str, damage: int) -> None:
        """Use :meth:`open`: it creates the damage object this reads."""
        self._connection = connection
        self.display = display
        """The X display, e.g. ``":3"``."""
        self._damage = damage
        screen = connection.screen()
        self.size: tuple[int, int] = (int(screen.width_in_pixels), int(screen.height_in_pixels))
        """Width and height of the screen in pixels: the space of boxes."""
        self._areas: list[Box] = []
        """The latest reports' areas, oldest first."""
        self._dropped = 0
        """Reports received and no longer kept (before ``_areas[0]``)."""
        self._closed = False

    @classmethod
    def open(cls, display: str | None = None) -> ScreenDamage | None:
        """The drawing reports of ``display`` (default: ``$DISPLAY``); ``None`` when there is
        no display, it cannot be reached, it has no DAMAGE extension, or python-xlib is not
        installed: the caller then watches the screen by sampling it."""
        chosen = display or os.environ.get("DISPLAY")
        if not chosen:
            return None
        with warnings.catch_warnings():
            # python-xlib leaves the socket of a connection it could not make open; it is
            # collected when the error is dropped, here
            warnings.simplefilter("ignore", ResourceWarning)
            try:
                connection = connect(chosen)
            except Exception:  # ImportError, python-xlib's own errors, OSError
                connection = None
        if connection is None:
            return None
        try:
            damage = _start(connection)
        except Exception:
            connection.close()
            raise
        if damage is None:
            connection.close()
            return None
        return cls(connection, chosen, damage)

    def __enter__(self) -> ScreenDamage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def received(self) -> int:
        """Reports received since the stream was opened."""
        return self._dropped + len(self._areas)

    def mark(self) -> DamageMark:
        """A token for now: the damaged region is emptied, and every drawing the server does
        after that is reported after the mark (it returns after a round trip to the
        server)."""
        index = self._receive(empty=True)
        return DamageMark(index=index, at=time.monotonic())

    def damaged_since(self, mark: DamageMark, box: Box | None = None) -> bool:
        """After a round trip to the server (so every drawing done until now is reported),
        True when a drawing reported after ``mark`` touches ``box`` (``(left, top, right,
        bottom)`` in screen pixels; ``None``: anywhere). A mark older than the reports kept
        (:data:`KEPT_REPORTS`) is answered True."""
        self._receive()
        start = mark.index - self._dropped
        if start < 0:
            return True
        areas = self._areas[start:]
        if box is None:
            return bool(areas)
        left, top, right, bottom = box
        return any(
            x0 < right and left < x1 and y0 < bottom and top < y1 for x0, y0, x1, y1 in areas
        )

    def areas_since(self, mark: DamageMark) -> list[Box] | None:
        """The areas drawn after ``mark``, in the order reported (``None``: the mark is older
        than the reports kept). For measurements; a check asks :meth:`damaged_since`."""
        self._receive()
        start = mark.index - self._dropped
        return None if start < 0 else self._areas[start:]

    def close(self) -> None:
        """Stop the reports and close the connection (again: nothing)."""
        if self._closed:
            return
        self._closed = True
        try:
            _requests()["Destroy"](
                display=self._connection.display,
                opcode=self._connection.display.get_extension_major(_EXTENSION),
                damage=self._damage,
            )
            self._connection.close()
        except Exception:  # the server may be gone already: nothing left to release
            return

    def _receive(self, *, empty: bool = False) -> int:
        """Empty the damaged region (``empty``), make a round trip to the server, then take
        every report received. Returns the number of reports received before the first one
        the server sent after it emptied the region (all of them: none, or not ``empty``)."""
        if self._closed:
            raise ScreenDamageLostError(self.display, "closed")
        connection = self._connection
        later: set[int] = set()
        boundary: int | None = None
        try:
            if empty:
                protocol = connection.display
                subtract = _requests()["Subtract"](
                    display=protocol,
                    opcode=protocol.get_extension_major(_EXTENSION),
                    damage=self._damage,
                    repair=0,  # None: the whole region
                    parts=0,
                )
                # a report carries the number (16 bits) of the last request of this
                # connection the server handled: the subtract, or the round trip after it
                later = {subtract._serial % 65536, (subtract._serial + 1) % 65536}
            connection.get_input_focus()  # XSync's round trip: every report before it is in
            while connection.pending_events():
                event = connection.next_event()
                area = getattr(event, "area", None)
                if area is None:
                    continue
                if boundary is None and event.sequence_number in later:
                    boundary = self.received
                self._areas.append(area)
        except Exception as exc:  # python-xlib's ConnectionClosedError and socket errors
            raise ScreenDamageLostError(self.display, exc) from exc
        if boundary is None:
            boundary = self.received
        excess = len(self._areas) - KEPT_REPORTS
        if excess > 0:
            del self._areas[:excess]
            self._dropped += excess
        return boundary


@dataclass(frozen=True)
class ScaledDamage:
    """A :class:`DamageSource` whose boxes are measured in ``space`` pixels (a scaled
    screenshot's) instead of the ``screen``'s own: each box is widened to whole screen
    pixels, so a scaled box never misses drawing the screen's box would see."""

    source: DamageSource
    """The reports, in screen pixels."""
    screen: tuple[int, int]
    """The screen's size in pixels."""
    space: tuple[int, int]
    """The size of the images boxes are measured on."""

    def mark(self) -> DamageMark:
        return self.source.mark()

    def damaged_since(self, mark: DamageMark, box: Box | None = None) -> bool:
        if box is None or self.space == self.screen:
            return self.source.damaged_since(mark, box)
        fx, fy = self.screen[0] / self.space[0], self.screen[1] / self.space[1]
        left, top, right, bottom = box
        widened = (
            math.floor(left * fx),
            math.floor(top * fy),
            math.ceil(right * fx),
            math.ceil(bottom * fy),
        )
        return self.source.damaged_since(mark, widened)


def _start(connection: Any) -> int | None:
    """Create a damage object on ``connection``'s root window reporting what each drawing
    adds to its region; its id, or ``None`` when the server has no DAMAGE extension."""
    info = connection.query_extension(_EXTENSION)
    if info is None:
        return None
    requests = _requests()
    protocol = connection.display
    protocol.set_extension_major(_EXTENSION, info.major_opcode)
    # python-xlib 0.15 keeps one table of event classes for every connection, and each new
    # connection registers its extensions' events in it (RANDR's may take DAMAGE's codes):
    # this connection gets a table of its own, and reads its reports with it
    protocol.event_classes = {**protocol.event_classes, info.first_event: _notify_class()}
    # the extension refuses every other request until the client said which version it
    # speaks
    requests["QueryVersion"](
        display=protocol,
        opcode=info.major_opcode,
        major_version=_VERSION[0],
        minor_version=_VERSION[1],
    )
    damage = int(protocol.allocate_resource_id())
    requests["Create"](
        display=protocol,
        opcode=info.major_opcode,
        damage=damage,
        drawable=connection.screen().root,
        level=_REPORT_DELTA_RECTANGLES,
    )
    connection.get_input_focus()  # a refused request surfaces here, not at the first mark
    return damage


@cache
def _requests() -> dict[str, Any]:
    """The DAMAGE requests askcache sends (python-xlib 0.15 has no module for the
    extension), built once python-xlib is known to be installed."""
    from Xlib.protocol import rq

    class QueryVersion(rq.ReplyRequest):  # type: ignore[misc]
        _request = rq.Struct(
            rq.Card8("opcode"),
            rq.Opcode(0),
            rq.RequestLength(),
            rq.Card32("major_version"),
            rq.Card32("minor_version"),
        )
        _reply = rq.Struct(
            rq.ReplyCode(),
            rq.Pad(1),
            rq.Card16("sequence_number"),
            rq.ReplyLength(),
            rq.Card32("major_version"),
            rq.Card32("minor_version"),
            rq.Pad(16),
        )

    class Create(rq.Request):  # type: ignore[misc]
        _request = rq.Struct(
            rq.Card8("opcode"),
            rq.Opcode(1),
            rq.RequestLength(),
            rq.Card32("damage"),
            rq.Drawable("drawable"),
            rq.Card8("level"),
            rq.Pad(3),
        )

    class Destroy(rq.Request):  # type: ignore[misc]
        _request = rq.Struct(
            rq.Card8("opcode"),
            rq.Opcode(2),
            rq.RequestLength(),
            rq.Card32("damage"),
        )

    class Subtract(rq.Request):  # type: ignore[misc]
        _request = rq.Struct(
            rq.Card8("opcode"),
            rq.Opcode(3),
            rq.RequestLength(),
            rq.Card32("damage"),
            rq.Card32("repair"),
            rq.Card32("parts"),
        )

    return {
        "QueryVersion": QueryVersion,
        "Create": Create,
        "Destroy": Destroy,
        "Subtract": Subtract,
    }


@cache
def _notify_class() -> type:
    """The event class python-xlib builds for each ``DamageNotify`` (it calls it with the
    event's 32 bytes): only the area drawn is read, as a box."""

    class DamageNotify:
        __slots__ = ("area", "sequence_number", "type")

        def __init__(self, display: Any, binarydata: bytes) -> None:
            fields = _NOTIFY.unpack_from(binarydata)
            self.type, self.sequence_number = fields[0] & 0x7F, fields[2]
            x, y, width, height = fields[6:10]
            self.area: Box = (x, y, x + width, y + height)

    return DamageNotify
