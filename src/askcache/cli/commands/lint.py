"""``askcache lint [NAME ...]``: problems of cache files, before a replay finds them."""

from __future__ import annotations

import argparse

from askcache.cli.commands.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    emit_json,
    location,
    open_storage,
    resolve_name,
)
from askcache.cli.lint_rules import lint_stored

__all__ = ["add_lint_command", "run_lint"]


def add_lint_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """Register ``lint``."""
    parser = commands.add_parser(
        "lint",
        parents=parents,
        help="check cache files for problems",
        description="Check cache files (all of them without NAME): the schema, steps replayed "
        "unchecked, malformed fingerprints, parameters used but not declared, thresholds "
        "that accept anything, a missing screen size or points outside it. Exit code 1 "
        "when an error is found (or a warning, with --strict).",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="cache files (default: all)")
    parser.add_argument("--strict", action="store_true", help="warnings also fail (exit 1)")
    parser.set_defaults(run=run_lint)


def run_lint(args: argparse.Namespace) -> int:
    """Run ``lint``."""
    storage = open_storage(args.cache_dir)
    names = [resolve_name(storage, n) for n in args.names] or storage.list_names()
    report = {name: lint_stored(storage, name) for name in names}
    failing = {"error", "warning"} if args.strict else {"error"}
    failed = any(p.level in failing for problems in report.values() for p in problems)
    if args.json:
        emit_json(
            {
                "cache_dir": location(storage),
                "files": [
                    {"name": name, "problems": [p.model_dump() for p in problems]}
                    for name, problems in report.items()
                ],
                "ok": not failed,
            }
        )
        return EXIT_FINDINGS if failed else EXIT_OK
    if not names:
        print(f"no cache files in {location(storage)}")
    for name, problems in report.items():
        if not problems:
            print(f"{name}: ok")
            continue
        print(f"{name}:")
        for problem in problems:
            print(f"  {problem}")
    errors = sum(p.level == "error" for problems in report.values() for p in problems)
    warnings = sum(p.level == "warning" for problems in report.values() for p in problems)
    print(f"{len(names)} file(s): {errors} error(s), {warnings} warning(s)")
    return EXIT_FINDINGS if failed else EXIT_OK
