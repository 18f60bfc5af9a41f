"""The replay engine on a worker thread, its screenshots taken by the user's loop.

The replay (:class:`~askcache.replay.executor.CacheExecutor` and its session) takes its own
screenshots while it waits for a screen to settle, watches for a step's effect, or checks
whether the screen lets it re-join: it calls a ``screen`` function and reads the image it
returns. In the user's own loop there is no such function: only the loop's tool runner can
look at the screen. :class:`ScreenBridge` turns that call around: the engine runs on a worker
thread, and each screenshot it takes becomes a :class:`ScreenWanted` the loop answers with
its tool runner's screenshot (:meth:`ScreenBridge.answer`). The engine is the same one an
``Agent`` runs; only who takes the screenshot differs.

One engine call runs at a time, and the caller's thread waits on events, never on a clock.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from PIL import Image

__all__ = ["Returned", "ScreenBridge", "ScreenWanted"]

T = TypeVar("T")


@dataclass(frozen=True)
class ScreenWanted:
    """The engine waits for a screenshot of the screen as it is now."""


@dataclass(frozen=True)
class Returned(Generic[T]):
    """The engine call ended with ``value``."""

    value: T


@dataclass(frozen=True)
class _Raised:
    error: BaseException


class BridgeClosedError(Exception):
    """Given to the engine instead of a screenshot once the loop closed the replay."""


class ScreenBridge:
    """Runs engine calls on a worker thread; :meth:`capture` is their ``screen`` function."""

    def __init__(self) -> None:
        self._events: queue.Queue[ScreenWanted | Returned[object] | _Raised] = queue.Queue()
        self._answers: queue.Queue[Image.Image | Exception] = queue.Queue()
        self._running = False
        self._wanted = False
        self._closed = False

    @property
    def running(self) -> bool:
        """True from :meth:`start` until :meth:`wait` returned the call's value."""
        return self._running

    def capture(self) -> Image.Image:
        """The engine's screenshot, on the engine's thread: asks the loop and waits for its
        answer. Raises what the loop answered with when it could not take one."""
        if self._closed:
            raise BridgeClosedError("the replay was closed")
        self._events.put(ScreenWanted())
        answer = self._answers.get()
        if isinstance(answer, Exception):
            raise answer
        return answer

    def start(self, call: Callable[[], object]) -> None:
        """Run ``call`` on a worker thread; :meth:`wait` for what it needs or returns."""
        if self._running:
            raise RuntimeError("an engine call is already running")
        self._running = True

        def run() -> None:
            try:
                value = call()
            except BaseException as exc:  # handed to the caller's thread, raised there
                self._events.put(_Raised(exc))
            else:
                self._events.put(Returned(value))

        threading.Thread(target=run, name="askcache-replay", daemon=True).start()

    def wait(self) -> ScreenWanted | Returned[object]:
        """The next event of the running call: a screenshot it waits for, or its value.
        Raises what the call raised."""
        event = self._events.get()
        if isinstance(event, ScreenWanted):
            self._wanted = True
            return event
        self._running = False
        if isinstance(event, _Raised):
            raise event.error
        return event

    def answer(self, screen: Image.Image | Exception) -> None:
        """Answer the screenshot the call waits for: the image, or why there is none."""
        if not self._wanted:
            raise RuntimeError("no screenshot is wanted")
        self._wanted = False
        self._answers.put(screen)

    def close(self) -> None:
        """End the running call, if any: its screenshots fail from now on (the engine
        hands back, fail closed), and this returns once it has ended, so nothing changes
        the replay's state afterwards."""
        self._closed = True
        if self._wanted:
            self.answer(BridgeClosedError("the replay was closed"))
        while self._running:
            try:
                event = self.wait()
            except Exception:  # the call's own error: it ended, and the run is over
                return
            if isinstance(event, ScreenWanted):
                self.answer(BridgeClosedError("the replay was closed"))
