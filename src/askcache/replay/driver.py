"""The driver: does the I/O a replay's states ask for, and tells them what happened.

A state (:mod:`.states`) never looks at the screen or waits; it returns a command. The
driver carries out :class:`~askcache.replay.commands.Look` (a screenshot, and the windows
listed with it) and :class:`~askcache.replay.commands.Sleep` with a :class:`ScreenIO`, and
feeds the state the observation, until the state returns a command only the conversation can
answer (a tool call to run, a hand-back, the end, a re-join decision).

Where the screen is looked at through someone else's hands (the user's own loop, whose tool
runner takes the screenshots, :mod:`askcache.loop`), the same states are fed one observation
at a time (:meth:`~askcache.replay.session.ReplaySession.feed`): a look becomes a screenshot
action given to the loop, and its result the observation. No thread either way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image

from askcache.foundation.screen.damage import DamageMark, DamageSource
from askcache.foundation.screen.elements import ElementSource
from askcache.foundation.screen.windows import WindowFrame
from askcache.replay.commands import (
    Blind,
    Command,
    Drawn,
    Look,
    Observation,
    Quiet,
    Seen,
    Sleep,
    Woke,
)
from askcache.replay.plan import CAPTURE_ATTEMPTS, CaptureFailedError
from askcache.replay.screens import POLL_SECONDS

__all__ = ["ScreenIO", "carry_out", "listed_windows"]


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScreenIO:
    """What the driver looks and waits with."""

    capture: Callable[[], Image.Image] | None
    """Takes a screenshot as the model sees it (``None``: the replay cannot look itself)."""
    windows: Callable[[], list[WindowFrame] | None] | None = None
    """Lists the screen's windows as the model sees them (``None``: it cannot)."""
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    damage: DamageSource | None = None
    """Where the platform reports drawing (:mod:`askcache.foundation.screen.damage`): a look carries
    a mark, and a step acts once no drawing came for a frame after its passing look."""
    elements: ElementSource | None = None
    """What the platform's accessibility tree says is where
    (:mod:`askcache.foundation.screen.elements`): handed to each look, asked only when a check
    needs it (``None``: pixels alone)."""

    def mark(self) -> DamageMark | None:
        """A mark in the drawing reports, before a screenshot (``None``: none reported, or
        the reports are lost: the replay samples instead)."""
        if self.damage is None:
            return None
        try:
            return self.damage.mark()
        except Exception as exc:
            logger.info("the drawing reports cannot be read: %s", exc)
            return None

    def pause_until(self, instant: float) -> None:
        """Sleep until ``instant`` of :attr:`clock` (not at all when it has passed)."""
        delay = instant - self.clock()
        if delay > 0:
            self.sleep(delay)


def listed_windows(
    windows: Callable[[], list[WindowFrame] | None] | None,
) -> tuple[WindowFrame, ...] | None:
    """The windows ``windows`` lists now; ``None`` when it cannot (no window information:
    a step is then checked at its recorded point)."""
    if windows is None:
        return None
    try:
        listed = windows()
    except Exception as exc:
        logger.info("the windows could not be listed: %s", exc)
        return None
    return None if listed is None else tuple(listed)


def carry_out(command: Command, io: ScreenIO) -> Observation:
    """Carry out a :class:`Look` or a :class:`Sleep`; the observation that answers it. A
    screenshot is tried :data:`~askcache.replay.plan.CAPTURE_ATTEMPTS` times in a row,
    :data:`~askcache.replay.screens.POLL_SECONDS` apart, before the look is
    :class:`~askcache.replay.commands.Blind`."""
    if isinstance(command, Sleep):
        io.sleep(command.seconds)
        return Woke(io.clock())
    if isinstance(command, Quiet):
        return _quiet(command, io)
    if not isinstance(command, Look):
        raise TypeError(f"the driver carries out looks and sleeps, not {command!r}")
    io.pause_until(command.at)
    if not command.grab:
        return Seen(None, listed_windows(io.windows), io.clock())
    if io.capture is None:
        return Blind(CaptureFailedError(RuntimeError("no screen to look at")), io.clock())
    for attempt in range(1, CAPTURE_ATTEMPTS + 1):
        mark = io.mark()
        try:
            image = io.capture()
        except Exception as exc:
            if attempt == CAPTURE_ATTEMPTS:
                return Blind(CaptureFailedError(exc), io.clock())
            logger.info("screenshot %d of %d failed: %s", attempt, CAPTURE_ATTEMPTS, exc)
            io.sleep(POLL_SECONDS)
        else:
            return Seen(image, listed_windows(io.windows), io.clock(), mark, io.elements)
    raise AssertionError("unreachable")


def _quiet(command: Quiet, io: ScreenIO) -> Drawn:
    """Sleep until ``command.period`` after the look's mark (the reports' own clock), then
    ask whether anything was drawn since it; reports that cannot be read count as drawing
    (the state then looks again)."""
    mark = command.mark
    if io.damage is None or not isinstance(mark, DamageMark):
        return Drawn(True, io.clock())
    delay = mark.at + command.period - time.monotonic()
    if delay > 0:
        io.sleep(delay)
    try:
        drawn = io.damage.damaged_since(mark)
    except Exception as exc:
        logger.info("the drawing reports cannot be read: %s", exc)
        drawn = True
    return Drawn(drawn, io.clock())
