"""Wait: watch the screen until a phase's outcome is good, the screen settles, or time runs out.

A phase evaluates the screen; while the outcome is not done, the screen is captured again
(soon at first, then every :data:`~askcache.replay.observe.POLL_SECONDS`:
:func:`~askcache.replay.observe.poll_pauses`) until the outcome is done, the screen has
stayed unchanged (and still different) for the quiet period, or the settle timeout passes. A
screen that comes back to one it showed lately (a blinking caret) has not changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from askcache.replay.observe import Screen, capture, poll_pauses
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


def watch(
    state: ReplayState,
    screen: Screen,
    evaluate: Callable[[Screen], T],
    done: Callable[[T], bool],
    *,
    quiet: bool = True,
) -> tuple[T, float]:
    """Evaluate ``screen``; while the outcome is not ``done``, look again until the
    screen has stayed unchanged for the quiet period (only when ``quiet``), or the
    timeout. Returns the last outcome and the seconds waited."""
    started = state.clock()
    outcome = evaluate(screen)
    if done(outcome) or not state.can_watch():
        return outcome, 0.0
    config = state.file.metadata.screen_state
    first = screen.thumbnail(config) if config is not None else None
    # the distinct screens seen lately: coming back to one of them (a blinking caret)
    # is no move
    seen = [first] if first is not None else []
    still_since = started
    pauses = poll_pauses()
    while True:
        now = state.clock()
        if now - started >= state.settings.settle_timeout:
            break
        state.sleep(next(pauses))
        screen = capture(state)
        outcome = evaluate(screen)
        if done(outcome):
            break
        now = state.clock()
        current = screen.thumbnail(config) if config is not None else None
        if _moved(seen, current, _volatile(state)):
            assert current is not None
            seen = [*seen[-(_BLINK_STATES - 1) :], current]
            still_since = now
        elif quiet and now - still_since >= state.settings.settle_quiet_period:
            break
    return outcome, state.clock() - started


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
