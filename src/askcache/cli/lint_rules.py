"""What is wrong, or risky, in a cache file, before a replay finds out (``askcache lint``).

:func:`lint_cache_file` looks at a parsed file; :func:`lint_stored` also reports a file that
does not parse. Each :class:`LintProblem` has a level: ``error`` (the replay will fail or
cannot be trusted) or ``warning`` (it will run, but checks less than it could).

The checks, by ``check`` name:

- ``schema``: the file does not parse or is of an unsupported version.
- ``unchecked``: no visual validation was recorded, or a step that acts (a click, typing,
  a key press) has no fingerprint, or no detail hash where the file records them: such
  steps are replayed without looking at the screen. Also a file recorded without the detail
  hash (``visual_validation_detail_region_size=None``): its checks cannot see a relabelled
  small control (:mod:`askcache.cachefile.blind_spots`, which each replay of it also names).
- ``hash``: a stored fingerprint is not hex, or not as long as the file's hash size says.
- ``parameters``: a ``{{name}}`` used in the goal or a step that the file does not declare
  (the replay cannot fill it in), or a declared parameter no step uses.
- ``threshold``: a threshold that accepts any screen (at or above the hash's bit count:
  :func:`askcache.foundation.limits.threshold_problem`, the rule every threshold is held to), or one
  above a quarter of the bits (it accepts large changes).
- ``screen``: no screen size recorded (a replay on another screen cannot be scaled), or an
  action point outside the recorded screen.
- ``mask``: a step's learned mask (``askcache tune``) ignores more than a quarter of a hash's
  bits or of its whole target's ink columns, or raises a tone tolerance above twice the file's
  (:data:`askcache.fingerprint.masks.MASK_TONE_FACTOR`): the check accepts large changes there, as a
  loose threshold does (``askcache rollback`` or re-tuning on right screens fixes it). A mask
  that does not parse is an error.
- ``invalid``: the trajectory was marked invalid and is not replayed.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from askcache.cachefile.blind_spots import blind_spots
from askcache.cachefile.format import CacheFile, VisualValidationConfig
from askcache.fingerprint.masks import MASK_TONE_FACTOR, StepMask
from askcache.foundation.actions import ACTING_ACTIONS, parse_action
from askcache.foundation.errors import (
    CacheFileCorruptError,
    InvalidHashError,
    UnsupportedCacheVersionError,
)
from askcache.foundation.limits import threshold_problem
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.parameters import placeholders_in
from askcache.foundation.screen.target import TargetFingerprint
from askcache.storage.cache_storage import CacheStorage, load_cache_file

__all__ = ["LintProblem", "lint_cache_file", "lint_stored"]

LOOSE_FRACTION = 4
"""A threshold above ``bits / LOOSE_FRACTION`` is reported as loose."""


class LintProblem(BaseModel):
    """One problem found in a cache file."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    level: Literal["error", "warning"]
    """``error``: the replay fails or cannot be trusted; ``warning``: it checks less."""
    check: Literal[
        "schema", "unchecked", "hash", "parameters", "threshold", "screen", "mask", "invalid"
    ]
    """Which check found it (see the module's documentation)."""
    message: str
    """What is wrong and what to do."""
    step: int | None = None
    """Index of the step concerned, if one is."""

    def __str__(self) -> str:
        where = f"step {self.step}: " if self.step is not None else ""
        return f"{self.level}: [{self.check}] {where}{self.message}"


def _threshold_problems(label: str, threshold: int, hash_size: int) -> list[LintProblem]:
    bits = hash_size**2
    problem = threshold_problem(threshold, hash_size)
    if problem is not None:
        return [LintProblem(level="error", check="threshold", message=f"{label} {problem}")]
    if threshold > bits // LOOSE_FRACTION:
        return [
            LintProblem(
                level="warning",
                check="threshold",
                message=f"{label} {threshold} is loose: more than a quarter of the {bits} bits "
                "may differ and the step still counts as unchanged",
            )
        ]
    return []


def _mask_problems(
    step: ToolUseBlockParam, visual: VisualValidationConfig, index: int
) -> list[LintProblem]:
    if step.visual_mask is None:
        return []
    try:
        mask = StepMask.decode(step.visual_mask)
    except InvalidHashError as exc:
        return [LintProblem(level="error", check="mask", step=index, message=str(exc))]
    wide = []
    hashes = [("main", mask.main, visual.hash_size**2)]
    if visual.detail is not None:
        hashes.append(("detail", mask.detail, visual.detail.hash_size**2))
    if step.visual_target is not None:
        try:
            columns = TargetFingerprint.decode(step.visual_target).columns
        except InvalidHashError:
            columns = 0
        if columns:
            hashes.append(("whole-target ink", mask.ink, columns))
    for label, bits, count in hashes:
        if bits.bit_count() > count // LOOSE_FRACTION:
            unit = "columns" if label == "whole-target ink" else "hash bits"
            wide.append(f"{bits.bit_count()} of {count} {label} {unit}")
    tone = visual.tone
    for label, raised, tolerance in (
        ("brightness", mask.brightness, tone.mean_tolerance if tone else None),
        ("contrast", mask.contrast, tone.contrast_tolerance if tone else None),
    ):
        if tolerance is not None and raised > MASK_TONE_FACTOR * tolerance:
            wide.append(f"{label} tolerance {raised:.0%} (the file's {tolerance:.0%})")
    if not wide:
        return []
    return [
        LintProblem(
            level="warning",
            check="mask",
            step=index,
            message=f"its mask ignores {', '.join(wide)}: the check accepts large changes "
            "there (learned from a wrong screen? askcache rollback, or tune again on runs "
            "whose screens were right)",
        )
    ]


def _hash_problem(value: str, hash_size: int, what: str, step: int) -> LintProblem | None:
    digits = -(-(hash_size**2) // 4)
    try:
        int(value, 16)
    except ValueError:
        return LintProblem(
            level="error", check="hash", step=step, message=f"{what} {value!r} is not hex"
        )
    if len(value) != digits:
        return LintProblem(
            level="error",
            check="hash",
            step=step,
            message=f"{what} has {len(value)} hex digits; a {hash_size}x{hash_size} hash has "
            f"{digits}",
        )
    return None


def _check_problems(visual: VisualValidationConfig) -> list[LintProblem]:
    """Thresholds that accept too much, and a hash for other pixel densities that sees less
    than the detail hash it replaces."""
    problems = _threshold_problems("threshold", visual.threshold, visual.hash_size)
    if visual.detail is not None:
        problems += _threshold_problems(
            "detail threshold", visual.detail.threshold, visual.detail.hash_size
        )
    if visual.other_density is None:
        return problems
    problems += _threshold_problems(
        "threshold for other pixel densities",
        visual.other_density.threshold,
        visual.other_density.hash_size,
    )
    other, detail = visual.other_density.region_size, visual.detail
    if detail is not None and other < detail.region_size:
        problems.append(
            LintProblem(
                level="warning",
                check="threshold",
                message=f"the hash for other pixel densities covers {other} px, less than "
                f"the detail hash it replaces there ({detail.region_size} px): on such "
                "screens a change beside the point is seen by the main hash alone",
            )
        )
    return problems


def lint_cache_file(cache_file: CacheFile) -> list[LintProblem]:
    """Every problem of a parsed cache file, errors first, then in step order."""
    meta = cache_file.metadata
    problems: list[LintProblem] = []
    if not meta.is_valid:
        reason = f": {meta.invalidation_reason}" if meta.invalidation_reason else ""
        problems.append(
            LintProblem(
                level="warning", check="invalid", message=f"marked invalid, not replayed{reason}"
            )
        )
    visual = meta.visual_validation
    if visual is None:
        problems.append(
            LintProblem(
                level="warning",
                check="unchecked",
                message="no visual validation recorded: a replay hands back before the first "
                "step that acts, unless unchecked_steps='run' replays every step unchecked "
                "(record with visual_verification_method other than 'none')",
            )
        )
    else:
        problems += _check_problems(visual)
    for gap in blind_spots(visual):
        problems.append(LintProblem(level="warning", check="unchecked", message=gap))
    used = placeholders_in([meta.goal, *(step.input for step in cache_file.trajectory)])
    declared = set(cache_file.cache_parameters)
    for name in sorted(used - declared):
        problems.append(
            LintProblem(
                level="error",
                check="parameters",
                message=f"{{{{{name}}}}} is used but not declared in cache_parameters: a "
                "replay cannot fill it in",
            )
        )
    for name in sorted(declared - used):
        problems.append(
            LintProblem(
                level="warning",
                check="parameters",
                message=f"parameter {name!r} is declared but no step or goal uses it",
            )
        )
    space = meta.coordinate_space
    has_points = False
    for index, step in enumerate(cache_file.trajectory):
        action = parse_action(step)
        if action is None:
            continue
        if action.point is not None:
            has_points = True
            x, y = action.point
            if space is not None and not (0 <= x < space.width and 0 <= y < space.height):
                problems.append(
                    LintProblem(
                        level="error",
                        check="screen",
                        step=index,
                        message=f"{action.name} at ({x}, {y}) lies outside the recorded "
                        f"{space} screen",
                    )
                )
        acts = action.name in ACTING_ACTIONS
        if visual is None:
            continue
        if step.visual_representation is None:
            if acts:
                problems.append(
                    LintProblem(
                        level="warning",
                        check="unchecked",
                        step=index,
                        message=f"{action.name} has no fingerprint: a replay hands back "
                        "before it (or runs it unchecked with unchecked_steps='run')",
                    )
                )
            continue
        found = _hash_problem(step.visual_representation, visual.hash_size, "fingerprint", index)
        if found:
            problems.append(found)
        problems += _mask_problems(step, visual, index)
        if visual.detail is not None:
            if step.visual_detail is None:
                if acts:
                    problems.append(
                        LintProblem(
                            level="warning",
                            check="unchecked",
                            step=index,
                            message=f"{action.name} has no detail hash: a relabelled element "
                            "goes unnoticed",
                        )
                    )
            else:
                found = _hash_problem(
                    step.visual_detail, visual.detail.hash_size, "detail hash", index
                )
                if found:
                    problems.append(found)
    if space is None and has_points:
        problems.append(
            LintProblem(
                level="warning",
                check="screen",
                message="no screen size recorded: a replay on a screen of another size "
                "cannot scale the coordinates",
            )
        )
    return sorted(
        problems, key=lambda p: (p.level != "error", p.step if p.step is not None else -1)
    )


def lint_stored(storage: CacheStorage, name: str) -> list[LintProblem]:
    """:func:`lint_cache_file` of a stored file. A file the strict loader refuses is a
    ``schema`` error (the loader's first problem); when its structure still reads, every
    other problem is listed too, so one lint shows all there is to fix. A missing file
    raises :class:`~askcache.foundation.errors.CacheNotFoundError`."""
    try:
        return lint_cache_file(load_cache_file(storage, name))
    except (CacheFileCorruptError, UnsupportedCacheVersionError) as exc:
        refused = LintProblem(level="error", check="schema", message=str(exc))
    try:
        lenient = CacheFile.model_validate(json.loads(storage.read(name)))
    except (ValueError, ValidationError):
        return [refused]
    return [refused, *lint_cache_file(lenient)]
