"""Perceptual hashes of screen regions: cutting a region, hashing it, comparing hashes.

The parts :mod:`askcache.fingerprint.step` builds a step's fingerprint from. Hashes are hex strings
(imagehash's form), compared by Hamming distance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import imagehash
import numpy as np
from PIL import Image, ImageFilter

from askcache.foundation.errors import InvalidHashError
from askcache.foundation.geometry import Box, Point

if (
    TYPE_CHECKING
):  # not at run time: askcache.foundation.screen.elsewhere, which the messages import, uses this
    from askcache.foundation.geometry import Point

__all__ = [
    "check_hash_size",
    "compute_hash",
    "crop_region",
    "hamming_distance",
    "hash_bits",
    "phash_coefficients",
    "region_box",
    "region_distance",
    "shifted_boxes",
    "weak_bits",
]


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


def phash_coefficients(image: Image.Image, hash_size: int, blur: float = 0.0) -> np.ndarray:
    """The low-frequency DCT coefficients behind a pHash, minus their median, row by row.

    The same computation as imagehash's ``phash`` (grey, Lanczos-resized to ``4 * hash_size``
    square, DCT of rows and columns, the top-left ``hash_size`` square): a coefficient above
    zero here is a set bit of :func:`compute_hash`'s hash. ``blur`` as there. A coefficient
    near zero is a bit decided by noise (JPEG, another anti-aliasing): see
    :func:`region_distance`'s ``noise_floor``.
    """
    grey = image.convert("L")
    if blur > 0:
        grey = grey.filter(ImageFilter.GaussianBlur(blur))
    side = hash_size * 4
    pixels = np.asarray(grey.resize((side, side), Image.Resampling.LANCZOS))
    import scipy.fftpack  # on first use: 0.2 s to import, and reading files needs no hash

    dct = scipy.fftpack.dct(scipy.fftpack.dct(pixels, axis=0), axis=1)
    low = dct[:hash_size, :hash_size]
    return np.asarray((low - np.median(low)).ravel(), dtype=np.float64)


def weak_bits(image: Image.Image, hash_size: int, noise_floor: float, blur: float = 0.0) -> str:
    """Hex of the pHash bits of ``image`` that noise decides: those whose DCT coefficient lies
    within ``noise_floor`` of the median (:func:`phash_coefficients`), ordered as the hash's
    bits. Recording stores them next to the hash; at replay a differing bit is forgiven only
    when it is weak in both the recorded and the current region (:func:`region_distance`)."""
    weak = np.abs(phash_coefficients(image, hash_size, blur)) <= noise_floor
    value = 0
    for bit in weak:
        value = (value << 1) | int(bit)
    return f"{value:0{(hash_size * hash_size + 3) // 4}x}"


def hash_bits(stored: str, size: int) -> np.ndarray:
    """The bits of a hex hash, as imagehash orders them (first bit: the hash's top bit)."""
    value = int(stored, 16)
    return np.array([(value >> (size - 1 - index)) & 1 for index in range(size)], dtype=bool)


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


def check_hash_size(stored: str, hash_size: int) -> None:
    """Refuse ``stored`` unless it is the hex of a ``hash_size x hash_size`` hash.

    Raises:
        InvalidHashError: ``stored`` is not hex, or of another size.
    """
    hamming_distance(stored, stored)
    if len(stored) != (hash_size * hash_size + 3) // 4:
        raise InvalidHashError(
            f"cannot compare hashes of different sizes: {len(stored) * 4} bits "
            f"({stored!r}) vs {hash_size * hash_size} bits; were they made with "
            "different hash_size?"
        )


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
    noise_floor: float = 0.0,
    weak: str | None = None,
) -> int:
    """The smallest Hamming distance between ``stored`` and the hash of ``box`` on ``image``,
    ``box`` moved by up to ``shift_tolerance`` px each way (:func:`shifted_boxes`). The
    search stops at the first move whose distance is ``good_enough`` or less (a threshold:
    any such distance decides the same). Bits set in ``mask`` are not counted.

    ``noise_floor`` > 0 (pHash only): a differing bit is not counted when its DCT coefficient
    lies within ``noise_floor`` of the coefficients' median (:func:`phash_coefficients`) both
    in the current region and in the recorded one (``weak``: :func:`weak_bits` of the
    recorded region). Such a bit is decided by noise, a JPEG re-encode, a re-rendered glyph's
    anti-aliasing, a nearly flat region; a changed label moves strong coefficients. Weak in
    the current region alone is not enough: every coefficient of a blank region is near its
    median, and a blank screen must not match. ``weak`` ``None`` (a step recorded without it):
    no bit is forgiven. ``noise_floor`` 0: every differing bit counts (all files before this
    setting).

    Raises:
        InvalidHashError: ``stored`` is malformed or of another hash size.
    """
    robust = noise_floor > 0 and method == "phash"
    if robust:
        check_hash_size(stored, hash_size)  # malformed stored hashes are refused as always
        expected = (hash_size * hash_size + 3) // 4
        recorded = hash_bits(stored, hash_size * hash_size)
        ignored = hash_bits(f"{mask:x}", hash_size * hash_size) if mask else None
        if weak is not None:
            hamming_distance(weak, weak)  # hex, or a clear error
        if weak is not None and len(weak) != expected:
            raise InvalidHashError(
                f"weak bits of {len(weak) * 4} bits ({weak[:80]!r}) "
                f"for a {hash_size}x{hash_size} hash"
            )
        forgivable = (
            hash_bits(weak, hash_size * hash_size)
            if weak is not None
            else np.zeros(hash_size * hash_size, dtype=bool)
        )
    best: int | None = None
    for moved in shifted_boxes(box, shift_tolerance):
        if robust:
            coefficients = phash_coefficients(crop_region(image, moved), hash_size, blur)
            noise = forgivable & (np.abs(coefficients) <= noise_floor)
            differs = (recorded != (coefficients > 0)) & ~noise
            if ignored is not None:
                differs &= ~ignored
            found = int(differs.sum())
            if best is None or found < best:
                best = found
            if best <= good_enough:
                break
            continue
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
