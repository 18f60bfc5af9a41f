"""Wait: watch the screen until a phase's outcome is good, the screen settles, or time runs out.

A phase evaluates the screen; while the outcome is not done, the screen is captured again
(soon at first, then every :data:`~askcache.replay.observe.POLL_SECONDS`:
:func:`~askcache.replay.observe.poll_pauses`) until the outcome is done, the screen has
stayed unchanged (and still different) for the quiet period, or the settle timeout passes. A
screen that comes back to one it showed lately (a blinking caret) has not changed.

Before a step acts, a passing check also needs a still screen: a later look, the step's
``settle_still_period`` after the first look it passed on, must pass too and show the same
screen near the step's window, so a frame the application is still drawing is not acted on.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TypeVar

from askcache.replay.observe import FIRST_POLL_SECONDS, Screen, capture, poll_pauses
from askcache.replay.state import CaptureFailedError, ReplayState
from askcache.screen.state import Thumbnail

__all__ = ["settle", "watch"]


_BLINK_STATES = 4
"""Distinct screens remembered while waiting: coming back to one of them is not a change
(a text caret blinks between two), so a screen that only blinks settles."""


T = TypeVar("T")


def _moved(seen: list[Thumbnail], current: Thumbnail | None, ignore: set[int]) -> bool:
    """True when ``current`` differs (outside ``ignore``) from every screen in ``seen``."""
    if current is None:
        return True
    return all(any(index not in ignore for index in last.changed_tiles(current)) for last in seen)


_ROUNDING = 1e-9
"""Seconds a clock's sums may be off by (0.1 + 0.025 - 0.1 is not quite 0.025)."""


@dataclass
class _Stillness:
    """While an outcome passes: whether the screen it passed on has stayed still long enough
    (see :func:`watch`)."""

    needed: float
    """Seconds the screen must stay unchanged (the outcome's)."""
    bound: float
    """Seconds after which a screen that keeps changing counts anyway (the quiet period, at
    least ``needed``)."""
    since: float
    """When the outcome began passing: the still period counts from that look."""
    changed: float
    """When the screen last changed since."""

    def settled(self, now: float) -> bool:
        # a clock's sums round: a look taken ``needed`` later may read a hair short of it
        still = now - self.changed >= self.needed - _ROUNDING
        return still or now - self.since >= self.bound

    def pause(self, now: float) -> float:
        """How long to wait before the look that can tell."""
        return max(self.changed + self.needed - now, FIRST_POLL_SECONDS)


def watch(
    state: ReplayState,
    screen: Screen,
    evaluate: Callable[[Screen], T],
    done: Callable[[T], bool],
    *,
    quiet: bool = True,
    still: Callable[[T], float] | None = None,
    outside: Callable[[T], Collection[int]] | None = None,
) -> tuple[T, float]:
    """Evaluate ``screen``; while the outcome is not ``done``, look again until the
    screen has stayed unchanged for the quiet period (only when ``quiet``), or the
    timeout. Returns the last outcome and the seconds waited.

    ``still``: how long the screen must stay unchanged before a done outcome counts (``0``:
    at once): counted from the first look the outcome passed on, a later look must pass too
    and show the same screen, apart from the tiles that changed by themselves when recorded
    and those ``outside`` names for the outcome (away from the step's window). A screen that
    keeps changing while the outcome passes counts after the quiet period (at least
    ``still``); the timeout ends the wait for a passing outcome, not for its stillness.
    Stillness is judged on thumbnails: a file that records none is not waited on."""
    started = state.clock()
    outcome = evaluate(screen)
    config = state.file.metadata.screen_state
    volatile = _volatile(state)

    def still_for(seen: T) -> float:
        return still(seen) if still is not None and config is not None else 0.0

    def stillness(now: float, seen: T) -> _Stillness:
        needed = still_for(seen)
        bound = max(state.settings.settle_quiet_period, needed)
        return _Stillness(needed, bound, since=now, changed=now)

    if not state.can_watch() or (done(outcome) and still_for(outcome) <= 0):
        return outcome, 0.0
    first = screen.thumbnail(config) if config is not None else None
    # the distinct screens seen lately: coming back to one of them (a blinking caret)
    # is no move
    seen = [first] if first is not None else []
    still_since, last = started, first
    passing = stillness(started, outcome) if done(outcome) else None
    pauses = poll_pauses()
    while True:
        now = state.clock()
        if passing is None and now - started >= state.settings.settle_timeout:
            break
        state.sleep(passing.pause(now) if passing is not None else next(pauses))
        screen = capture(state)
        outcome = evaluate(screen)
        now = state.clock()
        current = screen.thumbnail(config) if config is not None else None
        if not done(outcome):
            passing = None
        elif passing is None:
            passing = stillness(now, outcome)
        else:
            passing.needed = still_for(outcome)
            away = set(outside(outcome)) if outside is not None else set()
            if _changed(last, current, volatile | away):
                passing.changed = now
        last = current
        if _moved(seen, current, volatile):  # a file without thumbnails: every look moved
            if current is not None:
                seen = [*seen[-(_BLINK_STATES - 1) :], current]
            still_since = now
        if passing is not None:
            if passing.settled(now):
                break
        elif quiet and now - still_since >= state.settings.settle_quiet_period:
            break
    return outcome, state.clock() - started


def _changed(last: Thumbnail | None, current: Thumbnail | None, ignore: set[int]) -> bool:
    """True when ``current`` differs from the look before it (outside ``ignore``)."""
    if last is None or current is None:
        return True
    return any(index not in ignore for index in last.changed_tiles(current))


def settle(state: ReplayState) -> None:
    """Watch the screen until it has stayed unchanged for the quiet period (or the
    timeout): before handing back after a step that ran but whose effect was not watched
    (its tool call failed), so the model's first look shows what the step did. Nothing
    when the screen cannot be watched or read."""
    if not state.can_watch() or state.file.metadata.screen_state is None:
        return
    try:
        watch(state, capture(state), lambda seen: None, lambda _: False)
    except CaptureFailedError:
        return


def _volatile(state: ReplayState) -> set[int]:
    end = state.end_state
    return set(end.volatile) if end is not None else set()
