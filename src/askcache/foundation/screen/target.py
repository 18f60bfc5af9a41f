"""Whole targets: the extent of the element under a point, and where ink lies inside it.

A fixed square around the point does not see all of a wide element: a 520 px text field
whose middle is the point can still hold "alice" at its left end, 200 px away. At recording,
:func:`estimate_target` finds the element's box: the connected area of the point's background
colour (a field's inside, a button's face), when it is enclosed (a border on every side,
inside a window around the point) and larger than the main region. Page background reaching
the window's edge is not an element, and an element within the main region needs nothing
more.

The box is stored relative to the point, with the background grey level and an *ink map*:
the box, inset by its border, cut into columns, one bit per column saying whether anything
darker or lighter than the background is written there. At replay the same box is measured
again (no estimate, so no new cost) against the recorded background: text left over, a
field filled or emptied, a dimmed or covered element all flip bits. The ink map is one bit per
column, not pixels: it shows where something is written, never what.

A *tall* target (an editor's text area, a page: taller than the window first searched, so
found by searching the whole screen) also keeps a *row map*: one bit per
band of :data:`ROW_HEIGHT` pixel rows saying whether a line of something is written there. In a
text area a column map sees little (a short line inks a few pixels of a column hundreds of
pixels tall); a line more or less flips a row band. A click below an editor's last line that
lands the same on a file with one line more is refused: the text above it moved the caret's
destination. The blinking caret, one pixel wide, sets no row (:data:`ROW_INK_PER_LINE`), and
a band is held against the replay only when clearly otherwise (:func:`row_distance`). On a
screen drawn at another pixel density the text is drawn anew and scaled: a line's edge or the
gap between two lines may fall in the next band, so a band recorded inked that is now nearly
empty counts only beside another such band (a line gone empties two or three bands; the gap
between two lines drawn otherwise, one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from PIL import Image

from askcache.foundation.errors import InvalidHashError

__all__ = [
    "TargetFingerprint",
    "estimate_target",
    "ink_distance",
    "ink_map",
    "is_tall",
    "row_distance",
    "row_map",
    "target_fingerprint",
]

WINDOW = (400, 100)
"""Half-width and half-height of the window searched around the point for the element."""
BACKGROUND_TOLERANCE = 8
"""Grey levels within which a pixel counts as the element's background."""
INK_LEVEL = 48
"""Grey levels from the background at which a pixel counts as ink (text, a border)."""
INK_FRACTION = 0.01
"""Share of a column's pixels that must be ink for its bit to be set."""
INSET = 3
"""Pixels left out at each side of the box (the element's border, focus rings)."""
MIN_FILL = 0.5
"""Smallest share of its bounding box the background area must fill to be one element."""
ROW_HEIGHT = 8
"""Pixel rows per band of a tall target's row map (a line of text spans two or three)."""
MAX_ROWS = 64
"""Most bands in a row map (a taller target has taller bands)."""
ROW_INK_PER_LINE = 2
"""Ink pixels per pixel row, on average over a band, above which the band's bit is set: a
one-pixel caret stays below it, a character above."""

Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class TargetFingerprint:
    """The element's box relative to the point, its background level and its ink map."""

    box: Box
    """``(left, top, right, bottom)`` relative to the action point."""
    background: int
    """Grey level of the element's background at recording."""
    ink: int
    """One bit per column, leftmost column in the lowest bit."""
    columns: int
    """Number of columns in the ink map."""
    rows: int = 0
    """Number of bands in the row map (0: none kept, the target is not tall)."""
    row_ink: int = 0
    """One bit per band, the top band in the lowest bit."""

    def encode(self) -> str:
        """Text for the cache file: ``left,top,right,bottom;background;columns;ink-hex``,
        with ``;rows;row-ink-hex`` after it for a tall target."""
        left, top, right, bottom = self.box
        text = f"{left},{top},{right},{bottom};{self.background};{self.columns};{self.ink:x}"
        return f"{text};{self.rows};{self.row_ink:x}" if self.rows else text

    @classmethod
    def decode(cls, text: str) -> TargetFingerprint:
        """Parse :meth:`encode`'s text.

        Raises:
            InvalidHashError: the text is not in that shape.
        """
        try:
            parts = text.split(";")
            if len(parts) not in (4, 6):
                raise ValueError("parts")
            box_text, background, columns, ink = parts[:4]
            rows, row_ink = parts[4:] if len(parts) == 6 else ("0", "0")
            box = tuple(int(v) for v in box_text.split(","))
            if len(box) != 4 or box[0] >= box[2] or box[1] >= box[3]:
                raise ValueError("box")
            parsed = cls(
                box=box,
                background=int(background),
                ink=int(ink, 16),
                columns=int(columns),
                rows=int(rows),
                row_ink=int(row_ink, 16),
            )
        except (AttributeError, TypeError, ValueError):
            raise InvalidHashError(
                f"visual target {text!r} is not 'left,top,right,bottom;background;columns;ink'"
                " (and ';rows;row-ink' for a tall target)"
            ) from None
        if not 0 < parsed.columns <= 256 or parsed.ink >> parsed.columns or parsed.ink < 0:
            raise InvalidHashError(f"visual target {text!r}: ink map does not fit its columns")
        if (
            not 0 <= parsed.rows <= MAX_ROWS
            or parsed.row_ink < 0
            or parsed.row_ink >> parsed.rows
            or (len(parts) == 6 and parsed.rows == 0)
        ):
            raise InvalidHashError(f"visual target {text!r}: row map does not fit its rows")
        return parsed

    def absolute(self, point: tuple[int, int]) -> Box:
        """The box on the screen for an action at ``point``."""
        x, y = point
        left, top, right, bottom = self.box
        return (x + left, y + top, x + right, y + bottom)


def _mode(values: np.ndarray) -> int:
    return int(np.bincount(values.ravel(), minlength=256).argmax())


def _grey(image: Image.Image, box: Box) -> np.ndarray:
    return np.asarray(image.crop(box).convert("L"))


def estimate_target(image: Image.Image, point: tuple[int, int], region_size: int) -> Box | None:
    """The enclosed element around ``point``, relative to it, when it is larger than the main
    region; ``None`` otherwise (page background, a small element, nothing enclosed). An area
    that reaches above or below the window first searched is searched for again in the whole
    screen (a tall target: an editor's text area), where it may touch the screen's edge on
    one side (a window at the screen's edge)."""
    width, height = image.size
    x, y = point
    if not (0 <= x < width and 0 <= y < height):
        return None
    found = _enclosed(image, point, region_size, WINDOW, screen_edges=0)
    if found == "taller":
        found = _enclosed(image, point, region_size, (width, height), screen_edges=1)
    if not isinstance(found, tuple):
        return None
    left, top, right, bottom = found
    return (left - x, top - y, right - x, bottom - y)


def _enclosed(
    image: Image.Image,
    point: tuple[int, int],
    region_size: int,
    half: tuple[int, int],
    *,
    screen_edges: int,
) -> Box | Literal["taller"] | None:
    """The enclosed area of the point's background colour, searched within ``half`` of
    ``point`` (absolute box); ``"taller"`` when it reaches above or below that window where
    the window ends inside the screen. It may touch the screen's
    edge on ``screen_edges`` of its sides (a window at the screen's edge, clipped there);
    more, and it is the screen's background."""
    from scipy import ndimage  # on first use (0.2 s to import): reading files needs none

    width, height = image.size
    x, y = point
    half_w, half_h = half
    left, top = max(0, x - half_w), max(0, y - half_h)
    right, bottom = min(width, x + half_w), min(height, y + half_h)
    window = _grey(image, (left, top, right, bottom))
    px, py = x - left, y - top
    near = (slice(max(0, py - 8), py + 9), slice(max(0, px - 8), px + 9))
    background = _mode(window[near])
    mask = np.abs(window.astype(np.int16) - background) <= BACKGROUND_TOLERANCE
    labels, _count = ndimage.label(mask)
    near_labels = labels[near]
    near_labels = near_labels[near_labels > 0]
    if near_labels.size == 0:
        return None
    label = int(np.bincount(near_labels).argmax())
    rows, columns = ndimage.find_objects(labels, max_label=label)[label - 1]
    h, w = window.shape
    # each side it touches: the screen's edge there (known), or the window's (unknown)
    sides = [
        (columns.start == 0, left == 0),
        (columns.stop == w, right == width),
        (rows.start == 0, top == 0),
        (rows.stop == h, bottom == height),
    ]
    if any(touches and not screen for touches, screen in sides[2:]):
        return "taller"
    if any(touches and not screen for touches, screen in sides[:2]):
        return None  # reaches past the window's side: page background, not an element
    if sum(touches for touches, _ in sides) > screen_edges:
        return None  # the screen's background, or a page's that fills it
    if columns.stop - columns.start <= region_size and rows.stop - rows.start <= region_size:
        return None  # the main region already covers it
    area = (columns.stop - columns.start) * (rows.stop - rows.start)
    if int((labels[rows, columns] == label).sum()) < MIN_FILL * area:
        return None
    return (left + columns.start, top + rows.start, left + columns.stop, top + rows.stop)


def _inner(box: Box) -> Box:
    left, top, right, bottom = box
    return (left + INSET, top + INSET, right - INSET, bottom - INSET)


def _ink(image: Image.Image, box: Box, background: int) -> np.ndarray | None:
    """Which pixels of ``box`` (absolute) inset by :data:`INSET` differ from ``background``
    by :data:`INK_LEVEL` or more; ``None`` when the box reaches outside the image. Read
    once per box: the column and the row maps both count it."""
    left, top, right, bottom = _inner(box)
    if right <= left or bottom <= top:
        return np.zeros((0, 0), dtype=bool)
    if left < 0 or top < 0 or right > image.width or bottom > image.height:
        return None
    inside = _grey(image, (left, top, right, bottom)).astype(np.int16)
    return np.abs(inside - background) >= INK_LEVEL


def _column_bits(ink: np.ndarray | None, columns: int) -> int:
    """:func:`ink_map` of an :func:`_ink` reading."""
    if ink is None:
        return (1 << columns) - 1
    if ink.size == 0:
        return 0
    edges = np.linspace(0, ink.shape[1], columns + 1).round().astype(int)
    shares = np.add.reduceat(ink.sum(axis=0), edges[:-1]) / (
        np.maximum(np.diff(edges), 1) * ink.shape[0]
    )
    bits = 0
    for index, share in enumerate(shares):
        if edges[index + 1] > edges[index] and share > INK_FRACTION:
            bits |= 1 << index
    return bits


def ink_map(image: Image.Image, box: Box, background: int, columns: int) -> int:
    """One bit per column of ``box`` (absolute) inset by :data:`INSET`: set when more than
    :data:`INK_FRACTION` of the column's pixels differ from ``background`` by
    :data:`INK_LEVEL` or more. A box reaching outside the image sets every bit."""
    return _column_bits(_ink(image, box, background), columns)


def _row_counts(ink: np.ndarray | None, box: Box, rows: int) -> list[tuple[int, int]]:
    """Per band of ``box``'s rows (absolute, inset by :data:`INSET`; ``ink`` its
    :func:`_ink` reading): its ink pixels and its height; every band full of ink when the
    box reaches outside the image."""
    left, top, right, bottom = _inner(box)
    if right <= left or bottom <= top or rows <= 0:
        return []
    edges = np.linspace(0, bottom - top, rows + 1).round().astype(int)
    heights = [int(edges[i + 1] - edges[i]) for i in range(rows)]
    if ink is None:
        return [(height * (right - left), height) for height in heights]
    counts = np.add.reduceat(ink.sum(axis=1), edges[:-1])
    return [(int(count), height) for count, height in zip(counts, heights, strict=True)]


def row_map(image: Image.Image, box: Box, background: int, rows: int) -> int:
    """One bit per band of ``box``'s rows (``rows`` bands): set when the band holds more
    than :data:`ROW_INK_PER_LINE` ink pixels per pixel row (see :func:`ink_map` for ink)."""
    bits = 0
    counts = _row_counts(_ink(image, box, background), box, rows)
    for index, (count, height) in enumerate(counts):
        if height > 0 and count > ROW_INK_PER_LINE * height:
            bits |= 1 << index
    return bits


def _row_change(
    ink: np.ndarray | None, box: Box, stored: TargetFingerprint, *, other_density: bool = False
) -> int:
    """Bands of ``stored``'s row map that are now clearly otherwise: a band recorded empty
    that now holds twice the ink that sets a bit, or one recorded set that now holds less
    than half of it. A band near the limit (a line's last pixel rows) does not flip by a
    caret's blink beside it. ``other_density``: the screen is drawn at another pixel density;
    a band recorded set and now nearly empty counts only beside another one (see the module
    docstring)."""
    gained: list[bool] = []
    lost: list[bool] = []
    for index, (count, height) in enumerate(_row_counts(ink, box, stored.rows)):
        limit = ROW_INK_PER_LINE * height
        recorded = stored.row_ink >> index & 1
        gained.append(not recorded and count > 2 * limit)
        lost.append(bool(recorded) and count * 2 < limit)
    if other_density:
        lost = [
            here and ((i > 0 and lost[i - 1]) or (i + 1 < len(lost) and lost[i + 1]))
            for i, here in enumerate(lost)
        ]
    return sum(gained) + sum(lost)


def row_distance(
    image: Image.Image, box: Box, stored: TargetFingerprint, *, other_density: bool = False
) -> int:
    """Bands of ``stored``'s row map that are clearly otherwise on ``image`` in ``box``
    (see :func:`_row_change`; ``other_density``: ``image`` is drawn at another pixel
    density)."""
    return _row_change(
        _ink(image, box, stored.background), box, stored, other_density=other_density
    )


def is_tall(relative: Box) -> bool:
    """Whether a target's box (relative to the point) reaches beyond the window first
    searched, above or below: only the search of the point's whole column finds it."""
    return relative[1] <= -WINDOW[1] or relative[3] >= WINDOW[1]


def target_fingerprint(
    image: Image.Image, point: tuple[int, int], region_size: int, columns: int
) -> TargetFingerprint | None:
    """What recording stores for the element under ``point``, or ``None`` when there is no
    enclosed element larger than the main region. A tall target keeps a row map too."""
    relative = estimate_target(image, point, region_size)
    if relative is None:
        return None
    x, y = point
    left, top, right, bottom = relative
    absolute = (x + left, y + top, x + right, y + bottom)
    inner = _grey(image, _inner(absolute))
    background = _mode(inner) if inner.size else _mode(_grey(image, (x, y, x + 1, y + 1)))
    rows = 0
    if is_tall(relative):
        rows = max(1, min(MAX_ROWS, (bottom - top - 2 * INSET) // ROW_HEIGHT))
    return TargetFingerprint(
        relative,
        background,
        ink_map(image, absolute, background, columns),
        columns,
        rows,
        row_map(image, absolute, background, rows),
    )


def ink_distance(
    image: Image.Image,
    point: tuple[int, int],
    stored: TargetFingerprint,
    *,
    ignore: int = 0,
    other_density: bool = False,
) -> int:
    """Ink-map bits that differ between ``stored`` and the same box on ``image``, the
    columns set in ``ignore`` left out, and for a tall target the row bands that differ
    (``other_density``: ``image`` is drawn at another pixel density, see :func:`_row_change`)."""
    box = stored.absolute(point)
    ink = _ink(image, box, stored.background)
    distance = ((_column_bits(ink, stored.columns) ^ stored.ink) & ~ignore).bit_count()
    if stored.rows:
        distance += _row_change(ink, box, stored, other_density=other_density)
    return distance
