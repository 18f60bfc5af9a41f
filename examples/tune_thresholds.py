"""Measure a trajectory's distances on your screen and suggest thresholds.

    python examples/tune_thresholds.py dark-mode.json --runs 3 [--param user=bob] [--write]

Each run replays the trajectory with validation accepting everything, so it never hands
back, and records every step's Hamming distances (the main hash's and, when the file has
one, the detail hash's). Run it only while the application is in the state the recording
started from, and reset it between runs (--reset-command). Each suggestion is the largest
distance seen plus a margin: what a healthy screen produces. With --write they are stored
in the file.
"""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Sequence

import anthropic

from askcache import (
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    LocalCacheStorage,
    VisionAgent,
    load_cache_file,
    save_cache_file,
)


def suggest_threshold(distances: Sequence[int], hash_bits: int, margin: int = 2) -> int:
    """The largest healthy distance plus ``margin``, kept below half the hash's bits."""
    return min(max(distances, default=0) + margin, hash_bits // 2 - 1)


def main(argv: Sequence[str] | None = None, client: anthropic.Anthropic | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("filename")
    parser.add_argument("--cache-dir", default=".askcache")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--reset-command", default=None, help="shell command run before each run")
    parser.add_argument("--write", action="store_true", help="store the suggestion in the file")
    parser.add_argument("--display", default=None)
    args = parser.parse_args(argv)
    storage = LocalCacheStorage(args.cache_dir)
    cache_file = load_cache_file(storage, args.filename)
    visual = cache_file.metadata.visual_validation
    if visual is None:
        print(f"{args.filename} was recorded without visual validation")
        return 1
    bits = visual.hash_size**2
    detail_bits = visual.detail.hash_size**2 if visual.detail is not None else 1
    settings = CachingSettings(
        strategy="execute",
        cache_dir=args.cache_dir,
        writing_settings=CacheWritingSettings(filename=args.filename),
        execution_settings=CacheExecutionSettings(
            delay_time_between_action=0.1,
            wait_for_settle=True,
            visual_validation_threshold=bits - 1,
            visual_validation_detail_threshold=detail_bits - 1,
            parameter_values=dict(item.split("=", 1) for item in args.param),
        ),
    )
    distances: dict[int, list[int]] = {}
    details: list[int] = []
    client = client or anthropic.Anthropic(api_key="not-needed")  # nothing hands back
    with VisionAgent(client=client, display=args.display) as agent:
        for _ in range(args.runs):
            if args.reset_command:
                subprocess.run(args.reset_command, shell=True, check=True)
            result = agent.act("tune thresholds", caching_settings=settings)
            assert result.replay is not None
            for step in result.replay.steps:
                if step.distance is not None:
                    distances.setdefault(step.step_index, []).append(step.distance)
                if step.detail_distance is not None:
                    details.append(step.detail_distance)
    setup = f"{visual.method}, {visual.hash_size}x{visual.hash_size} hash"
    print(f"{setup}, {visual.region_size} px region")
    for index, seen in sorted(distances.items()):
        print(f"  step {index:>3}: distances {seen}")
    suggestion = suggest_threshold([d for seen in distances.values() for d in seen], bits)
    print(f"recorded threshold {visual.threshold}; suggested {suggestion}")
    detail_suggestion = None
    if visual.detail is not None:
        detail_suggestion = suggest_threshold(details, detail_bits)
        print(
            f"detail distances {details}; recorded detail threshold {visual.detail.threshold}; "
            f"suggested {detail_suggestion}"
        )
    if args.write:
        fresh = load_cache_file(storage, args.filename)  # the runs updated its metadata
        stored = fresh.metadata.visual_validation
        assert stored is not None
        stored.threshold = suggestion
        if stored.detail is not None and detail_suggestion is not None:
            stored.detail.threshold = detail_suggestion
        save_cache_file(storage, args.filename, fresh)
        print(f"stored the suggestions in {args.filename}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
