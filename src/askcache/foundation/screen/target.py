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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from askcache.foundation.errors import InvalidHashError

__all__ = [
    "TargetFingerprint",
    "estimate_target",
    "ink_distance",
    "ink_map",
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

    def encode(self) -> str:
        """Text for the cache file: ``left,top,right,bottom;background;columns;ink-hex``."""
        left, top, right, bottom = self.box
        return f"{left},{top},{right},{bottom};{self.background};{self.columns};{self.ink:x}"

    @classmethod
    def decode(cls, text: str) -> TargetFingerprint:
        """Parse :meth:`encode`'s text.

        Raises:
            InvalidHashError: the text is not in that shape.
        """
        try:
            box_text, background, columns, ink = text.split(";")
            box = tuple(int(v) for v in box_text.split(","))
            if len(box) != 4 or box[0] >= box[2] or box[1] >= box[3]:
                raise ValueError("box")
            parsed = cls(
                box=box,
                background=int(background),
                ink=int(ink, 16),
                columns=int(columns),
            )
        except (AttributeError, TypeError, ValueError):
            raise InvalidHashError(
                f"visual target {text!r} is not 'left,top,right,bottom;background;columns;ink'"
            ) from None
        if not 0 < parsed.columns <= 256 or parsed.ink >> parsed.columns:
            raise InvalidHashError(f"visual target {text!r}: ink map does not fit its columns")
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
    region; ``None`` otherwise (page background, a small element, nothing enclosed)."""
    from scipy import ndimage  # on first use (0.2 s to import): reading files needs none

    width, height = image.size
    x, y = point
    if not (0 <= x < width and 0 <= y < height):
        return None
    half_w, half_h = WINDOW
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
    if rows.start == 0 or columns.start == 0 or rows.stop == h or columns.stop == w:
        return None  # reaches the window's edge: page background, not an element
    if columns.stop - columns.start <= region_size and rows.stop - rows.start <= region_size:
        return None  # the main region already covers it
    area = (columns.stop - columns.start) * (rows.stop - rows.start)
    if int((labels[rows, columns] == label).sum()) < MIN_FILL * area:
        return None
    return (
        left + columns.start - x,
        top + rows.start - y,
        left + columns.stop - x,
        top + rows.stop - y,
    )


def _inner(box: Box) -> Box:
    left, top, right, bottom = box
    return (left + INSET, top + INSET, right - INSET, bottom - INSET)


def ink_map(image: Image.Image, box: Box, background: int, columns: int) -> int:
    """One bit per column of ``box`` (absolute) inset by :data:`INSET`: set when more than
    :data:`INK_FRACTION` of the column's pixels differ from ``background`` by
    :data:`INK_LEVEL` or more. A box reaching outside the image sets every bit."""
    left, top, right, bottom = _inner(box)
    if right <= left or bottom <= top:
        return 0
    if left < 0 or top < 0 or right > image.width or bottom > image.height:
        return (1 << columns) - 1
    inside = _grey(image, (left, top, right, bottom)).astype(np.int16)
    ink = np.abs(inside - background) >= INK_LEVEL
    edges = np.linspace(0, right - left, columns + 1).round().astype(int)
    shares = np.add.reduceat(ink.sum(axis=0), edges[:-1]) / (
        np.maximum(np.diff(edges), 1) * ink.shape[0]
    )
    bits = 0
    for index, share in enumerate(shares):
        if edges[index + 1] > edges[index] and share > INK_FRACTION:
            bits |= 1 << index
    return bits


def target_fingerprint(
    image: Image.Image, point: tuple[int, int], region_size: int, columns: int
) -> TargetFingerprint | None:
    """What recording stores for the element under ``point``, or ``None`` when there is no
    enclosed element larger than the main region."""
    relative = estimate_target(image, point, region_size)
    if relative is None:
        return None
    x, y = point
    left, top, right, bottom = relative
    absolute = (x + left, y + top, x + right, y + bottom)
    inner = _grey(image, _inner(absolute))
    background = _mode(inner) if inner.size else _mode(_grey(image, (x, y, x + 1, y + 1)))
    return TargetFingerprint(
        relative, background, ink_map(image, absolute, background, columns), columns
    )


def ink_distance(
    image: Image.Image, point: tuple[int, int], stored: TargetFingerprint, *, ignore: int = 0
) -> int:
    """Ink-map bits that differ between ``stored`` and the same box on ``image``, the
    columns set in ``ignore`` left out."""
    now = ink_map(image, stored.absolute(point), stored.background, stored.columns)
    return ((now ^ stored.ink) & ~ignore).bit_count()
