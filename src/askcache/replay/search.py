"""Search: where a step's region is now, when it moved and there is no window to anchor to.

A step whose main region no longer matches at its recorded point, and whose window is not
known (none recorded, the screen cannot list windows, none or two candidates found), may be
looked for near the point. No pixels are stored, only hashes, so the search hashes the
screen at candidate places and compares:

1. **coarse**: the screen within
:attr:`~askcache.foundation.settings.CacheExecutionSettings.search_radius`
   pixels of the point (each way) is brought to the hash's own scale once, and the main
   region's pHash is computed at every position of that scale (one DCT over the whole area:
   a position every ``region_size / (4 * hash_size)`` pixels, 3.1 px by default);
2. **places**: the positions within :data:`COARSE_SLACK` bits of the best are grouped into
   places (positions closer than half a region are one place); more than :data:`MAX_PLACES`
   places: the screen repeats the region (a keypad, a list), no match;
3. **fine**: at each place the exact hash, every pixel within :data:`REFINE` pixels;
4. **unique**: the step's full check (fingerprint, tone, target, the area it changed, with
   the thresholds of the replay's check policy, ``plan.policy``) runs at every place; a
   place is used only when it is the one place that passes, and every other place, the
   recorded point included, is clearly another element: its main hash
   :data:`SEARCH_MARGIN` bits or its detail hash :data:`DETAIL_MARGIN` bits beyond the
   threshold (a near miss elsewhere means the screen holds look-alikes, a near miss at the
   recorded point that the element itself changed there: no match).

The search never loosens a check: it decides only where the full check runs. It runs once per
step, after the wait, on the settled screen; its cost is bounded by the radius (the coarse
pass hashes a fixed number of positions, the fine pass at most :data:`MAX_PLACES` times
``(2 * REFINE + 1) ** 2``). Other hash methods than pHash are not searched.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from PIL import Image

from askcache.cachefile.format import DetailCheckConfig
from askcache.fingerprint.step import StepFingerprint
from askcache.foundation.actions import ACTING_ACTIONS, Action
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.screen.hashing import hash_bits, region_box, region_distance
from askcache.replay.anchor import window_found
from askcache.replay.check import Checked, Refused, check
from askcache.replay.plan import Anchor, Plan
from askcache.replay.screens import Screen

__all__ = ["COARSE_SLACK", "DETAIL_MARGIN", "MAX_PLACES", "REFINE", "SEARCH_MARGIN", "search"]

logger = logging.getLogger(__name__)

COARSE_SLACK = 6
"""Bits a coarse position may lie above the best one and still be refined as a place (the
coarse hash is taken up to half a coarse step off the element)."""
MAX_PLACES = 8
"""More places than this near the best match: the region repeats, no match."""
REFINE = 3
"""Pixels each way around a place at which the exact hash is computed."""
SEARCH_MARGIN = 8
"""Bits beyond its threshold the main hash of every other place must lie (or its detail
hash, :data:`DETAIL_MARGIN`)."""
DETAIL_MARGIN = 14
"""Bits beyond its threshold the detail hash of another place may lie instead (the label
differs clearly)."""


@dataclass(frozen=True)
class _Region:
    """What is looked for: the recorded main hash, the region's side, the hash's side, the
    noise floor and the recorded weak bits (as the check uses them)."""

    stored: str
    side: int
    hash_size: int
    noise_floor: float
    weak: str | None
    detail: tuple[str, DetailCheckConfig, str | None] | None
    """The detail hash, its set-up and its weak bits: which of the positions where the main
    hash matches is the exact one (a few pixels off, the effect's tiles would not line up)."""


@dataclass(frozen=True)
class _Place:
    offset: tuple[int, int]
    distance: int


def search(
    plan: Plan, index: int, step: ToolUseBlockParam, action: Action | None, screen: Screen
) -> Checked | None:
    """Step ``index`` checked where its region moved, when the search finds one place that
    passes the full check (see the module docstring); ``None`` otherwise."""
    config = plan.file.metadata.visual_validation
    radius = plan.settings.search_radius
    stored = step.visual_representation
    if (
        radius == 0
        or config is None
        or config.method != "phash"
        or stored is None
        or action is None
        or action.name not in ACTING_ACTIONS
        or plan.policy.skip_visual_validation
    ):
        return None
    point = action.point if action.point is not None else plan.anchors[index]
    if point is None or window_found(plan, step, screen):
        return None
    fingerprint = StepFingerprint.of(step)
    weak, detail_weak = fingerprint.weak_parts() if fingerprint is not None else (None, None)
    detail = None
    if config.detail is not None and step.visual_detail is not None:
        detail = (step.visual_detail, config.detail, detail_weak)
    target = _Region(stored, config.region_size, config.hash_size, config.noise_floor, weak, detail)
    places = _places(screen.recorded, point, target, radius)
    here = check(plan, index, step, action, screen, keep_view=False)  # the recorded point
    outcomes = [(_Place((0, 0), -1), here)] + [
        (place, check(plan, index, step, action, screen, anchor=_anchor(place), keep_view=False))
        for place in places
        if place.offset != (0, 0)
    ]
    passing = [place for place, outcome in outcomes if isinstance(outcome, Checked)]
    if len(passing) != 1:
        if passing:
            logger.info("step %d: its region passes the check at %d places", index, len(passing))
        return None
    if not all(_clearly_other(outcome) for _, outcome in outcomes if isinstance(outcome, Refused)):
        logger.info("step %d: its region is found at more than one place", index)
        return None
    found = check(plan, index, step, action, screen, anchor=_anchor(passing[0]))
    return found if isinstance(found, Checked) and found.record.validated else None


def _anchor(place: _Place) -> Anchor:
    return Anchor(place.offset, None, "search")


def _clearly_other(outcome: Refused) -> bool:
    """True when a place the check refused is clearly not the step's: its main or its detail
    hash is beyond its threshold by the margin (not a near miss of the same element)."""
    record = outcome.record
    if record is None:
        return True
    main = record.distance is None or (
        record.threshold is not None and record.distance >= record.threshold + SEARCH_MARGIN
    )
    detail = (
        record.detail_distance is not None
        and record.detail_threshold is not None
        and record.detail_distance >= record.detail_threshold + DETAIL_MARGIN
    )
    return main or detail


def _places(
    image: Image.Image, point: tuple[int, int], target: _Region, radius: int
) -> list[_Place]:
    """The candidate places of the region (offsets from ``point``) with their exact
    distances; empty when there are too many."""
    coarse = _coarse(image, point, target, radius)
    if not coarse:
        return []
    best = min(distance for _, distance in coarse)
    near = sorted((d, o) for o, d in coarse if d <= best + COARSE_SLACK)
    centres: list[tuple[int, int]] = []
    for _, offset in near:
        if all(
            max(abs(offset[0] - c[0]), abs(offset[1] - c[1])) >= target.side // 2 for c in centres
        ):
            centres.append(offset)
            if len(centres) > MAX_PLACES:
                return []
    return [_settle(image, point, target, c) for c in centres]


def _settle(
    image: Image.Image, point: tuple[int, int], target: _Region, around: tuple[int, int]
) -> _Place:
    """:func:`_refine` around ``around``, again around its answer while that lies on the
    edge of the pixels looked at (a coarse position can be further off than :data:`REFINE`)."""
    place = _refine(image, point, target, around)
    for _ in range(4):
        if max(abs(place.offset[0] - around[0]), abs(place.offset[1] - around[1])) < REFINE:
            break
        around = place.offset
        place = _refine(image, point, target, around)
    return place


def _coarse(
    image: Image.Image, point: tuple[int, int], target: _Region, radius: int
) -> list[tuple[tuple[int, int], int]]:
    """Per coarse position within ``radius``: the offset of its centre from ``point`` and the
    Hamming distance of its (approximate) pHash from the recorded one."""
    region, hash_size = target.side, target.hash_size
    half = region // 2
    left = max(0, point[0] - radius - half)
    top = max(0, point[1] - radius - half)
    right = min(image.width, point[0] + radius - half + region)
    bottom = min(image.height, point[1] + radius - half + region)
    if right - left < region or bottom - top < region:
        return []
    side = 4 * hash_size
    step = region / side
    area = image.convert("L").crop((left, top, right, bottom))
    small = area.resize(
        (max(side, round(area.width / step)), max(side, round(area.height / step))),
        Image.Resampling.LANCZOS,
    )
    pixels = np.asarray(small, dtype=np.float64)
    basis = _dct_rows(hash_size, side)
    rows = np.tensordot(sliding_window_view(pixels, side, axis=0), basis, axes=([-1], [1]))
    low = np.tensordot(sliding_window_view(rows, side, axis=1), basis, axes=([-1], [1]))
    # low[y, x, k, l]: vertical frequency k, horizontal l, as imagehash's phash orders them
    flat = low.reshape(low.shape[0], low.shape[1], hash_size * hash_size)
    flat -= np.median(flat, axis=-1, keepdims=True)
    size = hash_size * hash_size
    differs = (flat > 0) != hash_bits(target.stored, size)
    if target.noise_floor > 0 and target.weak is not None:  # as the check forgives them
        differs &= ~((np.abs(flat) <= target.noise_floor) & hash_bits(target.weak, size))
    distances = differs.sum(axis=-1)
    ys, xs = np.indices(distances.shape)
    dx = np.round(left + xs * step).astype(int) + half - point[0]
    dy = np.round(top + ys * step).astype(int) + half - point[1]
    inside = np.maximum(np.abs(dx), np.abs(dy)) <= radius
    return [
        ((int(x), int(y)), int(d))
        for x, y, d in zip(dx[inside], dy[inside], distances[inside], strict=True)
    ]


def _refine(
    image: Image.Image, point: tuple[int, int], target: _Region, around: tuple[int, int]
) -> _Place:
    """The best offset within :data:`REFINE` pixels of ``around``: the smallest main
    distance, and among those within 2 bits of it the smallest detail distance."""
    found = []
    for dy in range(-REFINE, REFINE + 1):
        for dx in range(-REFINE, REFINE + 1):
            offset = (around[0] + dx, around[1] + dy)
            distance = _distance(image, point, offset, target)
            if distance is not None:
                found.append(_Place(offset, distance))
    if not found:
        return _Place(around, target.hash_size * target.hash_size + 1)
    best = min(place.distance for place in found)
    close = [place for place in found if place.distance <= best + 2]
    if target.detail is None:
        return _centre([p for p in close if p.distance == best])

    def detail_distance(place: _Place) -> int:
        value = _distance(image, point, place.offset, target, detail=True)
        return value if value is not None else 1 << 16

    ranked = [(detail_distance(p), p.distance, p) for p in close]
    lowest = min((d, m) for d, m, _ in ranked)
    return _centre([p for d, m, p in ranked if (d, m) == lowest])


def _centre(tied: list[_Place]) -> _Place:
    """The middle of the offsets that hash alike (a hash forgives a pixel or two each way
    alike, so the true offset lies in the middle of them)."""
    xs = sorted(p.offset[0] for p in tied)
    ys = sorted(p.offset[1] for p in tied)
    middle = (xs[len(xs) // 2], ys[len(ys) // 2])
    return min(tied, key=lambda p: abs(p.offset[0] - middle[0]) + abs(p.offset[1] - middle[1]))


def _distance(
    image: Image.Image,
    point: tuple[int, int],
    offset: tuple[int, int],
    target: _Region,
    *,
    detail: bool = False,
) -> int | None:
    """The distance of the main hash (or the detail hash) at ``offset``; ``None`` when its
    region does not lie wholly on the screen."""
    centre = (point[0] + offset[0], point[1] + offset[1])
    side = target.detail[1].region_size if detail and target.detail else target.side
    box = region_box(image.size, centre, side)
    if box is None or (box[2] - box[0], box[3] - box[1]) != (side, side):
        return None
    if not detail or target.detail is None:
        return region_distance(
            image,
            box,
            target.stored,
            "phash",
            target.hash_size,
            shift_tolerance=0,
            noise_floor=target.noise_floor,
            weak=target.weak,
        )
    stored, config, weak = target.detail
    return region_distance(
        image,
        box,
        stored,
        "phash",
        config.hash_size,
        shift_tolerance=0,
        blur=config.blur,
        noise_floor=config.noise_floor,
        weak=weak,
    )


def _dct_rows(count: int, length: int) -> np.ndarray:
    """The first ``count`` rows of the (unnormalised) DCT-II of ``length`` samples."""
    n = np.arange(length)
    return np.array([2 * np.cos(np.pi * k * (2 * n + 1) / (2 * length)) for k in range(count)])
