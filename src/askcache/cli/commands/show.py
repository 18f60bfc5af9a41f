"""``askcache show NAME``: one cache file step by step (NAME with or without ``.json``)."""

from __future__ import annotations

import argparse

from askcache.cachefile.blind_spots import blind_spots
from askcache.cachefile.format import CacheFile, VisualValidationConfig
from askcache.cli.commands.common import (
    EXIT_OK,
    describe_profiles,
    emit_json,
    open_run_ledger,
    open_storage,
    resolve_name,
)
from askcache.foundation.actions import ACTING_ACTIONS, parse_action
from askcache.foundation.messages import ToolUseBlockParam
from askcache.storage.cache_storage import load_cache_file
from askcache.storage.ledger import RunRecord, TrajectorySummary

__all__ = ["add_show_command", "describe_validation", "run_show"]


def add_show_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """Register ``show``."""
    parser = commands.add_parser(
        "show",
        parents=parents,
        help="show one cache file step by step",
        description="Show a cache file: goal, screen size, what the recording cost, the "
        "validation set-up and what it cannot see, recent replays and every step with its "
        "fingerprint.",
    )
    parser.add_argument("name", help="cache file name, with or without .json")
    parser.set_defaults(run=run_show)


def describe_validation(v: VisualValidationConfig) -> str:
    """The validation set-up in one line: method, hash, region, shift, thresholds, detail
    hash, the hash for other pixel densities, tone and whole-target checks."""
    shift = f" ±{v.shift_tolerance} px" if v.shift_tolerance else ""
    detail = ""
    for label, d in (("detail", v.detail), ("for other pixel densities", v.other_density)):
        if d is None:
            continue
        blur = f", blur {d.blur:g}" if d.blur else ""
        floor = f", noise floor {d.noise_floor:g}" if d.noise_floor else ""
        detail += (
            f"; {label} {d.hash_size}x{d.hash_size} hash, {d.region_size} px region{blur}, "
            f"threshold {d.threshold}{floor}"
        )
    if v.tone is not None:
        detail += (
            f"; tone: brightness {v.tone.mean_tolerance:.0%}, "
            f"contrast {v.tone.contrast_tolerance:.0%}"
        )
    if v.target is not None:
        detail += f"; whole target: {v.target.columns} columns, threshold {v.target.threshold}"
    main_floor = f", noise floor {v.noise_floor:g}" if v.noise_floor else ""
    return (
        f"{v.method}, {v.hash_size}x{v.hash_size} hash, "
        f"{v.region_size} px region{shift}, threshold {v.threshold}{main_floor}{detail}"
    )


def _lines(
    name: str, cache_file: CacheFile, summary: TrajectorySummary | None, runs: list[RunRecord]
) -> list[str]:
    meta = cache_file.metadata
    lines = [
        f"{name}: {meta.goal!r}",
        f"  recorded {meta.created_at:%Y-%m-%d %H:%M} at {meta.coordinate_space or 'unknown size'}",
    ]
    lines.append(f"  {describe_profiles(cache_file)}")
    rec = meta.recording
    lines.append(
        f"  recording cost: {rec.model_calls} model calls, {rec.usage.total_tokens:,} tokens"
    )
    if meta.visual_validation:
        lines.append(f"  validation: {describe_validation(meta.visual_validation)}")
    lines += [f"  cannot see: {gap}" for gap in blind_spots(meta.visual_validation)]
    if not meta.is_valid:
        lines.append(f"  INVALID: {meta.invalidation_reason or 'no reason given'}")
    started, done = (0, 0) if summary is None else (summary.runs, summary.completed)
    lines.append(f"  replays (run ledger): {started} started, {done} completed")
    for run in [r for r in runs if r.status != "completed"][-3:]:
        when = f"{run.started_at:%Y-%m-%d %H:%M}"
        lines.append(f"    {run.status} at step {run.stopped_at_step} ({when}): {run.reason}")
    loosened = [r for r in runs if r.loosened]
    if loosened:
        last = loosened[-1]
        lines.append(
            f"  checks loosened in {len(loosened)} of {len(runs)} replays (the last, "
            f"{last.started_at:%Y-%m-%d %H:%M}: {'; '.join(last.loosened)})"
        )
    deciders = runs[-1].step_deciders if runs else {}
    lines += _step_lines(cache_file.trajectory, deciders)
    for key, learned in sorted(cache_file.profiles.items()):
        lines.append(
            f"  screen profile {key}, learned {learned.learned_at:%Y-%m-%d %H:%M} "
            f"({learned.coordinate_space} screenshots):"
        )
        lines += _step_lines(learned.trajectory)
    return lines


def _element_words(step: ToolUseBlockParam) -> str:
    """``; element push button 'Save', label 'Save'`` (empty: none recorded)."""
    element = step.element
    if element is None:
        return ""
    words = []
    if element.tree is not None:
        words.append(f"element {element.tree.describe()}")
    if element.label is not None:
        words.append(f"label {element.label!r}")
    if element.look is not None and element.tree is None and element.label is None:
        words.append("element look")
    return f"; {', '.join(words)}" if words else ""


def _step_lines(
    steps: list[ToolUseBlockParam], deciders: dict[int, str] | None = None
) -> list[str]:
    """One line per step; ``deciders``: what decided each step in the latest replay."""
    lines = []
    for index, step in enumerate(steps):
        fingerprint = step.visual_representation or "-"
        if step.visual_detail:
            fingerprint += f" + {step.visual_detail[:16]}..."
        action = parse_action(step)
        if step.visual_representation is None and action and action.name in ACTING_ACTIONS:
            fingerprint = "UNCHECKED: acts without a fingerprint"
        effect = ""
        if step.effect:
            effect = f", effect on {len(step.effect.tiles)} tiles"
            if step.effect.elsewhere:
                effect += f" and {len(step.effect.elsewhere)} places away from the point"
        decided = (deciders or {}).get(index)
        last = f"; last replay decided by {decided}" if decided else ""
        lines.append(
            f"  {index:>3}  {step.name:<10} {step.input}  "
            f"[{fingerprint}{effect}{_element_words(step)}{last}]"
        )
    return lines


def run_show(args: argparse.Namespace) -> int:
    """Run ``show``."""
    storage = open_storage(args.cache_dir)
    name = resolve_name(storage, args.name)
    cache_file = load_cache_file(storage, name)
    with open_run_ledger(args, storage) as ledger:
        summary = ledger.summary(name)
        runs = [r for r in ledger.records(name) if r.event == "replay"]
    if args.json:
        emit_json(
            {
                "name": name,
                **cache_file.model_dump(mode="json"),
                "cannot_see": blind_spots(cache_file.metadata.visual_validation),
                "replays": [r.model_dump(mode="json") for r in runs],
            }
        )
    else:
        print("\n".join(_lines(name, cache_file, summary, runs)))
    return EXIT_OK
