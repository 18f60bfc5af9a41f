"""Visual fingerprints: perceptual hashes of the screen region around an action point.

The two functions a benchmark (or a curious user) calls directly are
:func:`compute_step_representation` (what recording stores for a step) and
:func:`check_step_representation` (what replay decides before executing it). Everything else
here is the parts they are made of: decoding screenshots once, locating the latest one in a
message history, cutting the region, hashing and comparing.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import imagehash
from PIL import Image, UnidentifiedImageError

from askcache.actions import Point, parse_action
from askcache.cache_file import VisualValidationConfig
from askcache.errors import InvalidHashError, InvalidScreenshotError
from askcache.messages import ImageBlockParam, MessageParam, ToolUseBlockParam
from askcache.settings import CacheWritingSettings, VisualMethod

__all__ = [
    "Box",
    "VisualCheck",
    "check_step_representation",
    "compute_hash",
    "compute_step_representation",
    "decode_screenshot",
    "find_recent_screenshot",
    "find_recent_screenshot_block",
    "hamming_distance",
    "region_box",
    "shifted_boxes",
    "validation_config",
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


def compute_hash(image: Image.Image, method: str, hash_size: int = 8) -> str:
    """Perceptual hash of ``image`` as a hex string of ``hash_size**2`` bits.

    ``method`` is one of ``phash``, ``ahash``, ``dhash``, ``whash``.
    """
    try:
        hasher = _HASHERS[method]
    except KeyError:
        raise InvalidHashError(
            f"unknown hash method {method!r}; valid methods: {', '.join(_HASHERS)}"
        ) from None
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


@lru_cache(maxsize=8)
def _decode(data: str) -> Image.Image:
    raw = base64.b64decode(data, validate=True)
    image = Image.open(io.BytesIO(raw))
    image.load()
    return image


def decode_screenshot(data: str, where: str = "a screenshot") -> Image.Image:
    """Decode a base64 image once; later calls with the same string reuse the image.

    The returned image is shared: crop or copy it, never draw on it.

    Raises:
        InvalidScreenshotError: not base64, or not an image Pillow can read.
    """
    try:
        return _decode(data)
    except (binascii.Error, ValueError) as exc:
        raise InvalidScreenshotError(where, f"not base64 ({exc})") from exc
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise InvalidScreenshotError(where, str(exc)) from exc


def find_recent_screenshot_block(
    messages: Sequence[MessageParam], from_index: int | None = None
) -> tuple[int, ImageBlockParam] | None:
    """The latest image inside a tool_result at or before ``from_index``, with its message index.

    ``from_index=None`` searches from the last message.
    """
    start = len(messages) - 1 if from_index is None else min(from_index, len(messages) - 1)
    for index in range(start, -1, -1):
        message = messages[index]
        if message.role != "user":
            continue
        for result in reversed(message.tool_results):
            if isinstance(result.content, str):
                continue
            for item in reversed(result.content):
                if isinstance(item, ImageBlockParam):
                    return index, item
    return None


def find_recent_screenshot(
    messages: Sequence[MessageParam], from_index: int | None = None
) -> Image.Image | None:
    """The latest screenshot (an image in a tool_result) at or before ``from_index``, decoded."""
    found = find_recent_screenshot_block(messages, from_index)
    if found is None:
        return None
    index, block = found
    return decode_screenshot(block.source.data, f"message {index}")


def validation_config(settings: CacheWritingSettings) -> VisualValidationConfig | None:
    """The per-file validation config for these writing settings (``None`` for ``none``)."""
    if settings.visual_verification_method == VisualMethod.NONE:
        return None
    return VisualValidationConfig(
        method=settings.visual_verification_method.value,
        hash_size=settings.hash_size,
        region_size=settings.visual_validation_region_size,
        threshold=settings.visual_validation_threshold,
        shift_tolerance=settings.visual_validation_shift_tolerance,
    )


def _anchor(step: ToolUseBlockParam, pointer: Point | None) -> Point | None:
    action = parse_action(step)
    if action is not None and action.point is not None:
        return action.point
    return pointer


def compute_step_representation(
    image: Image.Image,
    step: ToolUseBlockParam,
    config: VisualValidationConfig,
    *,
    pointer: Point | None = None,
) -> str | None:
    """The visual representation recording stores for ``step``, from the screen before it.

    The region is centred on the step's coordinate; for an action without one (typing, a key
    press) on ``pointer``, the pointer's last known position; failing both, the whole screen.
    Returns ``None`` when the point lies outside the image.
    """
    box = region_box(image.size, _anchor(step, pointer), config.region_size)
    if box is None:
        return None
    return compute_hash(image.crop(box), config.method, config.hash_size)


@dataclass(frozen=True)
class VisualCheck:
    """The outcome of checking one step's region against its stored representation."""

    matched: bool
    """True when the distance is within the threshold."""
    distance: int | None
    """Hamming distance in bits; ``None`` when the point lies outside the screen."""
    threshold: int
    """The threshold applied."""
    method: str
    """Hash method."""
    hash_size: int
    """Hash side."""
    region_size: int
    """Region side in pixels."""
    box: Box | None
    """The region compared, or ``None``."""
    shift_tolerance: int = 0
    """Pixels the region was allowed to move each way."""

    def describe(self) -> str:
        """One line for logs and messages: method, hash size, distance vs threshold."""
        setup = (
            f"{self.method}, {self.hash_size}x{self.hash_size} hash, {self.region_size} px region"
        )
        if self.shift_tolerance:
            setup += f" ±{self.shift_tolerance} px"
        if self.distance is None:
            return f"{setup}: the action point is outside the current screen"
        relation = "<=" if self.matched else ">"
        return f"{setup}: distance {self.distance} {relation} threshold {self.threshold}"


def check_step_representation(
    image: Image.Image,
    step: ToolUseBlockParam,
    stored: str,
    config: VisualValidationConfig,
    *,
    threshold: int | None = None,
    pointer: Point | None = None,
) -> VisualCheck:
    """Decide whether the screen in ``image`` still matches ``stored`` around ``step``'s point.

    ``threshold`` overrides ``config.threshold``. A distance equal to the threshold matches.
    With ``config.shift_tolerance`` the current region is also tried moved by up to that many
    pixels each way, and the smallest distance counts.

    Raises:
        InvalidHashError: ``stored`` is malformed or of another hash size.
    """
    limit = config.threshold if threshold is None else threshold
    box = region_box(image.size, _anchor(step, pointer), config.region_size)
    distance: int | None = None
    if box is None:
        hamming_distance(stored, stored)  # still reject a malformed stored hash
    else:
        distance = min(
            hamming_distance(
                stored, compute_hash(image.crop(moved), config.method, config.hash_size)
            )
            for moved in shifted_boxes(box, image.size, config.shift_tolerance)
        )
    return VisualCheck(
        matched=distance is not None and distance <= limit,
        distance=distance,
        threshold=limit,
        method=config.method,
        hash_size=config.hash_size,
        region_size=config.region_size,
        box=box,
        shift_tolerance=config.shift_tolerance,
    )


def shifted_boxes(box: Box, size: tuple[int, int], tolerance: int) -> list[Box]:
    """``box`` and its copies moved by up to ``tolerance`` px each way, staying on the image.

    The unmoved box comes first; near an edge (where the region was clipped) only moves that
    keep the same size inside the image are tried.
    """
    left, top, right, bottom = box
    moved = [box]
    for dx in range(-tolerance, tolerance + 1):
        for dy in range(-tolerance, tolerance + 1):
            candidate = (left + dx, top + dy, right + dx, bottom + dy)
            inside = (
                candidate[0] >= 0
                and candidate[1] >= 0
                and candidate[2] <= size[0]
                and candidate[3] <= size[1]
            )
            if (dx or dy) and inside:
                moved.append(candidate)
    return moved
