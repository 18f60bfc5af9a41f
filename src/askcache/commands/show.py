"""``askcache show NAME``: one cache file step by step (NAME with or without ``.json``)."""

from __future__ import annotations

import argparse

from askcache.cache_file import CacheFile
from askcache.commands.common import EXIT_OK, emit_json, open_storage, resolve_name
from askcache.storage import load_cache_file

__all__ = ["add_show_command", "run_show"]


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
        "validation set-up, recent replays and every step with its fingerprint.",
    )
    parser.add_argument("name", help="cache file name, with or without .json")
    parser.set_defaults(run=run_show)


def _lines(name: str, cache_file: CacheFile) -> list[str]:
    meta = cache_file.metadata
    lines = [
        f"{name}: {meta.goal!r}",
        f"  recorded {meta.created_at:%Y-%m-%d %H:%M} at {meta.coordinate_space or 'unknown size'}",
    ]
    rec = meta.recording
    lines.append(
        f"  recording cost: {rec.model_calls} model calls, {rec.usage.total_tokens:,} tokens"
    )
    if meta.visual_validation:
        v = meta.visual_validation
        shift = f" ±{v.shift_tolerance} px" if v.shift_tolerance else ""
        detail = ""
        if v.detail is not None:
            d = v.detail
            detail = (
                f"; detail {d.hash_size}x{d.hash_size} hash, {d.region_size} px region, "
                f"threshold {d.threshold}"
            )
        lines.append(
            f"  validation: {v.method}, {v.hash_size}x{v.hash_size} hash, "
            f"{v.region_size} px region{shift}, threshold {v.threshold}{detail}"
        )
    lines.append(f"  replays: {meta.execution_attempts} started, {meta.successes} completed")
    for failure in meta.failures[-3:]:
        when = f"{failure.at:%Y-%m-%d %H:%M}"
        lines.append(f"    stopped at step {failure.step_index} ({when}): {failure.reason}")
    for index, step in enumerate(cache_file.trajectory):
        fingerprint = step.visual_representation or "-"
        if step.visual_detail:
            fingerprint += f" + {step.visual_detail[:16]}..."
        lines.append(f"  {index:>3}  {step.name:<10} {step.input}  [{fingerprint}]")
    return lines


def run_show(args: argparse.Namespace) -> int:
    """Run ``show``."""
    storage = open_storage(args.cache_dir)
    name = resolve_name(storage, args.name)
    cache_file = load_cache_file(storage, name)
    if args.json:
        emit_json({"name": name, **cache_file.model_dump(mode="json")})
    else:
        print("\n".join(_lines(name, cache_file)))
    return EXIT_OK
