"""``askcache list``: the cache files, one line each (``--json``: one object each)."""

from __future__ import annotations

import argparse

from askcache.cli.commands.common import (
    EXIT_OK,
    describe_profiles,
    emit_json,
    location,
    open_run_ledger,
    open_storage,
)
from askcache.errors import AskCacheError
from askcache.replay import describe_cache_file
from askcache.storage.base import load_cache_file

__all__ = ["add_list_command", "run_list"]


def add_list_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """Register ``list``."""
    parser = commands.add_parser(
        "list",
        parents=parents,
        help="list cache files",
        description="List the cache files in the cache folder or URL: goal, steps, replays. "
        "Unreadable files are listed with the reason; invalidated ones only with --all.",
    )
    parser.add_argument("--all", action="store_true", help="include invalidated trajectories")
    parser.set_defaults(run=run_list)


def run_list(args: argparse.Namespace) -> int:
    """Run ``list``."""
    storage = open_storage(args.cache_dir)
    ledger = open_run_ledger(args, storage)
    rows: list[dict[str, object]] = []
    for name in storage.list_names():
        try:
            cache_file = load_cache_file(storage, name)
        except AskCacheError as exc:
            rows.append({"name": name, "readable": False, "error": str(exc)})
            if not args.json:
                print(f"- {name}: unreadable: {exc}", flush=True)
            continue
        meta = cache_file.metadata
        if not (meta.is_valid or args.all):
            continue
        summary = ledger.summary(name)
        rows.append(
            {
                "name": name,
                "readable": True,
                "goal": meta.goal,
                "steps": len(cache_file.trajectory),
                "valid": meta.is_valid,
                "parameters": sorted(cache_file.cache_parameters),
                "created_at": meta.created_at.isoformat(),
                "replays": 0 if summary is None else summary.runs,
                "completed": 0 if summary is None else summary.completed,
                "profiles": [str(cache_file.profile or "unknown"), *sorted(cache_file.profiles)],
            }
        )
        if not args.json:
            print(describe_cache_file(name, cache_file, ledger), flush=True)
            print(f"  {describe_profiles(cache_file)}", flush=True)
    ledger.close()
    if args.json:
        emit_json({"cache_dir": location(storage), "files": rows})
    elif not rows:
        print(f"no cache files in {location(storage)}")
    return EXIT_OK
