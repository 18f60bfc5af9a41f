"""Watching: look at the screen until an outcome is good, the screen settles, or time runs out.

A state that waits for the screen holds a :class:`Watch`, a value: it is given each look
(:meth:`Watch.saw`) and answers with the next watch (and when to look again) or with what
was watched (:class:`Watched`). It never captures, sleeps or reads a clock: the look and its
instant come from the driver (:mod:`.driver`).

While the outcome is not done the screen is looked at again (soon at first, then every
:data:`~askcache.replay.screens.POLL_SECONDS`) until the outcome is done, the screen has
stayed unchanged (and still different) for the quiet period (only when ``quiet``), or the
settle timeout passes. ``patience`` may end it sooner: for an outcome that is not done, on a
given look, how long the unchanged screen is enough (the step's window is on the screen and
has answered: :class:`~askcache.replay.states.Checking`). A screen that comes back to one it
showed lately (a blinking caret) has not changed.

Before a step acts, a passing check also needs a still screen (``still``: how long, for the
outcome): a later look, that long after the first look it passed on, must pass too and show
the same screen apart from the tiles that changed by themselves when recorded and those
``outside`` names (away from the step's window), so a frame the application is still
drawing is not acted on. A screen that keeps changing while the outcome passes counts after
the quiet period (at least ``still``); the timeout ends the wait for a passing outcome, not
for its stillness. Stillness is judged on thumbnails: a file that records none is not waited
on.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from askcache.foundation.screen.thumbnails import ScreenStateConfig, Thumbnail
from askcache.replay.screens import FIRST_POLL_SECONDS, Screen, poll_pause

__all__ = ["Watch", "Watched"]

T = TypeVar("T")

_BLINK_STATES = 4
"""Distinct screens remembered while waiting: coming back to one of them is not a change
(a text caret blinks between two), so a screen that only blinks settles."""

_ROUNDING = 1e-9
"""Seconds a clock's sums may be off by (0.1 + 0.025 - 0.1 is not quite 0.025)."""


def _nothing(_: object) -> Collection[int]:
    return ()


def _at_once(_: object) -> float:
    return 0.0


def _no_patience(_: object, __: Screen) -> float | None:
    return None


@dataclass(frozen=True)
class _Stillness:
    """While an outcome passes: whether the screen it passed on has stayed still long enough."""

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
        return still or now - self.since >= self.bound - _ROUNDING

    def pause(self, now: float) -> float:
        """How long to wait before the look that can tell."""
        return max(self.changed + self.needed - now, FIRST_POLL_SECONDS)


@dataclass(frozen=True)
class Watched(Generic[T]):
    """What a watch ended on."""

    outcome: T
    """The last outcome."""
    waited: float
    """Seconds from the first look to the last."""
    screen: Screen
    """The last look (the one the outcome is of)."""
    ended: str = "done"
    """Why it ended: ``done`` (the outcome counts), ``quiet`` (the screen stayed unchanged
    for the quiet period), ``patient`` (for as long as ``patience`` said), ``timeout``."""


@dataclass(frozen=True)
class Watch(Generic[T]):
    """A wait for the screen in progress (see the module docstring): start one with
    :meth:`begin`, give it each look with :meth:`saw`, look again at :attr:`look_at`."""

    evaluate: Callable[[Screen], T]
    done: Callable[[T], bool]
    still: Callable[[T], float]
    outside: Callable[[T], Collection[int]]
    patience: Callable[[T, Screen], float | None]
    """For an outcome that is not done, seen on a look: how long an unchanged screen ends
    the wait (``None``: the quiet period when ``quiet``, else the timeout)."""
    quiet: bool
    timeout: float
    quiet_period: float
    config: ScreenStateConfig | None
    volatile: frozenset[int]
    started: float
    outcome: T
    screen: Screen
    look_at: float
    """When to look again (the replay's clock)."""
    seen: tuple[Thumbnail, ...] = ()
    """The distinct screens seen lately: coming back to one of them is no move."""
    still_since: float = 0.0
    last: Thumbnail | None = None
    passing: _Stillness | None = None
    pauses: int = 0

    @classmethod
    def begin(
        cls,
        screen: Screen,
        now: float,
        evaluate: Callable[[Screen], T],
        done: Callable[[T], bool],
        *,
        watchable: bool,
        timeout: float,
        quiet_period: float,
        config: ScreenStateConfig | None,
        volatile: frozenset[int] = frozenset(),
        quiet: bool = True,
        still: Callable[[T], float] | None = None,
        outside: Callable[[T], Collection[int]] | None = None,
        patience: Callable[[T, Screen], float | None] | None = None,
    ) -> Watch[T] | Watched[T]:
        """Evaluate ``screen`` (looked at ``now``); a watch when the screen must be looked
        at again, else what was watched (``watchable`` false: the first look decides)."""
        outcome = evaluate(screen)
        still_for = still if still is not None and config is not None else _at_once
        if not watchable or (done(outcome) and still_for(outcome) <= 0):
            return Watched(outcome, 0.0, screen)
        first = screen.look(config)
        watch = cls(
            evaluate=evaluate,
            done=done,
            still=still_for,
            outside=outside or _nothing,
            patience=patience or _no_patience,
            quiet=quiet,
            timeout=timeout,
            quiet_period=quiet_period,
            config=config,
            volatile=volatile,
            started=now,
            outcome=outcome,
            screen=screen,
            look_at=now,
            seen=(first,) if first is not None else (),
            still_since=now,
            last=first,
            passing=watch_stillness(outcome, now, still_for, quiet_period)
            if done(outcome)
            else None,
        )
        return watch._next(now)

    def _next(self, now: float) -> Watch[T] | Watched[T]:
        """The wait goes on after a look at ``now``: when to look again, or over (the
        timeout passed while the outcome does not pass)."""
        passing = self.passing
        if passing is None and now - self.started >= self.timeout:
            return Watched(self.outcome, now - self.started, self.screen, "timeout")
        if passing is not None:
            return replace(self, look_at=now + passing.pause(now))
        return replace(self, look_at=now + poll_pause(self.pauses), pauses=self.pauses + 1)

    def saw(self, screen: Screen, now: float) -> Watch[T] | Watched[T]:
        """The look ``screen``, taken at ``now``."""
        config = self.config
        outcome = self.evaluate(screen)
        current = screen.look(config)
        passing = self.passing
        if not self.done(outcome):
            passing = None
        elif passing is None:
            passing = watch_stillness(outcome, now, self.still, self.quiet_period)
        else:
            passing = replace(passing, needed=self.still(outcome))
            away = set(self.outside(outcome))
            if _changed(self.last, current, self.volatile | away):
                passing = replace(passing, changed=now)
        seen, still_since = self.seen, self.still_since
        if _moved(seen, current, self.volatile):  # a file without thumbnails: every look moved
            if current is not None:
                seen = (*seen[-(_BLINK_STATES - 1) :], current)
            still_since = now
        watch = replace(
            self,
            outcome=outcome,
            screen=screen,
            last=current,
            passing=passing,
            seen=seen,
            still_since=still_since,
        )
        if passing is not None:
            if passing.settled(now):
                return Watched(outcome, now - self.started, screen)
            return watch._next(now)
        enough = self.patience(outcome, screen)
        if enough is not None and now - still_since >= enough - _ROUNDING:
            return Watched(outcome, now - self.started, screen, "patient")
        if self.quiet and now - still_since >= self.quiet_period:
            return Watched(outcome, now - self.started, screen, "quiet")
        return watch._next(now)


def watch_stillness(
    outcome: T, now: float, still: Callable[[T], float], quiet_period: float
) -> _Stillness:
    """The stillness an outcome that begins passing at ``now`` needs."""
    needed = still(outcome)
    return _Stillness(needed, max(quiet_period, needed), since=now, changed=now)


def _moved(seen: tuple[Thumbnail, ...], current: Thumbnail | None, ignore: Collection[int]) -> bool:
    """True when ``current`` differs (outside ``ignore``) from every screen in ``seen``."""
    if current is None:
        return True
    return all(any(index not in ignore for index in last.changed_tiles(current)) for last in seen)


def _changed(last: Thumbnail | None, current: Thumbnail | None, ignore: Collection[int]) -> bool:
    """True when ``current`` differs from the look before it (outside ``ignore``)."""
    if last is None or current is None:
        return True
    return any(index not in ignore for index in last.changed_tiles(current))
