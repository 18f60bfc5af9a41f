"""Where the label under an action point is, cut out for OCR.

A label is the text a person reads to tell one control from another: a key's face, a button's
caption, a menu's title, a link's words. :func:`label_crop` finds it from the pixels alone, for
any toolkit (Tk and Xaw programs say nothing about their widgets):

1. the *face* colour is the most common colour around the point (a key's face, a page's
   background: glyph strokes are the minority even where the point falls on one);
2. the face is the region of that colour connected to the point; the *ink* is what the face
   encloses and is not of its colour (a key's border is outside its face, a glyph's counter is
   of the face's colour);
3. a face closed around the point and compact (a key, a button) gives all its ink; an open
   or a long one (a page, a menu bar, a highlighted menu entry) gives the text line under the
   point: the glyphs beside the nearest one, on its line, no further apart than a word space
   (1.6 character pitches: a fixed-width font's space is wide, and cutting a label short
   would hide a relabel of its other words, while merging two only makes a neighbour's
   change refuse too); a line that runs on past the first look is followed along;
4. an underline is left out; the glyphs are cut with a margin, drawn dark on white whatever
   the colours were (the distance from the face colour, so anti-aliasing is kept),
   everything else blanked (a border, a neighbour), and scaled to one text height for the
   engine (on a key, at least a share of the key's height: a lone ``.`` keeps its size).

The element's box, when the platform gives one (an accessibility tree), bounds the search:
all the glyphs centred in it are its label. Nothing readable (the point on a blank area, on a
picture with no glyph-sized parts) gives ``None``. Pure: the same pixels give the same crop.
The settings were tuned on ``bench/label_ocr.py``'s tuning set (docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass

import numpy as np
from PIL import Image

from askcache.foundation.geometry import Point

__all__ = ["LABEL_HEIGHT", "LabelCrop", "label_crop"]

LABEL_HEIGHT = 24
"""The height, in pixels, a label's line is scaled to before it is read (tuned on
``bench/label_ocr.py``'s tuning cases)."""

_NEAR = (96, 40)
"""How far from the point the search looks first when no box is given (x, y each way)."""
_REACH = 320
"""How far along the line it looks (x, each way; at least 40 of the line's heights) when the
line under the point runs on past that."""
_FACE_TOLERANCE = 24
"""How far (per channel, 0-255) a pixel may be from the face colour and still be face."""
_PATCH = 12
"""The face colour is the most common one within this many pixels of the point (a patch
larger than a bold glyph's strokes at 2x)."""
_NEAR_FACE = 12
"""The face is one of the regions of its colour within this many pixels of the point."""
_TEXT_OF_FACE = 0.4
"""On a closed face, the text is taken to be at least this part of the face's height."""
_MARGIN = 0.35
"""The white margin around the glyphs, as a part of the text's height."""
_COMPACT = 12
"""A closed face at most this many text heights wide is one control's."""
_WORD_GAP_OF_PITCH = 1.6
"""The widest gap inside a label, in character pitches: a word space of a fixed-width font
measured 1.2 to 1.5 of them, the gap between two menus of a menu bar 1.9 or more."""
_MAX_GLYPH = 120
"""A part taller than this is a picture or a frame, not a glyph."""


@dataclass(frozen=True)
class LabelCrop:
    """A label cut out for OCR."""

    image: Image.Image
    """Dark glyphs on white (mode ``L``), with a margin, scaled to :data:`LABEL_HEIGHT`."""
    box: tuple[int, int, int, int]
    """Where the glyphs are on the screenshot (left, top, right, bottom)."""
    parts: int
    """How many connected parts the glyphs have (1: likely a single character)."""
    closed: bool
    """Whether the label sits on a closed face (a key, a button) rather than an open one."""

    def digest(self) -> str:
        """A digest of :attr:`image` (16 hex digits): two crops with the same digest are the
        same picture, which the engine (deterministic) reads the same way."""
        data = hashlib.sha256(f"{self.image.width}x{self.image.height}:".encode())
        data.update(self.image.tobytes())
        return data.hexdigest()[:16]


def label_crop(
    image: Image.Image,
    point: Point,
    box: tuple[int, int, int, int] | None = None,
    *,
    height: int = LABEL_HEIGHT,
) -> LabelCrop | None:
    """The label under ``point`` on ``image`` (see the module docstring); ``box`` (``x``,
    ``y``, width, height, as :class:`~askcache.foundation.screen.elements.Element` gives it)
    bounds the search. ``None``: no glyph there."""
    x, y = point
    if not (0 <= x < image.width and 0 <= y < image.height):
        return None
    if box is not None:
        bx, by, bw, bh = box
        pad = max(3, bh // 3)  # glyphs that touch a tight box stay whole
        window = (
            max(0, bx - pad),
            max(0, by - pad),
            min(image.width, bx + bw + pad),
            min(image.height, by + bh + pad),
        )
        if window[0] <= x < window[2] and window[1] <= y < window[3]:
            inside = (bx - window[0], by - window[1], bx + bw - window[0], by + bh - window[1])
            found = _search(image, point, window, inside)
            return None if found is None else _cut(*found[:5], height=height)
    # first near the point (most labels fit), then along the line when it runs on past that
    found = _search(image, point, _around(image, point, _NEAR))
    if found is not None and found[-1]:
        line = found[-2]
        reach = max(_REACH, 40 * (line[3] - line[1]))
        band = (
            max(0, x - reach),
            max(0, found[3][1] + 2 * line[1] - line[3]),
            min(image.width, x + reach + 1),
            min(image.height, found[3][1] + 2 * line[3] - line[1]),
        )
        found = _search(image, point, band)
    return None if found is None else _cut(*found[:5], height=height)


_Window = tuple[int, int, int, int]
_Found = tuple[np.ndarray, np.ndarray, list[int], _Window, int, _Window, bool]
"""The window's distance from the face colour, its glyph parts' labels, the chosen parts,
the window, the face's height (closed faces; 0: open), the chosen parts' box in the window,
and whether the line may run on past the window."""


def _search(
    image: Image.Image,
    point: Point,
    window: tuple[int, int, int, int],
    inside: tuple[int, int, int, int] | None = None,
) -> _Found | None:
    """The label's glyphs in ``window``; only parts centred ``inside`` (the element's box,
    relative to the window) where one is given."""
    from scipy import ndimage  # on first use (0.2 s to import)

    left, top = window[0], window[1]
    pixels = np.asarray(image.crop(window).convert("RGB"), dtype=np.int16)
    px, py = point[0] - left, point[1] - top
    face_colour = _face_colour(pixels, px, py)
    distance = np.abs(pixels - face_colour).max(axis=2)
    is_face = distance <= _FACE_TOLERANCE
    regions, _ = ndimage.label(is_face)
    # the face: the region of the face colour at the point, or the next nearest one when it
    # encloses no glyph (the point was in a glyph's counter, the inside of an O)
    for region in _regions_near(regions, px, py)[:3]:
        found = _glyphs(distance, is_face, regions == region, (px, py), inside)
        if found is not None:
            parts, chosen, face_height, line, runs_on = found
            return distance, parts, chosen, window, face_height, line, runs_on
    return None


def _glyphs(
    distance: np.ndarray,
    is_face: np.ndarray,
    face: np.ndarray,
    at: tuple[int, int],
    inside: tuple[int, int, int, int] | None,
) -> tuple[np.ndarray, list[int], int, tuple[int, int, int, int], bool] | None:
    """The glyph parts the face encloses and those of the label at ``at`` (see the module
    docstring)."""
    from scipy import ndimage

    px, py = at
    rows, columns = np.flatnonzero(face.any(axis=1)), np.flatnonzero(face.any(axis=0))
    height, width = face.shape
    closed = bool(
        rows[0] > 0 and columns[0] > 0 and rows[-1] < height - 1 and columns[-1] < width - 1
    )
    # the ink: what the face encloses (the parts of the rest that touch no edge of the
    # window) and is not of the face's colour
    rest, _ = ndimage.label(~face)
    edges = np.unique(np.concatenate([rest[0], rest[-1], rest[:, 0], rest[:, -1]]))
    ink = (rest > 0) & ~np.isin(rest, edges) & ~is_face
    parts, count = ndimage.label(ink, structure=np.ones((3, 3), dtype=bool))
    if count == 0:
        return None
    slices = ndimage.find_objects(parts)
    boxes = [
        (s[1].start, s[0].start, s[1].stop, s[0].stop) if s is not None else (0, 0, 0, 0)
        for s in slices
    ]
    if inside is not None:
        boxes = [b if _centred_in(b, inside) else (0, 0, 0, 0) for b in boxes]
    # a closed face is a control's (all its glyphs are its label) when it is compact; a
    # long one (a menu bar, a highlighted menu entry) holds several labels, told apart by gaps
    compact = closed and int(columns[-1] - columns[0]) <= _COMPACT * _text_height(boxes)
    chosen = _line(boxes, px, py, bounded=compact or inside is not None)
    if not chosen:
        return None
    line = (
        min(boxes[i][0] for i in chosen),
        min(boxes[i][1] for i in chosen),
        max(boxes[i][2] for i in chosen),
        max(boxes[i][3] for i in chosen),
    )
    line_height = line[3] - line[1]
    runs_on = (
        not closed
        and inside is None
        and (line[0] <= 2 * line_height or line[2] >= width - 2 * line_height)
    )
    face_height = int(rows[-1] - rows[0] + 1) if closed else 0
    return parts, chosen, face_height, line, runs_on


def _cut(
    distance: np.ndarray,
    parts: np.ndarray,
    chosen: list[int],
    window: tuple[int, int, int, int],
    face_height: int,
    *,
    height: int,
) -> LabelCrop:
    """The chosen parts, dark on white, with a margin, scaled so that the text's height
    (the line's, or on a closed face at least :data:`_TEXT_OF_FACE` of the face's, so that a
    lone ``.`` or ``-`` keeps its size) is ``height``."""
    from scipy import ndimage

    left, top = window[0], window[1]
    slices = ndimage.find_objects(parts)
    l0 = min(slices[i][1].start for i in chosen)
    r0 = max(slices[i][1].stop for i in chosen)
    t0 = min(slices[i][0].start for i in chosen)
    b0 = max(slices[i][0].stop for i in chosen)
    # the parts and their anti-aliased fringe, inside the parts' box and one pixel around
    a0, c0 = max(0, t0 - 1), max(0, l0 - 1)
    local = parts[a0 : b0 + 1, c0 : r0 + 1]
    keep = ndimage.binary_dilation(np.isin(local, [i + 1 for i in chosen]), iterations=1)
    near = distance[a0 : b0 + 1, c0 : r0 + 1]
    ink_distance = near[keep & (near > _FACE_TOLERANCE)]
    reference = max(float(np.percentile(ink_distance, 90)), 1.0) if ink_distance.size else 1.0
    darkness = np.where(keep, np.clip(near * (255.0 / reference), 0, 255), 0)
    glyphs = (255 - darkness[t0 - a0 : b0 - a0, l0 - c0 : r0 - c0]).astype(np.uint8)
    text_height = max(b0 - t0, round(face_height * _TEXT_OF_FACE), 1)
    margin = max(2, round(text_height * _MARGIN))
    crop = np.full((text_height + 2 * margin, r0 - l0 + 2 * margin), 255, dtype=np.uint8)
    y0 = margin + (text_height - (b0 - t0)) // 2
    crop[y0 : y0 + b0 - t0, margin : margin + r0 - l0] = glyphs
    out = Image.fromarray(crop, mode="L")
    scale = height / text_height
    if scale != 1:
        size = (max(1, round(out.width * scale)), max(1, round(out.height * scale)))
        out = out.resize(size, Image.Resampling.BICUBIC)
    return LabelCrop(
        image=out,
        box=(left + l0, top + t0, left + r0, top + b0),
        parts=len(chosen),
        closed=face_height > 0,
    )


def _around(image: Image.Image, point: Point, reach: tuple[int, int]) -> tuple[int, int, int, int]:
    x, y = point
    return (
        max(0, x - reach[0]),
        max(0, y - reach[1]),
        min(image.width, x + reach[0] + 1),
        min(image.height, y + reach[1] + 1),
    )


def _face_colour(pixels: np.ndarray, px: int, py: int) -> np.ndarray:
    """The most common colour within :data:`_PATCH` pixels of the point."""
    patch = pixels[
        max(0, py - _PATCH) : py + _PATCH + 1, max(0, px - _PATCH) : px + _PATCH + 1
    ].reshape(-1, 3)
    wide = patch.astype(np.int32)
    packed = (wide[:, 0] << 16) | (wide[:, 1] << 8) | wide[:, 2]
    colours, counts = np.unique(packed, return_counts=True)
    # the first most common one in the sorted order: the same pixels, the same colour
    best = int(colours[int(counts.argmax())])
    return np.array([best >> 16, (best >> 8) & 255, best & 255], dtype=np.int16)


def _regions_near(regions: np.ndarray, px: int, py: int) -> list[int]:
    """The regions within :data:`_NEAR_FACE` pixels of the point, the nearest first (the
    one at the point, then the one that surrounds a glyph the point is on or in)."""
    r = _NEAR_FACE
    y0, x0 = max(0, py - r), max(0, px - r)
    patch = regions[y0 : py + r + 1, x0 : px + r + 1]
    ys, xs = np.nonzero(patch)
    if ys.size == 0:
        return []
    reach = np.maximum(np.abs(ys + y0 - py), np.abs(xs + x0 - px))
    labels = patch[ys, xs]
    nearest = np.full(int(labels.max()) + 1, r + 1)
    np.minimum.at(nearest, labels, reach)
    present = np.flatnonzero(nearest <= r)
    return [int(v) for v in present[np.lexsort((present, nearest[present]))]]


Box = tuple[int, int, int, int]


def _centred_in(part: Box, box: Box) -> bool:
    cx, cy = (part[0] + part[2]) / 2, (part[1] + part[3]) / 2
    return box[0] <= cx < box[2] and box[1] <= cy < box[3]


def _gap(a: Box, b: Box) -> int:
    """The horizontal gap between two boxes (0 when they overlap along x)."""
    return max(0, max(a[0], b[0]) - min(a[2], b[2]))


def _distance(box: Box, px: int, py: int) -> float:
    dx = max(box[0] - px, 0, px - box[2] + 1)
    dy = max(box[1] - py, 0, py - box[3] + 1)
    return float(np.hypot(dx, dy))


def _line(boxes: list[Box], px: int, py: int, *, bounded: bool) -> list[int]:
    """The parts of the label. Bounded (a closed face, an element's box): all of them,
    unless they make a block of several lines, then the line nearest the point. Open (a page,
    a menu bar): the line at the point, its parts no further apart than a word gap, none if
    the point is not on or beside a glyph. Underlines are left out."""
    usable = [i for i, b in enumerate(boxes) if 0 < b[3] - b[1] <= _MAX_GLYPH and b[2] > b[0]]
    if not usable:
        return []
    heights = sorted(boxes[i][3] - boxes[i][1] for i in usable)
    typical = heights[len(heights) // 2]
    if bounded:
        top = min(boxes[i][1] for i in usable)
        bottom = max(boxes[i][3] for i in usable)
        if bottom - top <= 3 * max(typical, 4):
            return _without_underline(boxes, usable)
    seed = min(usable, key=lambda i: (_distance(boxes[i], px, py), i))
    if not bounded and _distance(boxes[seed], px, py) > max(8.0, 1.5 * typical):
        return []
    # the widest gap inside a label: a word space, as wide as a character in a fixed-width
    # font ("Send STOP Signal"); cutting a label short would hide a relabel of its other
    # words, merging two only makes a neighbour's change refuse too
    word_gap = _WORD_GAP_OF_PITCH * _pitch(boxes, usable, seed)
    line = {seed}
    top, bottom = boxes[seed][1], boxes[seed][3]
    span = boxes[seed]
    changed = True
    while changed:
        changed = False
        for i in usable:
            if i in line:
                continue
            b = boxes[i]
            overlap = min(bottom, b[3]) - max(top, b[1])
            if overlap <= 0 or overlap < 0.5 * min(bottom - top, b[3] - b[1]):
                continue
            if not bounded and b[3] - b[1] > 2.5 * (bottom - top) and bottom - top >= 4:
                continue  # a picture beside the text
            if bounded or _gap(span, b) <= word_gap:
                line.add(i)
                top, bottom = min(top, b[1]), max(bottom, b[3])
                span = (min(span[0], b[0]), top, max(span[2], b[2]), bottom)
                changed = True
    return _without_underline(boxes, sorted(line))


def _text_height(boxes: list[Box]) -> int:
    """The height of capitals and ascenders: the 90th percentile of the glyph-sized parts'
    heights (1 when there is none)."""
    heights = sorted(b[3] - b[1] for b in boxes if 0 < b[3] - b[1] <= _MAX_GLYPH and b[2] > b[0])
    return max(1, heights[len(heights) * 9 // 10]) if heights else 1


def _pitch(boxes: list[Box], usable: list[int], seed: int) -> float:
    """The distance from one character to the next on the seed's line: the median step
    between the left edges of side-by-side parts (most neighbours are letters of a word)."""
    s = boxes[seed]
    row = sorted(
        (boxes[i] for i in usable if min(s[3], boxes[i][3]) - max(s[1], boxes[i][1]) > 0),
        key=lambda b: (b[0], b[1]),
    )
    steps = sorted(b[0] - a[0] for a, b in itertools.pairwise(row) if b[0] >= a[2] - 1)
    if not steps:
        return float(max(1, s[3] - s[1]))
    return float(steps[len(steps) // 2])


def _without_underline(boxes: list[Box], chosen: list[int]) -> list[int]:
    """``chosen`` less an underline: thin, wide parts under the glyphs' baseline (a link's
    underline, whole or cut by descenders). A lone rule (a ``-`` key) and a hyphen (on the
    glyphs' middle) stay; an underscore goes, as the underline it looks like."""
    if len(chosen) < 2:
        return chosen
    heights = sorted(boxes[i][3] - boxes[i][1] for i in chosen)
    typical = heights[len(heights) // 2]
    thin = max(2, typical // 5)

    def rule(i: int) -> bool:
        b = boxes[i]
        return b[3] - b[1] <= thin and b[2] - b[0] >= 2 * (b[3] - b[1])

    others = [i for i in chosen if not rule(i)]
    if not others:
        return chosen
    bottoms = sorted(boxes[i][3] for i in others)
    baseline = bottoms[len(bottoms) // 2]
    return [i for i in chosen if not (rule(i) and boxes[i][1] >= baseline - 1)]
