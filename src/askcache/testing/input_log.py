"""What reached an X server: every key and button event, whoever sent it (XRecord).

Tests and benchmarks count what an application received from the X server's side, not
from askcache's own report: :class:`InputLog` records the core key and button events of a
display (Xvfb has the RECORD extension) from the moment it is created.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from askcache.foundation.errors import AskCacheError
from askcache.foundation.screen.xserver import connect

__all__ = ["InputLog"]

_KEY_AND_BUTTON = {2: "key_press", 3: "key_release", 4: "button_press", 5: "button_release"}
"""Core event codes, by name."""


class InputLog:
    """Every key and button event the X server of ``display`` receives, in order (the
    XRecord extension): what reached the applications, whoever sent it.

    Args:
        display: The X display, e.g. ``":3"``.
        size: The screen's size: the log marks its place in the event stream with pointer
            moves to points of the right edge, used for nothing else.
        timeout: Seconds to wait for the log to start, or to catch up in :meth:`events`.

    Raises:
        AskCacheError: the log did not start (the server has no RECORD extension, or does
            not answer).
    """

    def __init__(self, display: str, size: tuple[int, int], *, timeout: float = 30.0) -> None:
        from Xlib import X
        from Xlib.ext import record

        self._X, self._record, self._size, self._timeout = X, record, size, timeout
        self._control = connect(display)
        self._data = connect(display)
        self._context = self._data.record_create_context(
            0,
            [record.AllClients],
            [
                {
                    "core_requests": (0, 0),
                    "core_replies": (0, 0),
                    "ext_requests": (0, 0, 0, 0),
                    "ext_replies": (0, 0, 0, 0),
                    "delivered_events": (0, 0),
                    "device_events": (X.KeyPress, X.MotionNotify),
                    "errors": (0, 0),
                    "client_started": False,
                    "client_died": False,
                }
            ],
        )
        self._events: list[tuple[str, int]] = []
        self._marks: dict[tuple[int, int], threading.Event] = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._data.record_enable_context, args=(self._context, self._receive)
        )
        self._thread.start()
        self._mark_count = 0
        # the log is live once a mark comes through: the context may not be enabled yet
        deadline = time.monotonic() + timeout
        while not self._mark(0.1):
            if time.monotonic() >= deadline:
                self.close()
                raise AskCacheError(f"the input log of X display {display} did not start")

    def _receive(self, reply: Any) -> None:
        from Xlib.protocol import rq

        if reply.category != self._record.FromServer or reply.client_swapped:
            return
        data = reply.data
        while data:
            event, data = rq.EventField(None).parse_binary_value(
                data, self._data.display, None, None
            )
            with self._lock:
                if event.type in _KEY_AND_BUTTON:
                    self._events.append((_KEY_AND_BUTTON[event.type], event.detail))
                elif event.type == self._X.MotionNotify:
                    mark = self._marks.get((event.root_x, event.root_y))
                    if mark is not None:
                        mark.set()

    def events(self) -> list[tuple[str, int]]:
        """The key and button events so far, as ``(kind, keycode or button)``: a pointer move
        to a point used for nothing else goes through the server after everything sent
        before it; once the log has seen it, it holds everything before.

        Raises:
            AskCacheError: the log did not catch up within the timeout.
        """
        if not self._mark(self._timeout):
            raise AskCacheError("the X server's input log did not come through")
        with self._lock:
            return list(self._events)

    def _mark(self, timeout: float) -> bool:
        """Move the pointer to a point used for nothing else; True once the log saw it."""
        from Xlib.ext import xtest

        self._mark_count += 1
        point = (self._size[0] - 1, self._size[1] - self._mark_count)
        mark = self._marks[point] = threading.Event()
        xtest.fake_input(self._control, self._X.MotionNotify, x=point[0], y=point[1])
        self._control.sync()
        return mark.wait(timeout)

    def close(self) -> None:
        """Stop recording and close the connections."""
        self._control.record_disable_context(self._context)
        self._control.flush()
        self._thread.join(self._timeout)
        self._data.record_free_context(self._context)
        self._control.close()
        self._data.close()
