"""Wait: watch the screen until a phase's outcome is good, the screen settles, or time runs out.

A phase evaluates the screen; while the outcome is not done, the screen is captured again
(soon at first, then every :data:`~askcache.replay.observe.POLL_SECONDS`:
:func:`~askcache.replay.observe.poll_pauses`) until the outcome is done, the screen has
stayed unchanged (and still different) for the quiet period, or the settle timeout passes. A
screen that comes back to one it showed lately (a blinking caret) has not changed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
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
    at once): a later look is done too and shows the same screen, apart from the tiles that
    changed by themselves when recorded and those ``outside`` names for the outcome (outside
    the step's window). A screen that keeps changing while the outcome stays done counts
    after the quiet period. Stillness is judged on thumbnails: a file that records none is
    not waited on."""
    started = state.clock()
    outcome = evaluate(screen)
    config = state.file.metadata.screen_state

    def still_for(seen: T) -> float:
        return still(seen) if still is not None and config is not None else 0.0

    if not state.can_watch() or (done(outcome) and still_for(outcome) <= 0):
        return outcome, 0.0
    first = screen.thumbnail(config) if config is not None else None
    # the distinct screens seen lately: coming back to one of them (a blinking caret)
    # is no move
    seen = [first] if first is not None else []
    still_since = started  # for the quiet period of an outcome not done
    last, changed_at, done_since = first, started, started  # for a done one's stillness
    pauses = poll_pauses()
    while True:
        now = state.clock()
        if now - started >= state.settings.settle_timeout:
            break
        if done(outcome):  # only its stillness is awaited: look again once a look can tell
            state.sleep(max(changed_at + still_for(outcome) - now, FIRST_POLL_SECONDS))
        else:
            state.sleep(next(pauses))
        screen = capture(state)
        outcome = evaluate(screen)
        now = state.clock()
        current = screen.thumbnail(config) if config is not None else None
        ignored = _volatile(state)
        if done(outcome) and outside is not None:
            ignored |= set(outside(outcome))
        if _changed(last, current, ignored):
            changed_at = now
        last = current
        if done(outcome):
            quiet_over = now - done_since >= state.settings.settle_quiet_period
            if now - changed_at >= still_for(outcome) or quiet_over:
                break
            continue
        done_since = now
        if _moved(seen, current, _volatile(state)):
            assert current is not None
            seen = [*seen[-(_BLINK_STATES - 1) :], current]
            still_since = now
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
