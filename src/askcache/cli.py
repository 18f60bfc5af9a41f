"""The ``askcache`` command: the demo, a look at cache files, and parity checks."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from askcache.errors import AskCacheError
from askcache.storage import LocalCacheStorage, load_cache_file
from askcache.tools.caching import describe_cache_file

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from askcache.demo import format_summary, run_demo

    offline = True if args.offline else (False if args.online else None)
    outcome = run_demo(Path(args.output), offline=offline, model=args.model, screen=args.screen)
    print(format_summary(outcome))
    ok = (
        outcome.record.status == "done"
        and outcome.replay.model_calls == 0
        and outcome.changed.replay is not None
        and outcome.changed.replay.status == "handed_back"
        and outcome.changed.status == "done"
    )
    return 0 if ok else 1


def _list(args: argparse.Namespace) -> int:
    storage = LocalCacheStorage(args.cache_dir)
    names = storage.list_names()
    if not names:
        print(f"no cache files in {storage.directory}")
    for name in names:
        try:
            cache_file = load_cache_file(storage, name)
        except AskCacheError as exc:
            print(f"- {name}: unreadable: {exc}")
            continue
        if cache_file.metadata.is_valid or args.all:
            print(describe_cache_file(name, cache_file))
    return 0


def _show(args: argparse.Namespace) -> int:
    cache_file = load_cache_file(LocalCacheStorage(args.cache_dir), args.name)
    meta = cache_file.metadata
    print(f"{args.name}: {meta.goal!r}")
    print(
        f"  recorded {meta.created_at:%Y-%m-%d %H:%M} at {meta.coordinate_space or 'unknown size'}"
    )
    rec = meta.recording
    print(f"  recording cost: {rec.model_calls} model calls, {rec.usage.total_tokens:,} tokens")
    if meta.visual_validation:
        v = meta.visual_validation
        shift = f" ±{v.shift_tolerance} px" if v.shift_tolerance else ""
        detail = ""
        if v.detail is not None:
            d = v.detail
            blur = f", blur {d.blur:g}" if d.blur else ""
            detail = (
                f"; detail {d.hash_size}x{d.hash_size} hash, {d.region_size} px region{blur}, "
                f"threshold {d.threshold}"
            )
        if v.tone is not None:
            detail += (
                f"; tone: brightness {v.tone.mean_tolerance:.0%}, "
                f"contrast {v.tone.contrast_tolerance:.0%}"
            )
        if v.target is not None:
            detail += f"; whole target: {v.target.columns} columns, threshold {v.target.threshold}"
        print(
            f"  validation: {v.method}, {v.hash_size}x{v.hash_size} hash, "
            f"{v.region_size} px region{shift}, threshold {v.threshold}{detail}"
        )
    print(f"  replays: {meta.execution_attempts} started, {meta.successes} completed")
    for failure in meta.failures[-3:]:
        when = f"{failure.at:%Y-%m-%d %H:%M}"
        print(f"    stopped at step {failure.step_index} ({when}): {failure.reason}")
    for index, step in enumerate(cache_file.trajectory):
        fingerprint = step.visual_representation or "-"
        if step.visual_detail:
            fingerprint += f" + {step.visual_detail[:16]}..."
        print(f"  {index:>3}  {step.name:<10} {step.input}  [{fingerprint}]")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="askcache", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log each step")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="record, replay, change the screen, hand back")
    demo.add_argument("--output", default="askcache-demo-output", help="folder for cache files")
    who = demo.add_mutually_exclusive_group()
    who.add_argument("--online", action="store_true", help="use Claude (needs ANTHROPIC_API_KEY)")
    who.add_argument(
        "--offline", action="store_true", help="use the scripted model even with a key"
    )
    demo.add_argument(
        "--screen",
        choices=["tk", "simulated"],
        default="tk",
        help="tk: a real Tk app on $DISPLAY or a new Xvfb (default); simulated: Pillow, no X",
    )
    demo.add_argument("--model", default=None, help="model name for Claude")
    demo.set_defaults(run=_demo)
    listing = commands.add_parser("list", help="list cache files")
    listing.add_argument("--cache-dir", default=".askcache")
    listing.add_argument("--all", action="store_true", help="include invalid trajectories")
    listing.set_defaults(run=_list)
    show = commands.add_parser("show", help="show one cache file step by step")
    show.add_argument("name")
    show.add_argument("--cache-dir", default=".askcache")
    show.set_defaults(run=_show)
    from askcache.parity.command import add_parity_command

    add_parity_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``askcache`` command."""
    args = _parser().parse_args(argv)
    quiet = logging.ERROR if args.command == "demo" else logging.WARNING  # the demo reports
    logging.basicConfig(
        level=logging.INFO if args.verbose else quiet,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.run(args)
    except AskCacheError as exc:
        print(f"askcache: error: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
