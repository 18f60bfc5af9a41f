"""Observe: the screen to check the next step on.

The history's latest screenshot when no action came after it, else a fresh capture (or a
screenshot request through the conversation, asked once per step); right after a replayed
step, a fresh capture when the screen can be watched (the step's result screenshot was taken
the moment it ran). A capture that fails raises
:class:`~askcache.replay.state.CaptureFailedError`: the phase that needed it hands back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from PIL import Image

from askcache.fingerprint.step import decode_screenshot, find_recent_screenshot_block
from askcache.messages import MessageParam
from askcache.replay.state import CAPTURE_ATTEMPTS, CaptureFailedError, ReplayState
from askcache.scaling import same_aspect
from askcache.screen.state import ScreenStateConfig, Thumbnail

__all__ = [
    "FIRST_POLL_SECONDS",
    "POLL_SECONDS",
    "Screen",
    "capture",
    "current",
    "fresh",
    "observe",
    "poll_pauses",
    "screen_of",
]

logger = logging.getLogger(__name__)


POLL_SECONDS = 0.02
"""The longest pause between two looks at the screen while waiting."""

FIRST_POLL_SECONDS = 0.0025
"""The first pause of a wait; each later one doubles, up to :data:`POLL_SECONDS`. Most
screens answer an action within a few milliseconds (a focused field, a pressed button): a
first look that soon sees the effect when it is drawn, and a slow screen is still looked at
only every :data:`POLL_SECONDS`."""


def poll_pauses() -> Iterator[float]:
    """The pauses between the looks of one wait: :data:`FIRST_POLL_SECONDS`, doubling up
    to :data:`POLL_SECONDS`, then that for ever."""
    pause = FIRST_POLL_SECONDS
    while True:
        yield pause
        pause = min(pause * 2, POLL_SECONDS)


@dataclass
class Screen:
    """A screen the replay looks at."""

    image: Image.Image
    """As the model sees it (the current size)."""
    recorded: Image.Image
    """Brought to the size the trajectory was recorded at."""
    _thumbnail: Thumbnail | None = None

    def moved(self, offset: tuple[int, int]) -> Screen:
        """This screen as seen from a window that moved by ``offset`` (recorded pixels): the
        pixel at ``(x, y)`` of the result is the one at ``(x + dx, y + dy)`` here, so what
        the window shows lies where it was recorded (and every check compares the regions
        it compared then); what lies beyond the screen's edge is black."""
        if offset == (0, 0):
            return self
        scale = (
            self.image.width / self.recorded.width,
            self.image.height / self.recorded.height,
        )
        image_offset = (round(offset[0] * scale[0]), round(offset[1] * scale[1]))
        return Screen(_shift(self.image, image_offset), _shift(self.recorded, offset))

    def thumbnail(self, config: ScreenStateConfig) -> Thumbnail:
        """Its thumbnail in recorded space, computed once."""
        if self._thumbnail is None:
            self._thumbnail = Thumbnail.of(self.recorded, config)
        return self._thumbnail


def _shift(image: Image.Image, offset: tuple[int, int]) -> Image.Image:
    moved = Image.new(image.mode, image.size)
    moved.paste(image, (-offset[0], -offset[1]))
    return moved


def _is_fresh(screenshot_index: int, messages: list[MessageParam]) -> bool:
    """True when no tool call came after the message holding the screenshot."""
    last_call = max(
        (i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_uses), default=-1
    )
    return screenshot_index > last_call


def observe(
    state: ReplayState,
    messages: list[MessageParam],
    just_acted: bool = False,
    looked: Screen | None = None,
) -> Screen | None:
    """The screen to check the next step on: the history's latest screenshot when no
    action came after it, else a fresh capture; ``None`` to ask the conversation for one
    (asked once per step: after that, the newest screenshot is used).

    Right after a replayed step (``just_acted``) a fresh capture is preferred when the
    screen can be watched: the step's result screenshot was taken the moment it ran, and
    the application may still be reacting to it (its effect can be complete while the
    layout changes under the next step's point). When the step's verify phase captured the
    screen itself (``looked``: it waited for the effect), that capture is the fresh one: it
    was taken after the effect was drawn (the session drops it when a fixed delay came
    between)."""
    if just_acted and state.can_watch():
        return looked if looked is not None else capture(state)
    found = find_recent_screenshot_block(messages)
    now = current(state, messages, f"message {found[0]}" if found else "")
    if now is not None:
        return now
    if state.screenshot_asked_for == state.index and found is not None:
        return screen_of(state, decode_screenshot(found[1].source.data, f"message {found[0]}"))
    return None


def fresh(state: ReplayState, messages: list[MessageParam], where: str) -> Screen | None:
    """The history's latest screenshot, when no action came after it."""
    found = find_recent_screenshot_block(messages)
    if found is None or not _is_fresh(found[0], messages):
        return None
    return screen_of(state, decode_screenshot(found[1].source.data, where))


def current(state: ReplayState, messages: list[MessageParam], where: str) -> Screen | None:
    """The screen as it is now: the history's latest screenshot when no action came
    after it, else a capture where the screen can be watched; ``None`` otherwise."""
    found = fresh(state, messages, where)
    if found is not None:
        return found
    return capture(state) if state.can_watch() else None


def capture(state: ReplayState) -> Screen:
    """A fresh screenshot, tried :data:`~askcache.replay.state.CAPTURE_ATTEMPTS` times in a row.
    Raises
    :class:`~askcache.replay.state.CaptureFailedError` when every attempt fails, so the phase that
    needed it hands back (fails closed) instead of ending the conversation."""
    assert state.capture is not None
    for attempt in range(1, CAPTURE_ATTEMPTS + 1):
        try:
            image = state.capture()
        except Exception as exc:
            if attempt == CAPTURE_ATTEMPTS:
                raise CaptureFailedError(exc) from exc
            logger.info("screenshot %d of %d failed: %s", attempt, CAPTURE_ATTEMPTS, exc)
            state.sleep(POLL_SECONDS)
        else:
            return screen_of(state, image)
    raise AssertionError("unreachable")


def screen_of(state: ReplayState, image: Image.Image) -> Screen:
    space = state.space
    if space is None or image.size == space or not same_aspect(image.size, space):
        return Screen(image, image)
    return Screen(image, image.resize(space, Image.Resampling.LANCZOS))
