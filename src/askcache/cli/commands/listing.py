"""``askcache list``: the cache files, one line each (``--json``: one object each).

Read from the cache-file index (:mod:`askcache.storage.index`: no file is opened unless its
record is missing or stale) and the run ledger's summaries (one read for every trajectory). A
read over a second shows a progress bar on a terminal (:mod:`askcache.cli.progress`)."""

from __future__ import annotations

import argparse

from askcache.cli.commands.common import (
    EXIT_OK,
    emit_json,
    location,
    open_run_ledger,
    open_storage,
)
from askcache.cli.progress import ProgressBar
from askcache.replay.tools import describe_record
from askcache.storage.index import CacheFileIndex

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
    rows: list[dict[str, object]] = []
    with (
        ProgressBar("reading the cache files and the run ledger", enabled=not args.json) as bar,
        open_run_ledger(args, storage, bar.update) as ledger,
    ):
        records = CacheFileIndex(storage).records()
        summaries = {summary.trajectory: summary for summary in ledger.summaries()}
    for record in records:
        name = record.name
        if not record.readable:
            rows.append({"name": name, "readable": False, "error": record.error})
            if not args.json:
                print(f"- {name}: unreadable: {record.error}", flush=True)
            continue
        if not (record.valid or args.all):
            continue
        summary = summaries.get(name)
        rows.append(
            {
                "name": name,
                "readable": True,
                "goal": record.goal,
                "steps": record.steps,
                "valid": record.valid,
                "parameters": record.parameters,
                "created_at": record.created_at.isoformat() if record.created_at else None,
                "replays": 0 if summary is None else summary.runs,
                "completed": 0 if summary is None else summary.completed,
                "profiles": [profile.key for profile in record.profiles],
            }
        )
        if not args.json:
            print(describe_record(record, summary), flush=True)
            described = ", ".join(profile.describe() for profile in record.profiles)
            print(f"  screen profiles: {described}", flush=True)
    if args.json:
        emit_json({"cache_dir": location(storage), "files": rows})
    elif not rows:
        print(f"no cache files in {location(storage)}")
    return EXIT_OK
