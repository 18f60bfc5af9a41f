"""Perceptual hashes of screen regions: cutting a region, hashing it, comparing hashes.

The parts :mod:`askcache.visual` builds a step's fingerprint from. Hashes are hex strings
(imagehash's form), compared by Hamming distance.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import imagehash
import numpy as np
from PIL import Image, ImageFilter

from askcache.actions import Point
from askcache.errors import InvalidHashError

__all__ = [
    "Box",
    "compute_hash",
    "crop_region",
    "hamming_distance",
    "region_box",
    "region_distance",
    "shifted_boxes",
]

Box = tuple[int, int, int, int]
"""A region ``(left, top, right, bottom)`` in pixels, right and bottom exclusive."""

_HASHERS: dict[str, Callable[[Image.Image, int], imagehash.ImageHash]] = {
    "phash": lambda image, size: imagehash.phash(image, hash_size=size),
    "ahash": lambda image, size: imagehash.average_hash(image, hash_size=size),
    "dhash": lambda image, size: imagehash.dhash(image, hash_size=size),
    "whash": lambda image, size: imagehash.whash(
        image,
        hash_size=size,
        image_scale=max(size, 2 ** int(math.log2(max(1, min(image.size))))),
    ),
}


def compute_hash(image: Image.Image, method: str, hash_size: int = 8, blur: float = 0.0) -> str:
    """Perceptual hash of ``image`` as a hex string of ``hash_size**2`` bits.

    ``method`` is one of ``phash``, ``ahash``, ``dhash``, ``whash``. ``blur`` > 0 hashes the
    image in grey after a Gaussian blur of that radius (re-rendered text hashes alike).
    """
    try:
        hasher = _HASHERS[method]
    except KeyError:
        raise InvalidHashError(
            f"unknown hash method {method!r}; valid methods: {', '.join(_HASHERS)}"
        ) from None
    if blur > 0:
        image = image.convert("L").filter(ImageFilter.GaussianBlur(blur))
    return str(hasher(image, hash_size))


def hamming_distance(first: str, second: str) -> int:
    """Number of differing bits between two hex hashes of the same size.

    Raises:
        InvalidHashError: a hash is not hex, or the two have different sizes.
    """
    for value in (first, second):
        try:
            int(value, 16)
        except (TypeError, ValueError):
            raise InvalidHashError(f"visual hash {value!r} is not a hex string") from None
    if len(first) != len(second):
        raise InvalidHashError(
            f"cannot compare hashes of different sizes: {len(first) * 4} bits ({first!r}) "
            f"vs {len(second) * 4} bits ({second!r}); were they made with different hash_size?"
        )
    return (int(first, 16) ^ int(second, 16)).bit_count()


def region_box(size: tuple[int, int], anchor: Point | None, region_size: int) -> Box | None:
    """The square of side ``region_size`` centred on ``anchor``, clipped at the edges.

    ``anchor=None`` means the whole screen. Returns ``None`` when the anchor lies outside.
    """
    width, height = size
    if anchor is None:
        return (0, 0, width, height)
    x, y = anchor
    if not (0 <= x < width and 0 <= y < height):
        return None
    half = region_size // 2
    left, top = x - half, y - half
    return (
        max(0, left),
        max(0, top),
        min(width, left + region_size),
        min(height, top + region_size),
    )


def region_distance(
    image: Image.Image,
    box: Box,
    stored: str,
    method: str,
    hash_size: int,
    *,
    shift_tolerance: int,
    blur: float = 0.0,
    good_enough: int = 0,
    mask: int = 0,
) -> int:
    """The smallest Hamming distance between ``stored`` and the hash of ``box`` on ``image``,
    ``box`` moved by up to ``shift_tolerance`` px each way (:func:`shifted_boxes`). The
    search stops at the first move whose distance is ``good_enough`` or less (a threshold:
    any such distance decides the same). Bits set in ``mask`` are not counted.

    Raises:
        InvalidHashError: ``stored`` is malformed or of another hash size.
    """
    best: int | None = None
    for moved in shifted_boxes(box, shift_tolerance):
        current = compute_hash(crop_region(image, moved), method, hash_size, blur)
        found = hamming_distance(stored, current)
        if mask:
            found = ((int(stored, 16) ^ int(current, 16)) & ~mask).bit_count()
        if best is None or found < best:
            best = found
        if best <= good_enough:
            break
    assert best is not None  # shifted_boxes always yields the box itself
    return best


def shifted_boxes(box: Box, tolerance: int) -> list[Box]:
    """``box`` and its copies moved by up to ``tolerance`` px each way; the unmoved box first.

    A moved box may reach past the image's edge (a region clipped by the edge, moved
    outwards): :func:`crop_region` fills that strip by repeating the edge pixels, so a 1 px
    scroll at a region against the screen's edge is matched like anywhere else.
    """
    left, top, right, bottom = box
    moved = [box]
    for dx in range(-tolerance, tolerance + 1):
        for dy in range(-tolerance, tolerance + 1):
            if dx or dy:
                moved.append((left + dx, top + dy, right + dx, bottom + dy))
    return moved


def crop_region(image: Image.Image, box: Box) -> Image.Image:
    """``image`` cut to ``box``; parts of ``box`` outside the image repeat its edge pixels.

    Inside the image this is ``image.crop(box)``. Outside, the result is grayscale (every
    hash method works on grayscale), the missing rows and columns copies of the nearest edge.
    """
    width, height = image.size
    left, top, right, bottom = box
    if left >= 0 and top >= 0 and right <= width and bottom <= height:
        return image.crop(box)
    x0, y0 = min(max(left, 0), width - 1), min(max(top, 0), height - 1)
    x1, y1 = max(min(right, width), x0 + 1), max(min(bottom, height), y0 + 1)
    pixels = np.asarray(image.crop((x0, y0, x1, y1)).convert("L"))
    pad_top, pad_left = max(0, y0 - top), max(0, x0 - left)
    padding = ((pad_top, max(0, bottom - y1)), (pad_left, max(0, right - x1)))
    padded = np.pad(pixels, padding, mode="edge")
    row, column = top - (y0 - pad_top), left - (x0 - pad_left)
    return Image.fromarray(padded[row : row + bottom - top, column : column + right - left])
