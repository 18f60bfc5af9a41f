"""Per-step masks learned from repeat runs: the parts of a step's region that vary by themselves.

A clock, a counter or a caret inside a region changes between two runs of the same task on
screens that are, for the task, the same. Given the message histories of other recordings
or replays of the trajectory, :func:`learn_masks` compares each validated step's stored
fingerprint with the fingerprint of the screen before the same step in each history, and
stores what varied on the step (``ToolUseBlockParam.visual_mask``): the bits of the main
and detail hashes and the ink-map columns that differed (ignored from then on), and the
largest brightness and contrast changes seen (the step's tone tolerances are raised above
them). It returns one line per step saying what it learned and why.

Masks only ever loosen a step's check, and only where a repeat run showed variation: run
them on histories of runs whose screens were right. A run whose screen at a step differs by
more than a run of the same screen plausibly varies is not learned from for that step, and
the step's line says why (fail closed: a careless run on a wrong screen must not switch a
check off). The bounds: a run may differ, and a step's accumulated mask may ignore, at most
a quarter of a hash's bits (:data:`MASK_BIT_FRACTION`, the same limit ``askcache lint``
calls a loose threshold) and a quarter of the whole target's ink columns; a tone tolerance
may be raised to at most :data:`MASK_TONE_FACTOR` times the file's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from askcache.cachefile.format import CacheFile
from askcache.fingerprint.masks import MASK_MARGIN, MASK_TONE_FACTOR, StepMask, mask_bound
from askcache.fingerprint.screenshots import decode_screenshot
from askcache.fingerprint.step import StepFingerprint, compute_step_representation
from askcache.foundation.actions import action_anchors
from askcache.foundation.messages import MessageParam
from askcache.foundation.screen.target import TargetFingerprint
from askcache.foundation.screen.tone import decode_tones, tone_change
from askcache.record.recording import steps_with_screens

__all__ = [
    "LeftOutRun",
    "MaskLearning",
    "learn_mask_report",
    "learn_masks",
    "learn_masks_from_screens",
    "run_screens",
    "save_run_screens",
]


@dataclass(frozen=True)
class LeftOutRun:
    """A repeat run not learned from at one step, and why."""

    step: int
    """The step's index."""
    run: int
    """The run's number (its position among the runs given)."""
    reason: str
    """What differed, and the bound it passed."""


@dataclass(frozen=True)
class MaskLearning:
    """What :func:`learn_mask_report` learned: one line per step (and per run left out)."""

    lines: list[str]
    """What was learned and why, as :func:`learn_masks_from_screens` returns."""
    left_out: list[LeftOutRun]
    """The runs not learned from, per step, in step order."""


def _xor(first: str | None, second: str | None) -> int:
    if first is None or second is None or len(first) != len(second):
        return 0
    return int(first, 16) ^ int(second, 16)


def _in_space(image: Image.Image, cache_file: CacheFile) -> Image.Image:
    space = cache_file.metadata.coordinate_space
    if space is None or image.size == (space.width, space.height):
        return image
    return image.resize((space.width, space.height), Image.Resampling.LANCZOS)


def run_screens(history: Sequence[MessageParam]) -> dict[int, Image.Image]:
    """The screen before each step of a run (a recording's or a replay's messages), keyed by
    step index; steps with no screenshot before them are left out."""

    return {
        index: decode_screenshot(pair.before.source.data, f"the screen before step {index}")
        for index, pair in enumerate(steps_with_screens(history))
        if pair.before is not None
    }


def save_run_screens(history: Sequence[MessageParam], folder: Path) -> list[Path]:
    """Write :func:`run_screens` as ``folder/step-N.png`` (what ``askcache tune --run``
    reads) and return the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, image in run_screens(history).items():
        path = folder / f"step-{index}.png"
        image.save(path, format="PNG")
        paths.append(path)
    return paths


def learn_masks(cache_file: CacheFile, histories: Sequence[Sequence[MessageParam]]) -> list[str]:
    """Learn each validated step's mask from ``histories`` (other runs of the same
    trajectory), store it on the step, and say what was learned, one line per step.

    A history whose tool calls do not line up with the trajectory (another number of steps)
    is left out, and the first line says so.
    """

    lines: list[str] = []
    runs = []
    for number, history in enumerate(histories):
        steps = len(steps_with_screens(history))
        if steps != len(cache_file.trajectory):
            lines.append(
                f"history {number} left out: {steps} steps, the trajectory has "
                f"{len(cache_file.trajectory)}"
            )
            continue
        runs.append(run_screens(history))
    return lines + learn_masks_from_screens(cache_file, runs)


def learn_masks_from_screens(
    cache_file: CacheFile, runs: Sequence[Mapping[int, Image.Image]]
) -> list[str]:
    """:func:`learn_masks` from screens: per repeat run, the screen before each step, keyed
    by step index (steps without one are not learned from that run)."""
    return learn_mask_report(cache_file, runs).lines


def _hash_bits(value: str | None) -> int:
    return len(value) * 4 if value else 0


def learn_mask_report(
    cache_file: CacheFile, runs: Sequence[Mapping[int, Image.Image]]
) -> MaskLearning:
    """:func:`learn_masks_from_screens`, also listing the runs left out at each step.

    A run is left out at a step when its screen there differs in more bits of a hash (or ink
    columns) than :func:`mask_bound` allows, when adding what it varied would make the step's
    mask ignore more than that, or when it would raise a tone tolerance above
    :data:`MASK_TONE_FACTOR` times the file's. A step where every run was left out keeps the
    mask it had."""

    config = cache_file.metadata.visual_validation
    if config is None:
        return MaskLearning(["the trajectory has no visual validation: nothing to learn"], [])
    lines: list[str] = []
    left_out: list[LeftOutRun] = []
    anchors = list(action_anchors(cache_file.trajectory))
    tone = config.tone
    for index, step in enumerate(cache_file.trajectory):
        stored = StepFingerprint.of(step)
        if stored is None:
            continue
        main = detail = ink = 0
        brightness = contrast = 0.0
        seen = 0
        refused: list[LeftOutRun] = []
        for number, screens in enumerate(runs):
            screen = screens.get(index)
            if screen is None:
                continue
            image = _in_space(screen, cache_file)
            other = compute_step_representation(image, step, config, pointer=anchors[index])
            if other is None:
                continue
            run_main, run_detail, run_ink, columns, run_brightness, run_contrast = _change(
                stored, other
            )
            reason = _too_much(
                (
                    ("main-hash bits", run_main, main, _hash_bits(stored.region)),
                    ("detail-hash bits", run_detail, detail, _hash_bits(stored.detail)),
                    ("ink columns of the whole target", run_ink, ink, columns),
                ),
                (
                    ("brightness", run_brightness, tone.mean_tolerance if tone else None),
                    ("contrast", run_contrast, tone.contrast_tolerance if tone else None),
                ),
            )
            if reason is not None:
                refused.append(LeftOutRun(index, number, reason))
                continue
            seen += 1
            main, detail, ink = main | run_main, detail | run_detail, ink | run_ink
            brightness, contrast = max(brightness, run_brightness), max(contrast, run_contrast)
        left_out += refused
        lines += [
            f"step {index} ({step.name}): run {run.run} left out: {run.reason}: not learned from"
            for run in refused
        ]
        if not seen:
            if refused:
                kept = "its mask is as it was" if step.visual_mask else "no mask"
                lines.append(f"step {index} ({step.name}): no run learned from; {kept}")
            continue
        learned = StepMask(
            main,
            detail,
            ink,
            min(1.0, brightness + MASK_MARGIN)
            if tone and brightness + MASK_MARGIN > tone.mean_tolerance
            else 0.0,
            min(1.0, contrast + MASK_MARGIN)
            if tone and contrast + MASK_MARGIN > tone.contrast_tolerance
            else 0.0,
        )
        step.visual_mask = None if learned == StepMask() else learned.encode()
        lines.append(_explain(index, step.name, seen, learned))
    return MaskLearning(lines, left_out)


def _change(
    stored: StepFingerprint, other: StepFingerprint
) -> tuple[int, int, int, int, float, float]:
    """What differs from ``stored`` in ``other``: main and detail hash bits, ink columns, the
    ink map's column count (0: no comparable whole target), brightness and contrast."""
    main = _xor(stored.region, other.region)
    detail = _xor(stored.detail, other.detail)
    ink = columns = 0
    if stored.target is not None and other.target is not None:
        recorded, current = (
            TargetFingerprint.decode(stored.target),
            TargetFingerprint.decode(other.target),
        )
        if recorded.box == current.box:
            ink, columns = recorded.ink ^ current.ink, recorded.columns
    brightness = contrast = 0.0
    if stored.tone is not None and other.tone is not None:
        for before, after in zip(decode_tones(stored.tone), decode_tones(other.tone), strict=False):
            mean, spread = tone_change(before, after)
            brightness, contrast = max(brightness, mean), max(contrast, spread)
    return main, detail, ink, columns, brightness, contrast


def _too_much(
    masks: Sequence[tuple[str, int, int, int]], tones: Sequence[tuple[str, float, float | None]]
) -> str | None:
    """Why a run may not be learned from (``None``: it may): ``masks`` are (what, the run's
    differing bits, the bits already masked, the bit count), ``tones`` (what, the run's
    change, the file's tolerance)."""
    for what, differing, masked, bits in masks:
        bound = mask_bound(bits)
        if differing.bit_count() > bound:
            return (
                f"its screen differs in {differing.bit_count()} of {bits} {what}, more than a "
                f"run of the same screen varies (at most {bound})"
            )
        if (masked | differing).bit_count() > bound:
            return (
                f"with the runs learned from before it, the mask would ignore "
                f"{(masked | differing).bit_count()} of {bits} {what} (at most {bound})"
            )
    for what, change, tolerance in tones:
        if tolerance is None:
            continue
        cap = min(1.0, MASK_TONE_FACTOR * tolerance)
        if change + MASK_MARGIN > cap:
            return (
                f"its {what} differs by {change:.0%}, more than a run of the same screen "
                f"varies (the tolerance may be raised to at most {cap:.0%}, "
                f"{MASK_TONE_FACTOR:g}x the file's {tolerance:.0%})"
            )
    return None


def _explain(index: int, name: str, seen: int, mask: StepMask) -> str:
    if mask == StepMask():
        return f"step {index} ({name}): nothing varied in {seen} repeat run(s); no mask"
    parts = []
    if mask.main:
        parts.append(f"{mask.main.bit_count()} main-hash bits")
    if mask.detail:
        parts.append(f"{mask.detail.bit_count()} detail-hash bits")
    if mask.ink:
        parts.append(f"{mask.ink.bit_count()} ink columns of the whole target")
    if mask.brightness:
        parts.append(f"brightness (tolerance now {mask.brightness:.0%})")
    if mask.contrast:
        parts.append(f"contrast (tolerance now {mask.contrast:.0%})")
    return (
        f"step {index} ({name}): {', '.join(parts)} varied across {seen} repeat run(s) of "
        "screens that were right (a clock, a counter, a caret?): ignored from now on"
    )
