"""Element looks: whether an element is drawn as the same kind of thing, at any density, theme
or font size.

A step's region hashes compare pixels at the recorded size: a screen drawn at twice the
density, in a dark theme or with a bigger font fails them even where the same control with the
same label is plainly there. Once the accessibility tree (or the label's text) says the element
is the same, what is left to ask of the pixels is whether the element is *drawn* there, as the
same kind of thing: not covered by a dialog, not blank, not another shape. The *look* answers
that, and nothing more:

- the element's box is cut from the screen and brought to a fixed grid of
  :data:`GRID` x :data:`GRID` cells (so the density and the box's size do not count);
- each cell holds the share of its pixels that are *ink*: pixels that differ from the box's
  background (its most common grey level) by more than :data:`INK_LEVEL` grey levels, lighter
  or darker (so a dark theme's light text counts as a light theme's dark text), or by more
  than half the farthest pixel's difference in a box drawn with little contrast (a dark
  theme's field frame), at least :data:`MIN_INK_LEVEL`; the farthest difference is the one
  that at least :data:`SPREAD_SHARE` of the box's pixels reach, so a thin bright caret
  blinking in a dark theme's focused field does not raise the level above its frame;
- two looks are compared by the correlation of their ink maps (:func:`look_distance`:
  ``1 - r``, 0 for the same drawing, 1 or more for unrelated ones). Blank boxes match nothing.

The look never allows a step on its own: it is the appearance check a replay adds to an
element found by its identity (:mod:`askcache.replay.element_check`).
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from askcache.foundation.errors import InvalidHashError

__all__ = [
    "GRID",
    "INK_LEVEL",
    "MIN_INK_LEVEL",
    "SPREAD_SHARE",
    "element_look",
    "look_distance",
]

GRID = 16
"""Cells per side of the ink map."""
INK_LEVEL = 40
"""Grey levels from the background at which a pixel counts as ink (in a box drawn with
little contrast, half its farthest pixel's: :data:`MIN_INK_LEVEL`)."""
MIN_INK_LEVEL = 8
"""The fewest grey levels from the background that count as ink, in a box whose farthest
pixel lies less than ``2 * INK_LEVEL`` levels from its background (the level is half that)."""
SPREAD_SHARE = 0.01
"""The share of a box's pixels that must lie at least as far from its background as the
difference that sets its contrast (:func:`_ink_level`): a text caret (one or two pixels wide,
about 0.3 % of a field) is too few; a field's frame (several percent) or a label's glyphs are
not."""
_LEVELS = 15
"""Ink shares are stored in 16 levels (one hex digit per cell)."""

Box = tuple[int, int, int, int]


def element_look(image: Image.Image, box: Box) -> str | None:
    """The look of the element whose box is ``box`` (``x``, ``y``, width, height in
    ``image``'s pixels), as hex, one digit per cell, row by row; ``None`` when the box is
    empty, lies off the image, or shows nothing (no ink at all)."""
    x, y, width, height = box
    left, top = max(0, x), max(0, y)
    right, bottom = min(image.width, x + width), min(image.height, y + height)
    if right - left < 4 or bottom - top < 4:
        return None
    grey = np.asarray(image.crop((left, top, right, bottom)).convert("L"), dtype=np.int16)
    counts = np.bincount(grey.ravel(), minlength=256)
    background = int(counts.argmax())
    away = np.abs(grey - background)
    ink = (away > _ink_level(_spread(away))).astype(np.uint8) * 255
    if not ink.any():
        return None
    cells = Image.fromarray(ink).resize((GRID, GRID), Image.Resampling.BOX)
    levels = np.rint(np.asarray(cells, dtype=np.float64) / 255 * _LEVELS).astype(int)
    return "".join(f"{int(v):x}" for v in levels.ravel())


def _spread(away: np.ndarray) -> int:
    """The farthest difference from the background that at least :data:`SPREAD_SHARE` of the
    pixels (at least one) reach."""
    reached = np.cumsum(np.bincount(away.ravel())[::-1])[::-1]  # pixels at that level or beyond
    need = max(1, int(np.ceil(SPREAD_SHARE * away.size)))
    return int(np.nonzero(reached >= need)[0].max())


def _ink_level(spread: int) -> int:
    """The grey levels from the background at which a pixel counts as ink, in a box whose
    farthest pixel is ``spread`` levels from it: :data:`INK_LEVEL`, or half the spread in a
    box drawn with little contrast (a dark theme's empty field, whose frame lies 18 levels
    from its fill), never below :data:`MIN_INK_LEVEL` (a uniform box stays blank)."""
    return min(INK_LEVEL, max(MIN_INK_LEVEL, spread // 2))


def _decode(text: str) -> np.ndarray:
    if len(text) != GRID * GRID:
        raise InvalidHashError(f"an element look has {GRID * GRID} digits, not {len(text)}")
    try:
        return np.array([int(c, 16) for c in text], dtype=np.float64)
    except ValueError as exc:
        raise InvalidHashError(f"an element look is not hexadecimal: {text[:20]!r}") from exc


def look_distance(recorded: str, now: str) -> float:
    """``1 - r``, ``r`` the correlation of two looks' ink maps after a 3x3 blur (a glyph
    re-drawn a cell aside still counts): 0 for the same drawing, about 1 for unrelated ones,
    2 for opposite ones; 1 when either is uniform.

    Raises:
        InvalidHashError: a look that is not :func:`element_look`'s text.
    """
    a, b = _blur(_decode(recorded)), _blur(_decode(now))
    a, b = a - a.mean(), b - b.mean()
    spread = float(np.sqrt((a * a).sum() * (b * b).sum()))
    if spread == 0:
        return 1.0
    return 1.0 - float((a * b).sum()) / spread


def _blur(values: np.ndarray) -> np.ndarray:
    grid = values.reshape(GRID, GRID)
    padded = np.pad(grid, 1, mode="edge")
    total = sum(padded[dy : dy + GRID, dx : dx + GRID] for dy in range(3) for dx in range(3))
    return np.asarray(total, dtype=np.float64).ravel() / 9
