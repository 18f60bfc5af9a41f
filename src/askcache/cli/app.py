"""The ``askcache`` command: the demo, cache files (list, show, lint, stats, report), parity.

Each subcommand is a module of :mod:`askcache.cli.commands`; this module builds the parser, turns
every user mistake into a one-line error and maps outcomes to the exit codes documented in
:mod:`askcache.cli.commands` and docs/cli.md.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import logging
import os
import re
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, cast

from askcache.cli.commands.common import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PIPE,
    EXIT_USAGE,
    add_cache_dir,
    emit_json,
    redacted_output,
)
from askcache.foundation.errors import AskCacheError, MissingApiKeyError

__all__ = ["main"]

_DESCRIPTION = """\
Record computer-use agent runs once, replay them with no model calls.

  askcache demo                  record, replay, change the screen, hand back (offline)
  askcache list                  the cache files in .askcache (or --cache-dir DIR_OR_URL)
  askcache show NAME             one cache file step by step
  askcache lint [NAME ...]       problems in cache files
  askcache stats [NAME]          replays, hit rate and savings from the run ledger
  askcache dashboard [-o PAGE | --serve]   the fleet page: charts, hot spots, heals (HTML)
  askcache replay NAME --dry-run --screenshot STEP=PNG | --display :N   check, never act
  askcache report NAME [--screenshots DIR | --live]   an HTML report of a file and its runs
  askcache tune NAME --run DIR ...   learn per-step masks from repeat runs that were right
  askcache diff NAME | accept NAME | rollback NAME   versions and healing proposals
  askcache parity SRC CANDIDATE  compare two renderings
  askcache verify SRC CANDIDATE --fix-command CMD   the auto-verify loop
  askcache sign NAME | check-signature NAME | upgrade NAME   signed files, format upgrades
  askcache sync [--list]         send heals and ledger entries kept while storage was down

Every subcommand has --help; the cache commands take --json."""

_EPILOG = """\
exit codes: 0 success; 1 a problem found (lint errors, a dry run that would stop or could
not check a step, parity FAIL or parity not reached, demo failed); 2 parity ERROR verdict
or a failed verify loop; 3 an error to fix (missing key, folder or file, unreadable or
refused file, storage unreachable); 64 bad command line; 70 internal error (report it,
with --debug); 130 interrupted; 141 output closed (askcache list | head). See
docs/cli.md."""


class UsageError(Exception):
    """A bad command line; the message is argparse's, the parser the one that failed."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        self.parser = parser
        super().__init__(message)


class _Parser(argparse.ArgumentParser):
    """argparse, raising instead of exiting with code 2 (2 is parity's ERROR verdict)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


def _demo(args: argparse.Namespace) -> int:
    from askcache.cli.demo import format_summary, run_demo

    if args.online and not os.environ.get("ANTHROPIC_API_KEY"):
        raise MissingApiKeyError("askcache demo --online", "askcache demo --offline")
    offline = True if args.offline else (False if args.online else None)
    outcome = run_demo(
        Path(args.output),
        offline=offline,
        model=args.model,
        screen=args.screen,
        progress=lambda line: print(f"askcache demo: {line}", file=sys.stderr, flush=True),
    )
    ok = (
        outcome.record.status == "done"
        and outcome.replay.model_calls == 0
        and outcome.changed.replay is not None
        and outcome.changed.replay.status == "handed_back"
        and outcome.changed.status == "done"
    )
    if args.json:
        emit_json(
            {
                "ok": ok,
                "mode": outcome.mode,
                "report": str(outcome.report_path),
                "cache_file": str(outcome.cache_path),
                "runs": [
                    {
                        "run": name,
                        "status": run.status,
                        "model_calls": run.model_calls,
                        "tokens": run.conversation.usage.total_tokens,
                        "seconds": round(seconds, 3),
                        "replay": None if run.replay is None else run.replay.status,
                    }
                    for name, run, seconds in zip(
                        ("record", "replay", "replay_changed", "replay_healed"),
                        (outcome.record, outcome.replay, outcome.changed, outcome.healed),
                        (*outcome.seconds, outcome.healed_seconds),
                        strict=True,
                    )
                    if run is not None
                ],
            }
        )
    else:
        print(format_summary(outcome))
    return EXIT_OK if ok else EXIT_FINDINGS


def _common_options(cache: bool) -> argparse.ArgumentParser:
    """Options every subcommand takes (after its name too)."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the traceback of an error",
    )
    common.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log each step"
    )
    if cache:
        common.add_argument("--json", action="store_true", help="machine-readable output on stdout")
        add_cache_dir(common)
    return common


_LEAN_COMMANDS = {"dashboard", "stats"}
"""Commands that read the ledger alone: given one of them, the parser holds that command only,
so that the command starts without importing the others (the replay, images, the cache file
model). Any other command line builds the whole parser (help, suggestions for a typo)."""


def _command_word(words: Sequence[str]) -> str | None:
    """The command the line names: its first word that is not an option (the top-level
    options take no value)."""
    return next((word for word in words if not word.startswith("-")), None)


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="askcache",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the traceback of an error",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log each step"
    )
    commands = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
    )
    plain, cached = [_common_options(cache=False)], [_common_options(cache=True)]
    if only == "dashboard":
        from askcache.cli.commands.dashboard import add_dashboard_command

        add_dashboard_command(commands, cached)
        return parser
    if only == "stats":
        from askcache.cli.commands.stats import add_stats_command

        add_stats_command(commands, cached)
        return parser
    _add_every_command(commands, plain, cached)
    return parser


def _add_every_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    plain: list[argparse.ArgumentParser],
    cached: list[argparse.ArgumentParser],
) -> None:
    from askcache.cli.commands.dashboard import add_dashboard_command
    from askcache.cli.commands.heal import add_heal_commands
    from askcache.cli.commands.lint import add_lint_command
    from askcache.cli.commands.listing import add_list_command
    from askcache.cli.commands.replay import add_replay_command
    from askcache.cli.commands.report import add_report_command
    from askcache.cli.commands.show import add_show_command
    from askcache.cli.commands.sign import add_signing_commands
    from askcache.cli.commands.stats import add_stats_command
    from askcache.cli.commands.sync import add_sync_command
    from askcache.cli.commands.tune import add_tune_command
    from askcache.parity.command import add_parity_command
    from askcache.parity.verify_command import add_verify_command

    demo = commands.add_parser(
        "demo",
        parents=plain,
        help="record, replay, change the screen, hand back",
        description="Record an agent filling in a form, replay it with no model calls, change "
        "the form and watch the replay hand back to the model. Offline (a scripted model "
        "through a local stand-in of the Messages API) unless ANTHROPIC_API_KEY is set.",
    )
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
    demo.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    demo.set_defaults(run=_demo)
    add_list_command(commands, cached)
    add_show_command(commands, cached)
    add_lint_command(commands, cached)
    add_stats_command(commands, cached)
    add_dashboard_command(commands, cached)
    add_signing_commands(commands, cached)
    add_replay_command(commands, cached)
    add_tune_command(commands, cached)
    add_report_command(commands, cached)
    add_sync_command(commands, cached)
    add_parity_command(commands)
    add_verify_command(commands)
    add_heal_commands(commands, cached)


_INVALID_CHOICE = re.compile(r"^(argument [^:]+: invalid choice: '([^']*)') \(choose from (.*)\)$")
_UNRECOGNIZED = re.compile(r"^unrecognized arguments: (.*)$")


def _with_closest(parser: argparse.ArgumentParser, exc: UsageError, words: list[str]) -> str:
    """argparse's message, with the closest valid name first for a mistyped command, choice
    or option (``invalid choice: 'lsit'; did you mean 'list'? (choose from ...)``)."""
    message = str(exc)
    choice = _INVALID_CHOICE.match(message)
    if choice:
        valid = re.findall(r"'([^']*)'", choice.group(3))
        close = difflib.get_close_matches(choice.group(2), valid, n=1, cutoff=0.5)
        if close:
            return f"{choice.group(1)}; did you mean {close[0]!r}? (choose from {choice.group(3)})"
        return message
    unknown = _UNRECOGNIZED.match(message)
    if unknown:
        options = _options_of(parser, words)
        for word in unknown.group(1).split():
            name = word.split("=", 1)[0]
            if name.startswith("-"):
                close = difflib.get_close_matches(name, options, n=1, cutoff=0.5)
                if close:
                    return f"unknown option {name!r}; did you mean {close[0]!r}? ({message})"
    return message


def _options_of(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """The options the command named in ``words`` takes (the top-level ones without it)."""
    options = list(parser._option_string_actions)
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        if isinstance(action, argparse._SubParsersAction):
            command = next((w for w in words if w in action.choices), None)
            if command is not None:
                options += list(action.choices[command]._option_string_actions)
    return [o for o in options if o.startswith("--")]


def _one_line(exc: BaseException) -> str:
    lines = [re.sub(r"^- ", "", line.strip()) for line in str(exc).splitlines() if line.strip()]
    return "; ".join(lines) or type(exc).__name__


def _fail(args: argparse.Namespace | None, code: int, message: str, exc: BaseException) -> int:
    print(f"askcache: error: {message}", file=sys.stderr)
    if args is not None and getattr(args, "json", False):
        emit_json({"error": {"type": type(exc).__name__, "message": message}, "exit_code": code})
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``askcache`` command; returns the exit code. No output shows a
    registered secret (:func:`~askcache.cli.commands.common.redacted_output`)."""
    with redacted_output():
        code = _main(argv)
    if argv is None:  # the command run as a program (tests call main with their own argv)
        _spare_the_last_collections()
    return code


def _spare_the_last_collections() -> None:
    """Move every object left to the collector's permanent generation: the process is about
    to end and the system frees its memory, but the interpreter's shutdown would otherwise
    walk them all in its last collections (measured: 0.3 s of ``askcache dashboard`` on a
    busy two-core machine)."""
    gc.freeze()


def _main(argv: Sequence[str] | None) -> int:
    command = _command_word(sys.argv[1:] if argv is None else argv)
    parser = _parser(command if command in _LEAN_COMMANDS else None)
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        words = list(sys.argv[1:] if argv is None else argv)
        message = _with_closest(parser, exc, words)
        hint = f" (see {exc.parser.prog} --help)"
        print(f"{exc.parser.prog}: usage error: {message}{hint}", file=sys.stderr)
        if "--json" in words:  # scripts get the error as JSON too
            emit_json(
                {"error": {"type": "UsageError", "message": message}, "exit_code": EXIT_USAGE}
            )
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    debug = getattr(args, "debug", False)
    quiet = logging.ERROR if args.command in ("demo", "parity") else logging.WARNING
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else quiet,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (head, less) went away: say nothing more, and keep Python from
        # complaining about stdout again when it exits.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE
    except KeyboardInterrupt:
        print("askcache: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if debug:  # the traceback, then the same one line and exit code as without
            traceback.print_exc(file=sys.stderr)
        if isinstance(exc, AskCacheError | OSError):
            return _fail(args, EXIT_ERROR, _one_line(exc), exc)
        if type(exc).__module__.split(".")[0] == "anthropic":
            return _fail(args, EXIT_ERROR, f"the Anthropic API failed: {_one_line(exc)}", exc)
        return _fail(
            args,
            EXIT_INTERNAL,
            f"internal error {type(exc).__name__}: {_one_line(exc)} "
            "(run again with --debug for the traceback, and please report it)",
            exc,
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
