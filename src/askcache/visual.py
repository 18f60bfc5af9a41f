"""Visual fingerprints: perceptual hashes of the screen region around an action point.

The two functions a benchmark (or a curious user) calls directly are
:func:`compute_step_representation` (what recording stores for a step) and
:func:`check_step_representation` (what replay decides before executing it). Everything else
here is the parts they are made of: decoding screenshots once, locating the latest one in a
message history, cutting the region, hashing and comparing.

A step is fingerprinted twice, both centred on its point: a coarse hash of the main region
(100 px by default), which sees layout, and a fine hash of a smaller detail region (48 px),
which sees the element's own label. A replayed step matches when both are within their
thresholds.
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
import numpy as np
from PIL import Image, UnidentifiedImageError

from askcache.actions import Point, parse_action
from askcache.cache_file import DetailCheckConfig, VisualValidationConfig
from askcache.errors import InvalidHashError, InvalidScreenshotError
from askcache.messages import ImageBlockParam, MessageParam, ToolUseBlockParam
from askcache.settings import CacheWritingSettings, VisualMethod

__all__ = [
    "Box",
    "StepFingerprint",
    "VisualCheck",
    "check_step_representation",
    "compute_hash",
    "compute_step_representation",
    "crop_region",
    "decode_screenshot",
    "find_recent_screenshot",
    "find_recent_screenshot_block",
    "hamming_distance",
    "region_box",
    "region_distance",
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
    detail = None
    if settings.visual_validation_detail_region_size is not None:
        detail = DetailCheckConfig(
            hash_size=settings.visual_validation_detail_hash_size,
            region_size=settings.visual_validation_detail_region_size,
            threshold=settings.visual_validation_detail_threshold,
        )
    return VisualValidationConfig(
        method=settings.visual_verification_method.value,
        hash_size=settings.hash_size,
        region_size=settings.visual_validation_region_size,
        threshold=settings.visual_validation_threshold,
        shift_tolerance=settings.visual_validation_shift_tolerance,
        detail=detail,
    )


def _anchor(step: ToolUseBlockParam, pointer: Point | None) -> Point | None:
    action = parse_action(step)
    if action is not None and action.point is not None:
        return action.point
    return pointer


@dataclass(frozen=True)
class StepFingerprint:
    """What recording stores for a step: the main region's hash and the detail hash."""

    region: str
    """Hex hash of the main region (``ToolUseBlockParam.visual_representation``)."""
    detail: str | None = None
    """Hex hash of the detail region (``ToolUseBlockParam.visual_detail``), if configured."""

    @classmethod
    def of(cls, step: ToolUseBlockParam) -> StepFingerprint | None:
        """The fingerprint stored on ``step``, or ``None`` when it has none."""
        if step.visual_representation is None:
            return None
        return cls(step.visual_representation, step.visual_detail)


def compute_step_representation(
    image: Image.Image,
    step: ToolUseBlockParam,
    config: VisualValidationConfig,
    *,
    pointer: Point | None = None,
) -> StepFingerprint | None:
    """The fingerprint recording stores for ``step``, from the screen before it.

    The regions are centred on the step's coordinate; for an action without one (typing, a
    key press) on ``pointer``, the pointer's last known position; failing both, the whole
    screen (then the detail hash is left out: it would only repeat the main one). Returns
    ``None`` when the point lies outside the image.
    """
    anchor = _anchor(step, pointer)
    box = region_box(image.size, anchor, config.region_size)
    if box is None:
        return None
    detail = None
    if config.detail is not None and anchor is not None:
        detail_box = region_box(image.size, anchor, config.detail.region_size)
        assert detail_box is not None  # the anchor is inside: checked above
        detail = compute_hash(image.crop(detail_box), config.method, config.detail.hash_size)
    return StepFingerprint(compute_hash(image.crop(box), config.method, config.hash_size), detail)


@dataclass(frozen=True)
class VisualCheck:
    """The outcome of checking one step's regions against its stored fingerprint."""

    matched: bool
    """True when every distance is within its threshold."""
    distance: int | None
    """Hamming distance of the main hash in bits; ``None`` when the point lies outside the
    screen."""
    threshold: int
    """The main hash's threshold applied."""
    method: str
    """Hash method."""
    hash_size: int
    """Hash side."""
    region_size: int
    """Region side in pixels."""
    box: Box | None
    """The region compared, or ``None``."""
    shift_tolerance: int = 0
    """Pixels the regions were allowed to move each way."""
    detail_distance: int | None = None
    """Hamming distance of the detail hash; ``None`` when the step has none."""
    detail_threshold: int | None = None
    """The detail hash's threshold applied, when there is one."""
    detail_hash_size: int | None = None
    """Side of the detail hash, when there is one."""
    detail_region_size: int | None = None
    """Side of the detail region in pixels, when there is one."""

    def describe(self) -> str:
        """One line for logs and messages: set-up, distances vs thresholds."""
        setup = (
            f"{self.method}, {self.hash_size}x{self.hash_size} hash, {self.region_size} px region"
        )
        if self.shift_tolerance:
            setup += f" ±{self.shift_tolerance} px"
        if self.distance is None:
            return f"{setup}: the action point is outside the current screen"
        relation = "<=" if self.distance <= self.threshold else ">"
        text = f"{setup}: distance {self.distance} {relation} threshold {self.threshold}"
        if self.detail_distance is not None and self.detail_threshold is not None:
            relation = "<=" if self.detail_distance <= self.detail_threshold else ">"
            size = self.detail_hash_size
            text += (
                f"; detail ({size}x{size} hash, {self.detail_region_size} px): "
                f"distance {self.detail_distance} {relation} threshold {self.detail_threshold}"
            )
        return text


def check_step_representation(
    image: Image.Image,
    step: ToolUseBlockParam,
    stored: StepFingerprint,
    config: VisualValidationConfig,
    *,
    threshold: int | None = None,
    detail_threshold: int | None = None,
    pointer: Point | None = None,
) -> VisualCheck:
    """Decide whether the screen in ``image`` still matches ``stored`` around ``step``'s point.

    ``threshold`` and ``detail_threshold`` override the config's. A distance equal to its
    threshold matches; the step matches when both hashes do (the detail hash is checked when
    both the config and ``stored`` have one). With ``config.shift_tolerance`` each region is
    also tried moved by up to that many pixels each way, and its smallest distance counts.

    Raises:
        InvalidHashError: a stored hash is malformed or of another hash size.
    """
    limit = config.threshold if threshold is None else threshold
    anchor = _anchor(step, pointer)
    box = region_box(image.size, anchor, config.region_size)
    detail = config.detail if stored.detail is not None and anchor is not None else None
    detail_limit = None
    if detail is not None:
        detail_limit = detail.threshold if detail_threshold is None else detail_threshold
    distance: int | None = None
    detail_distance: int | None = None
    if box is None:  # nothing to compare; still reject malformed stored hashes
        hamming_distance(stored.region, stored.region)
        if stored.detail is not None:
            hamming_distance(stored.detail, stored.detail)
    else:
        distance = region_distance(
            image,
            box,
            stored.region,
            config.method,
            config.hash_size,
            shift_tolerance=config.shift_tolerance,
        )
        if detail is not None and stored.detail is not None:
            detail_box = region_box(image.size, anchor, detail.region_size)
            assert detail_box is not None  # the anchor is inside: the main box exists
            detail_distance = region_distance(
                image,
                detail_box,
                stored.detail,
                config.method,
                detail.hash_size,
                shift_tolerance=config.shift_tolerance,
            )
    matched = distance is not None and distance <= limit
    if detail_distance is not None and detail_limit is not None:
        matched = matched and detail_distance <= detail_limit
    return VisualCheck(
        matched=matched,
        distance=distance,
        threshold=limit,
        method=config.method,
        hash_size=config.hash_size,
        region_size=config.region_size,
        box=box,
        shift_tolerance=config.shift_tolerance,
        detail_distance=detail_distance,
        detail_threshold=detail_limit,
        detail_hash_size=detail.hash_size if detail is not None else None,
        detail_region_size=detail.region_size if detail is not None else None,
    )


def region_distance(
    image: Image.Image, box: Box, stored: str, method: str, hash_size: int, *, shift_tolerance: int
) -> int:
    """The smallest Hamming distance between ``stored`` and the hash of ``box`` on ``image``,
    ``box`` moved by up to ``shift_tolerance`` px each way (:func:`shifted_boxes`).

    Raises:
        InvalidHashError: ``stored`` is malformed or of another hash size.
    """
    best: int | None = None
    for moved in shifted_boxes(box, shift_tolerance):
        found = hamming_distance(stored, compute_hash(crop_region(image, moved), method, hash_size))
        if best is None or found < best:
            best = found
        if best == 0:
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
