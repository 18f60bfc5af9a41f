"""The state of a whole screen, coarsely: what an action changed, and how a run ended.

A perceptual hash of a region says whether the screen around an action point still looks as
recorded. Two questions need more than that square:

* **the effect of an action**: which parts of the screen it changed when recorded, what they
  looked like before and after, so a replay can check that the same parts look the same
  before acting (a text field that still holds old text at its far end), and that the action
  changed them again (a click that did not land changes nothing);
* **the end state**: how the screen looked when the recorded run ended, so a replay reports
  ``completed`` only when it ended the same way.

Both come from a :class:`Thumbnail`: the screen in grey, each ``block`` x ``block`` pixel square
averaged to one value (1/8 scale by default). Thumbnails are compared tile by tile (a tile is
``tile`` x ``tile`` thumbnail pixels: 32 screen pixels by default); a tile *differs* when one of
its values moved further than a level. Two levels serve two questions:

* *did this change?* (two screens of the same run, on the same machine: what an action
  changed when recorded, whether it changed anything at replay, whether the screen is still):
  a tile changed when one value moved by more than ``change_level`` (24 of 255);
* *is this the same?* (the recording's screen against a replay's, perhaps re-rendered at
  another size): a tile differs when one value moved by more than ``match_level`` (72) or
  its values by more than ``match_mean`` (16) on average. Averaging over blocks forgives
  anti-aliasing, JPEG noise, small brightness drift, a blinking caret and thin lines drawn a
  pixel apart on a rescaled screen (measured on the simulated form and the Tk form: at most
  45 levels in one block, 12 on average); typed text (77-103 in one block), a new element or
  a dimmed backdrop (28-36 on average) move them further. Small grey text replaced by other
  text (31 in one block) is seen within a run, not across runs. Colour changes of equal
  brightness are not seen (grey only).

What is stored: for each acting step, the tiles near its point that it changed (their values
before and after) and, hashed, the places away from it that it changed
(:mod:`askcache.foundation.screen.elsewhere`), and for the file, the thumbnails of the screen before
the first acting step (:class:`StartState`) and of the final screen (:class:`EndState`). A
1/8-scale grey thumbnail shows the layout but no readable text at ordinary font sizes (a
16 px line becomes 2 pixels); recording it is the ``record_screen_state`` setting (on by
default, documented in docs/caching.md).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from askcache.foundation.screen.elsewhere import MAX_PLACES, ChangeElsewhere

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

__all__ = [
    "DEFAULT_BLOCK",
    "DEFAULT_CHANGE_LEVEL",
    "DEFAULT_EFFECT_RADIUS",
    "DEFAULT_MATCH_LEVEL",
    "DEFAULT_MATCH_MEAN",
    "DEFAULT_TILE",
    "EndState",
    "ScreenStateConfig",
    "ScreenThumbnail",
    "StartState",
    "StepEffect",
    "Thumbnail",
    "TileComparison",
    "compare_tiles",
    "drawn_tiles",
    "effect_of",
    "faint_change",
]

DEFAULT_BLOCK = 8
"""Screen pixels per thumbnail pixel, each way."""
DEFAULT_TILE = 4
"""Thumbnail pixels per tile, each way (4 x 8 = 32 screen pixels)."""
DEFAULT_CHANGE_LEVEL = 24
"""Within one run (consecutive screens of one machine): grey levels (of 255) one block
average must move for its tile to count as changed."""
DEFAULT_MATCH_LEVEL = 72
"""Across runs (the recording against a replay): grey levels one block average must move for
its tile to count as different."""
DEFAULT_MATCH_MEAN = 16
"""Across runs: grey levels the tile's block averages must move on average for it to count
as different."""
DEFAULT_EFFECT_RADIUS = 192
"""Screen pixels around an action point within which its changes are its effect."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)


class ScreenStateConfig(_Model):
    """How a file's thumbnails, effects and end state were computed (stored once per file)."""

    block: int = Field(DEFAULT_BLOCK, ge=2, le=64)
    """Screen pixels per thumbnail pixel, each way."""
    tile: int = Field(DEFAULT_TILE, ge=1, le=32)
    """Thumbnail pixels per tile, each way."""
    change_level: int = Field(DEFAULT_CHANGE_LEVEL, ge=1, le=255)
    """Within a run: grey levels one block average must move for its tile to count as
    changed."""
    match_level: int = Field(DEFAULT_MATCH_LEVEL, ge=1, le=255)
    """Across runs: grey levels one block average must move for its tile to differ."""
    match_mean: int = Field(DEFAULT_MATCH_MEAN, ge=1, le=255)
    """Across runs: grey levels a tile's block averages must move on average for it to
    differ."""
    effect_radius: int = Field(DEFAULT_EFFECT_RADIUS, ge=0, le=4096)
    """Screen pixels around the action point within which changes are the action's effect."""

    @property
    def tile_pixels(self) -> int:
        """Side of a tile in screen pixels."""
        return self.block * self.tile


class StepEffect(_Model):
    """What one action changed near its point when recorded: tiles, before and after."""

    tiles: list[int] = Field(default_factory=list)
    """Indices (``row * columns + column``) of the tiles the action changed, ascending."""
    before: str = ""
    """Hex of those tiles' values just before the action (``tile**2`` bytes per tile)."""
    after: str = ""
    """Hex of those tiles' values once the action had taken effect."""
    parameter_before: list[int] = Field(default_factory=list)
    """Tiles whose ``before`` values show a typed parameter's value: not compared before
    the action (another value looks different there)."""
    parameter_after: list[int] = Field(default_factory=list)
    """Tiles whose ``after`` values show a typed parameter's value: not compared after it."""
    elsewhere: list[ChangeElsewhere] = Field(default_factory=list, max_length=MAX_PLACES)
    """Places away from the point that the action changed
    (:mod:`askcache.foundation.screen.elsewhere`): each must look as recorded after the replayed
    action. Empty in files recorded before."""


class ScreenThumbnail(_Model):
    """A whole screen, stored as its :class:`Thumbnail`."""

    width: int = Field(gt=0)
    """Thumbnail width."""
    height: int = Field(gt=0)
    """Thumbnail height."""
    data: str
    """Base64 of the thumbnail's ``width * height`` grey values, row by row."""


class StartState(ScreenThumbnail):
    """The screen just before the recorded run's first acting step. A replay's first action
    waits until the whole screen looks like it (across runs: ``match_level``,
    ``match_mean``; tiles the end state calls volatile, and ``varying``, are not compared), up
    to ``settle_timeout``: the application may still be starting, its window half drawn."""

    varying: list[int] = Field(default_factory=list)
    """Tiles in which a healed run's start screen differed while its first step passed its
    own checks (another layout of a later step's area, which the heal learned): they are
    not compared, so the first step no longer waits on either layout. Ascending."""


class EndState(ScreenThumbnail):
    """The screen at the end of the recorded run, and which of its tiles are not compared."""

    volatile: list[int] = Field(default_factory=list)
    """Tiles that changed during the recording away from any action (a clock, a spinner)."""
    parameter_tiles: list[int] = Field(default_factory=list)
    """Tiles that changed from the first typed parameter on: they show the parameter's value
    (or what it led to), so they are not compared at the end of a replay."""


@dataclass(frozen=True)
class Thumbnail:
    """A screen in grey at ``1 / block`` scale; each value the average of a block."""

    values: np.ndarray
    """``height x width`` array of ``uint8``."""
    config: ScreenStateConfig

    @classmethod
    def of(cls, image: Image.Image, config: ScreenStateConfig) -> Thumbnail:
        """The thumbnail of ``image`` (a partial block at the right or bottom edge is the
        average of its pixels)."""
        import numpy as np

        return cls(np.asarray(image.convert("L").reduce(config.block)), config)

    @classmethod
    def from_end_state(cls, state: ScreenThumbnail, config: ScreenStateConfig) -> Thumbnail:
        """A recorded screen (the end state, or the start state).

        Raises:
            ValueError: the stored data is not base64 of ``width * height`` bytes.
        """
        import numpy as np

        try:
            raw = base64.b64decode(state.data, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"data is not base64: {exc}") from exc
        if len(raw) != state.width * state.height:
            raise ValueError(f"data holds {len(raw)} values, expected {state.width}x{state.height}")
        values = np.frombuffer(raw, dtype=np.uint8).reshape(state.height, state.width)
        return cls(values, config)

    @property
    def columns(self) -> int:
        """Tiles per row."""
        return int(-(-self.values.shape[1] // self.config.tile))

    @property
    def rows(self) -> int:
        """Rows of tiles."""
        return int(-(-self.values.shape[0] // self.config.tile))

    def tile_box(self, index: int) -> tuple[int, int, int, int]:
        """The tile's ``(left, top, right, bottom)`` in screen pixels (clipped to the screen)."""
        row, column = divmod(index, self.columns)
        side, block = self.config.tile, self.config.block
        height, width = self.values.shape
        return (
            column * side * block,
            row * side * block,
            min((column + 1) * side, width) * block,
            min((row + 1) * side, height) * block,
        )

    def tile_values(self, index: int) -> np.ndarray:
        """The tile's values, ``tile x tile``, edge values repeated past the border."""
        import numpy as np

        row, column = divmod(index, self.columns)
        side = self.config.tile
        part = self.values[row * side : (row + 1) * side, column * side : (column + 1) * side]
        if part.shape != (side, side):
            part = np.pad(part, ((0, side - part.shape[0]), (0, side - part.shape[1])), "edge")
        return part

    def tiles_hex(self, tiles: Iterable[int]) -> str:
        """The values of ``tiles`` as one hex string, in the order given."""
        return b"".join(self.tile_values(index).tobytes() for index in tiles).hex()

    def changed_tiles(self, other: Thumbnail) -> list[int]:
        """Tiles that changed between this screen and ``other``, a later screen of the same
        run (``change_level``)."""
        import numpy as np

        peak, _ = self._moved(other)
        return [int(i) for i in np.flatnonzero(peak > self.config.change_level)]

    def differing_tiles(self, other: Thumbnail) -> list[int]:
        """Tiles in which ``other``, a screen of another run, differs from this one
        (``match_level``, ``match_mean``)."""
        import numpy as np

        peak, mean = self._moved(other)
        differs = (peak > self.config.match_level) | (mean > self.config.match_mean)
        return [int(i) for i in np.flatnonzero(differs)]

    def _moved(self, other: Thumbnail) -> tuple[np.ndarray, np.ndarray]:
        """Per tile (flattened), the largest and the mean move of its values."""
        import numpy as np

        count = self.rows * self.columns
        if other.values.shape != self.values.shape:
            full = np.full(count, 255.0)
            return full, full
        moved = np.abs(self.values.astype(np.int16) - other.values.astype(np.int16))
        side, rows, columns = self.config.tile, self.rows, self.columns
        tiles = np.pad(
            moved, ((0, rows * side - moved.shape[0]), (0, columns * side - moved.shape[1]))
        ).reshape(rows, side, columns, side)
        return tiles.max(axis=(1, 3)).ravel(), tiles.mean(axis=(1, 3)).ravel()

    def tile_differs(self, index: int, stored: np.ndarray) -> bool:
        """True when tile ``index`` differs from ``stored`` values of another run."""
        import numpy as np

        moved = np.abs(self.tile_values(index).astype(np.int16) - stored.astype(np.int16))
        return bool(moved.max() > self.config.match_level or moved.mean() > self.config.match_mean)

    def tiles_outside(self, box: tuple[int, int, int, int]) -> list[int]:
        """The tiles that do not lie wholly inside ``box`` (``x``, ``y``, width, height in
        screen pixels: a window's frame)."""
        x, y, width, height = box
        outside = []
        for index in range(self.rows * self.columns):
            left, top, right, bottom = self.tile_box(index)
            if left < x or top < y or right > x + width or bottom > y + height:
                outside.append(index)
        return outside

    def tiles_apart(self, box: tuple[int, int, int, int]) -> set[int]:
        """The tiles that do not touch ``box`` (``x``, ``y``, width, height in screen
        pixels): none of their pixels lies inside it."""
        x, y, width, height = box
        side = self.config.tile * self.config.block
        first_column, last_column = x // side, (x + max(width, 1) - 1) // side
        first_row, last_row = y // side, (y + max(height, 1) - 1) // side
        return {
            index
            for index in range(self.rows * self.columns)
            if not (
                first_row <= index // self.columns <= last_row
                and first_column <= index % self.columns <= last_column
            )
        }

    def near(self, tiles: Iterable[int], point: tuple[int, int] | None) -> list[int]:
        """The ``tiles`` within the effect radius of ``point`` (all of them without a point)."""
        if point is None:
            return sorted(tiles)
        x, y = point
        radius = self.config.effect_radius
        found = []
        for index in tiles:
            left, top, right, bottom = self.tile_box(index)
            dx = max(left - x, 0, x - (right - 1))
            dy = max(top - y, 0, y - (bottom - 1))
            if max(dx, dy) <= radius:
                found.append(index)
        return sorted(found)

    def to_start_state(self) -> StartState:
        """This thumbnail as the file's start state."""
        height, width = self.values.shape
        return StartState(
            width=width, height=height, data=base64.b64encode(self.values.tobytes()).decode()
        )

    def to_end_state(self, *, volatile: Sequence[int], parameter_tiles: Sequence[int]) -> EndState:
        """This thumbnail as the file's end state."""
        height, width = self.values.shape
        return EndState(
            width=width,
            height=height,
            data=base64.b64encode(self.values.tobytes()).decode("ascii"),
            volatile=sorted(set(volatile)),
            parameter_tiles=sorted(set(parameter_tiles)),
        )


@dataclass(frozen=True)
class TileComparison:
    """Stored tile values against the current screen's."""

    differing: list[int]
    """Tiles whose current values differ from the stored ones."""
    compared: int
    """How many tiles were compared."""

    @property
    def matched(self) -> bool:
        """True when no compared tile differs."""
        return not self.differing


def compare_tiles(
    current: Thumbnail, tiles: Sequence[int], stored_hex: str, *, skip: Collection[int] = ()
) -> TileComparison:
    """Compare ``current``'s ``tiles`` with their values stored as hex (:meth:`tiles_hex`);
    tiles in ``skip`` are not compared.

    Raises:
        ValueError: ``stored_hex`` is not hex of ``len(tiles)`` tiles, or a tile index is
            outside the screen.
    """
    import numpy as np

    side = current.config.tile
    try:
        raw = bytes.fromhex(stored_hex)
    except ValueError as exc:
        raise ValueError(f"stored tile values are not hex: {exc}") from exc
    if len(raw) != len(tiles) * side * side:
        raise ValueError(
            f"stored tile values hold {len(raw)} bytes, "
            f"expected {len(tiles)} tiles of {side}x{side}"
        )
    count = current.rows * current.columns
    stored = np.frombuffer(raw, dtype=np.uint8).reshape(len(tiles), side, side)
    differing = []
    compared = 0
    for position, index in enumerate(tiles):
        if not 0 <= index < count:
            raise ValueError(f"tile {index} is outside a screen of {count} tiles")
        if index in skip:
            continue
        compared += 1
        if current.tile_differs(index, stored[position]):
            differing.append(index)
    return TileComparison(differing, compared)


def drawn_tiles(effect: StepEffect, config: ScreenStateConfig) -> list[int]:
    """The tiles of ``effect`` whose recorded values before and after the action differ as
    another run's screen would (``match_level``, ``match_mean``): drawn over (typed text, a
    new element), not merely touched (a caret's blink, a faint highlight). Empty when the
    stored values cannot be read."""
    import numpy as np

    side = config.tile
    size = len(effect.tiles) * side * side
    try:
        before, after = bytes.fromhex(effect.before), bytes.fromhex(effect.after)
    except ValueError:
        return []
    if len(before) != size or len(after) != size:
        return []
    moved = np.abs(
        np.frombuffer(before, dtype=np.uint8).astype(np.int16)
        - np.frombuffer(after, dtype=np.uint8).astype(np.int16)
    ).reshape(len(effect.tiles), side * side)
    drawn = (moved.max(axis=1) > config.match_level) | (moved.mean(axis=1) > config.match_mean)
    return [tile for tile, flag in zip(effect.tiles, drawn, strict=True) if flag]


def faint_change(before: Thumbnail, after: Thumbnail, point: tuple[int, int] | None) -> bool:
    """True when what changed near ``point`` between two screens of one run is too faint to
    tell from a blinking caret: no tile there that changed (``change_level``) differs as
    another run's screen would (``match_level``, ``match_mean``), or none changed at all. A
    caret moved by a click, shown or hidden by its blink, is such a change: one screenshot
    may catch it on or off."""
    if before.values.shape != after.values.shape:
        return False
    near = before.near(before.changed_tiles(after), point)
    return not set(near) & set(before.differing_tiles(after))


def effect_of(
    before: Thumbnail,
    after: Thumbnail,
    point: tuple[int, int] | None,
    *,
    parameter_before: Collection[int] = (),
    parameter_after: Collection[int] = (),
    later: Sequence[Thumbnail] = (),
) -> StepEffect | None:
    """What an action at ``point`` changed near it, from the screens before and after it;
    ``None`` when the two screens are of different sizes (nothing comparable).
    ``parameter_before`` and ``parameter_after`` are the tiles showing a typed parameter
    before and after the action.

    ``later``: more looks at the screen after ``after``, with nothing acting in between
    (the recorder takes them when the change was faint, :func:`faint_change`). A tile that
    changed from ``before`` in any look is part of the effect (a caret that had blinked off
    in ``after`` shows in a later look), and the values stored after the action are the
    last look's."""
    if before.values.shape != after.values.shape:
        return None
    looks = [after, *(look for look in later if look.values.shape == after.values.shape)]
    changed = {tile for look in looks for tile in before.changed_tiles(look)}
    tiles = before.near(changed, point)
    return StepEffect(
        tiles=tiles,
        before=before.tiles_hex(tiles),
        after=looks[-1].tiles_hex(tiles),
        parameter_before=sorted(set(tiles) & set(parameter_before)),
        parameter_after=sorted(set(tiles) & set(parameter_after)),
    )
