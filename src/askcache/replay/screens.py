"""Screens: what the replay looks at, and when it looks again.

A :class:`Screen` is one look: the image as the model sees it, the same brought to the size
the trajectory was recorded at, and the windows listed with it (when the screen can list
them). Looks come from the replay's own captures (:mod:`.driver`) or from the history's latest
screenshot (:func:`fresh_screenshot`). While a state waits for the screen, it looks again
soon at first, then every :data:`POLL_SECONDS` (:func:`poll_pause`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

from PIL import Image

from askcache.fingerprint.step import decode_screenshot, find_recent_screenshot_block
from askcache.foundation.messages import MessageParam
from askcache.foundation.scaling import same_aspect
from askcache.foundation.screen.elements import ElementSource
from askcache.foundation.screen.thumbnails import ScreenStateConfig, Thumbnail
from askcache.foundation.screen.windows import WindowFrame
from askcache.replay.elements_now import ElementsNow

__all__ = [
    "BLANK_SPREAD",
    "FIRST_POLL_SECONDS",
    "POLL_SECONDS",
    "Screen",
    "fresh_screenshot",
    "latest_screenshot",
    "poll_pause",
    "poll_pauses",
    "screen_of",
]

POLL_SECONDS = 0.02
"""The longest pause between two looks at the screen while waiting."""

FIRST_POLL_SECONDS = 0.0025
"""The first pause of a wait; each later one doubles, up to :data:`POLL_SECONDS`. Most
screens answer an action within a few milliseconds (a focused field, a pressed button): a
first look that soon sees the effect when it is drawn, and a slow screen is still looked at
only every :data:`POLL_SECONDS`."""


BLANK_SPREAD = 8
"""Grey levels within which every pixel of an area lies when it shows nothing
(:meth:`Screen.blank`)."""


def poll_pause(count: int) -> float:
    """The pause before look ``count + 1`` of a wait (``count`` pauses were taken):
    :data:`FIRST_POLL_SECONDS`, doubling up to :data:`POLL_SECONDS`."""
    pause: float = FIRST_POLL_SECONDS * 2 ** min(count, 16)
    return min(pause, POLL_SECONDS)


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
    windows: tuple[WindowFrame, ...] | None = None
    """The screen's top-level windows as listed with this look (the size the model sees;
    ``None``: not listed)."""
    mark: object | None = None
    """Where the platform reports drawing: this look's place in the reports
    (:class:`~askcache.replay.commands.Seen`)."""
    elements: ElementsNow | None = None
    """What the accessibility tree says about this look, asked when a check needs it
    (``None``: the platform gives no element information)."""
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
        return Screen(_shift(self.image, image_offset), _shift(self.recorded, offset), self.windows)

    def blank(self, box: tuple[int, int, int, int]) -> bool:
        """True when ``box`` (``x``, ``y``, width, height in recorded pixels) shows one flat
        colour, all its pixels within :data:`BLANK_SPREAD` grey levels on a coarse look: a
        window mapped and not drawn yet, or nothing there."""
        x, y, width, height = box
        inside = self.recorded.crop((x, y, x + width, y + height)).convert("L")
        low, high = cast("tuple[int, int]", inside.resize((32, 32)).getextrema())
        return high - low <= BLANK_SPREAD

    def thumbnail(self, config: ScreenStateConfig) -> Thumbnail:
        """Its thumbnail in recorded space, computed once."""
        if self._thumbnail is None:
            self._thumbnail = Thumbnail.of(self.recorded, config)
        return self._thumbnail

    def look(self, config: ScreenStateConfig | None) -> Thumbnail | None:
        """:meth:`thumbnail`, or ``None`` without a config (a file recorded without one)."""
        return None if config is None else self.thumbnail(config)


def _shift(image: Image.Image, offset: tuple[int, int]) -> Image.Image:
    moved = Image.new(image.mode, image.size)
    moved.paste(image, (-offset[0], -offset[1]))
    return moved


def is_fresh(screenshot_index: int, messages: list[MessageParam]) -> bool:
    """True when no tool call came after the message ``screenshot_index`` (which holds a
    screenshot)."""
    last_call = max(
        (i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_uses), default=-1
    )
    return screenshot_index > last_call


def latest_screenshot(messages: list[MessageParam]) -> tuple[int, Image.Image] | None:
    """The history's latest screenshot and the index of its message (``None``: there is
    none). Raises :class:`~askcache.foundation.errors.AskCacheError` when it is not an image."""
    found = find_recent_screenshot_block(messages)
    if found is None:
        return None
    return found[0], decode_screenshot(found[1].source.data, f"message {found[0]}")


def fresh_screenshot(messages: list[MessageParam], where: str | None = None) -> Image.Image | None:
    """The history's latest screenshot when no action came after it (``where`` names it in
    an error; default: its message)."""
    found = find_recent_screenshot_block(messages)
    if found is None or not is_fresh(found[0], messages):
        return None
    return decode_screenshot(found[1].source.data, where or f"message {found[0]}")


def screen_of(
    space: tuple[int, int] | None,
    image: Image.Image,
    windows: tuple[WindowFrame, ...] | None = None,
    mark: object | None = None,
    elements: ElementSource | None = None,
) -> Screen:
    """``image`` as a look of a replay whose coordinates are in ``space`` (the recorded
    size: the look is brought to it when its aspect ratio is the same); ``elements``: the
    platform's element source, asked about this look when a check needs it."""
    if space is None or image.size == space or not same_aspect(image.size, space):
        recorded = image
    else:
        recorded = image.resize(space, Image.Resampling.LANCZOS)
    now = None if elements is None else ElementsNow(elements, image.size, recorded.size)
    return Screen(image, recorded, windows, mark, now)
