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
them on histories of runs whose screens were right.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from askcache.actions import action_anchors
from askcache.cache_file import CacheFile
from askcache.errors import InvalidHashError
from askcache.messages import MessageParam
from askcache.screenshots import decode_screenshot
from askcache.target import TargetFingerprint
from askcache.tone import decode_tones, tone_change

__all__ = [
    "MASK_MARGIN",
    "StepMask",
    "learn_masks",
    "learn_masks_from_screens",
    "run_screens",
    "save_run_screens",
]

MASK_MARGIN = 0.03
"""Added to the largest tone change seen in repeat runs to make the step's tolerance."""


@dataclass(frozen=True)
class StepMask:
    """What varied at one step across repeat runs."""

    main: int = 0
    """Bits of the main hash to ignore."""
    detail: int = 0
    """Bits of the detail hash to ignore."""
    ink: int = 0
    """Columns of the whole target's ink map to ignore."""
    brightness: float = 0.0
    """The step's brightness tolerance (0: the file's)."""
    contrast: float = 0.0
    """The step's contrast tolerance (0: the file's)."""

    def encode(self) -> str:
        """``main;detail;ink;brightness;contrast``, the masks in hex."""
        return (
            f"{self.main:x};{self.detail:x};{self.ink:x};{self.brightness:.3f};{self.contrast:.3f}"
        )

    @classmethod
    def decode(cls, text: str) -> StepMask:
        """Parse :meth:`encode`'s text.

        Raises:
            InvalidHashError: not in that shape.
        """
        try:
            main, detail, ink, brightness, contrast = text.split(";")
            mask = cls(
                int(main, 16), int(detail, 16), int(ink, 16), float(brightness), float(contrast)
            )
        except (AttributeError, TypeError, ValueError):
            raise InvalidHashError(
                f"visual mask {text!r} is not 'main;detail;ink;brightness;contrast'"
            ) from None
        if min(mask.main, mask.detail, mask.ink) < 0 or not (
            0 <= mask.brightness <= 1 and 0 <= mask.contrast <= 1
        ):
            raise InvalidHashError(f"visual mask {text!r} has a value out of range")
        return mask


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
    from askcache.recording import steps_with_screens

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
    from askcache.recording import steps_with_screens

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
    from askcache.visual import StepFingerprint, compute_step_representation

    config = cache_file.metadata.visual_validation
    if config is None:
        return ["the trajectory has no visual validation: nothing to learn"]
    lines: list[str] = []
    anchors = list(action_anchors(cache_file.trajectory))
    for index, step in enumerate(cache_file.trajectory):
        stored = StepFingerprint.of(step)
        if stored is None:
            continue
        main = detail = ink = 0
        brightness = contrast = 0.0
        seen = 0
        for screens in runs:
            screen = screens.get(index)
            if screen is None:
                continue
            image = _in_space(screen, cache_file)
            other = compute_step_representation(image, step, config, pointer=anchors[index])
            if other is None:
                continue
            seen += 1
            main |= _xor(stored.region, other.region)
            detail |= _xor(stored.detail, other.detail)
            if stored.target is not None and other.target is not None:
                recorded, current = (
                    TargetFingerprint.decode(stored.target),
                    TargetFingerprint.decode(other.target),
                )
                if recorded.box == current.box:
                    ink |= recorded.ink ^ current.ink
            if stored.tone is not None and other.tone is not None:
                for before, after in zip(
                    decode_tones(stored.tone), decode_tones(other.tone), strict=False
                ):
                    mean, spread = tone_change(before, after)
                    brightness, contrast = max(brightness, mean), max(contrast, spread)
        if not seen:
            continue
        tone = config.tone
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
    return lines


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
