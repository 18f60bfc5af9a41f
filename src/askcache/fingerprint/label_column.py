"""The lines of text down one column of a region (an open menu's popup), each cut out and read.

:func:`column_lines` walks down the region's rows at one ``x`` (where a recorded label began,
as a share of its window): wherever a row holds ink near that column (a pixel further than
:data:`INK_LEVEL` from the region's most common colour, its background), the label under the
ink nearest the column is cut out (:func:`~.label_crop.label_crop`: the text line there, as a
recorded label was) and the walk goes on below it. Each line is read once by the OCR engine
(:func:`~.label_reader.read_crop`); a line the engine cannot read is kept with no reading,
so that a caller can count what it could not tell apart.

What this is for: a menu item that a toolkit does not describe (Qt's open menu), whose label
lies elsewhere in its popup on a screen drawn otherwise (taller items in another style or a
bigger font). Pure apart from the engine: the same pixels give the same lines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from askcache.fingerprint.label_crop import label_crop
from askcache.fingerprint.label_reader import MIN_LABEL_CONFIDENCE, LabelReading, read_crop
from askcache.fingerprint.ocr_engine import TesseractEngine

__all__ = ["INK_LEVEL", "ColumnLine", "column_lines"]

INK_LEVEL = 24
"""How far (per channel, 0-255) a pixel must be from the region's background to be ink (the
face tolerance of :mod:`.label_crop`)."""

_REACH = 12
"""How far either side of the column (pixels) a row's ink counts as the column's."""

_MAX_LINES = 80
"""The most lines a walk reads (a popup taller than a screen has fewer)."""


@dataclass(frozen=True)
class ColumnLine:
    """One line of text found down the column."""

    box: tuple[int, int, int, int]
    """Where its glyphs are (``x``, ``y``, width, height)."""
    reading: LabelReading | None
    """What the engine read there (``None``: unreadable, or no engine)."""


def column_lines(
    screenshot: Image.Image,
    region: tuple[int, int, int, int],
    x: int,
    *,
    heights: tuple[int, int] = (4, 120),
    engine: TesseractEngine | None = None,
    min_confidence: float = MIN_LABEL_CONFIDENCE,
) -> list[ColumnLine]:
    """The lines of text down the column ``x`` of ``region`` (``x``, ``y``, width, height,
    cut to the screenshot), top to bottom, each with what the engine read (see the module
    docstring). Only lines whose glyphs lie inside the region and are ``heights`` (least,
    most) pixels tall are kept (a separator, a picture or a block of text is not read: the
    engine takes longest on what is not a line of text)."""
    left = max(0, region[0])
    top = max(0, region[1])
    right = min(screenshot.width, region[0] + region[2])
    bottom = min(screenshot.height, region[1] + region[3])
    if not (left <= x < right) or top >= bottom:
        return []
    band_left, band_right = max(left, x - _REACH), min(right, x + _REACH + 1)
    band = np.asarray(
        screenshot.crop((band_left, top, band_right, bottom)).convert("RGB"), dtype=np.int16
    )
    background = _most_common(band)
    ink = np.abs(band - background).max(axis=2) > INK_LEVEL
    lines: list[ColumnLine] = []
    y = 0
    while y < ink.shape[0] and len(lines) < _MAX_LINES:
        columns = np.flatnonzero(ink[y])
        if columns.size == 0:
            y += 1
            continue
        nearest = int(columns[np.argmin(np.abs(columns + band_left - x))])
        crop = label_crop(screenshot, (band_left + nearest, top + y))
        if crop is None or crop.box[3] <= top + y:
            y += 1
            continue
        c_left, c_top, c_right, c_bottom = crop.box
        inside = left <= c_left and c_right <= right and top <= c_top and c_bottom <= bottom
        if inside and heights[0] <= c_bottom - c_top <= heights[1]:
            box = (c_left, c_top, c_right - c_left, c_bottom - c_top)
            if not any(line.box == box for line in lines):
                reading = read_crop(crop, engine=engine, min_confidence=min_confidence)
                lines.append(ColumnLine(box, reading))
        y = max(y + 1, c_bottom - top)
    return lines


def _most_common(pixels: np.ndarray) -> np.ndarray:
    """The most common colour of ``pixels`` (the first of the sorted order on a tie)."""
    wide = pixels.reshape(-1, 3).astype(np.int32)
    packed = (wide[:, 0] << 16) | (wide[:, 1] << 8) | wide[:, 2]
    colours, counts = np.unique(packed, return_counts=True)
    best = int(colours[int(counts.argmax())])
    return np.array([best >> 16, (best >> 8) & 255, best & 255], dtype=np.int16)
