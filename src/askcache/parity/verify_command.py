"""``askcache verify SOURCE CANDIDATE --fix-command CMD``: the auto-verify loop as a command.

Each iteration captures both renderings (image files are re-read, URLs re-rendered in
headless Chromium; the source once), judges them, writes the history under
``{output}/screenshots/verify-iterations/`` and, below the parity threshold, runs the fix
command with the iteration's report. Exit codes: 0 parity reached, 1 not reached (maximum
iterations or diminishing returns: the seed's "ask the user" gate is left to the caller), 2
error (a capture or the fix command failed, or the judge could not compare).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from PIL import Image

from askcache.foundation.errors import AskCacheError
from askcache.foundation.screen.png import open_image
from askcache.parity.auto_verify import ITERATIONS_FOLDER, IterationRecord, LoopExit, auto_verify
from askcache.parity.command import is_url, make_judge
from askcache.parity.config import ParityConfig
from askcache.parity.evidence import BrowserCapture
from askcache.parity.models import ParityReport

__all__ = ["VERIFY_EXIT_CODES", "FixCommandError", "add_verify_command", "run_verify"]

VERIFY_EXIT_CODES = {
    LoopExit.SUCCESS: 0,
    LoopExit.DIMINISHING_RETURNS: 1,
    LoopExit.MAX_ITERATIONS: 1,
    LoopExit.ERROR: 2,
}
"""Process exit code per loop exit (0 and 2 mean what they mean for ``askcache parity``)."""


class FixCommandError(AskCacheError):
    """The fix command failed (non-zero exit, timeout, not runnable)."""


def add_verify_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``verify`` sub-command."""
    parser = commands.add_parser(
        "verify",
        help="auto-verify loop: compare, run a fix command, repeat until parity",
        description=(__doc__ or "").replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("source", help="baseline: an image file or a URL")
    parser.add_argument("candidate", help="the rebuild: an image file or a URL, re-read each time")
    parser.add_argument(
        "--fix-command",
        required=True,
        metavar="CMD",
        help="shell command run after each iteration short of parity; it gets seed 000's report "
        "(parityScore, gaps, recommendations) as JSON on stdin, the iteration's report.json "
        "path in $ASKCACHE_REPORT, $ASKCACHE_ITERATION and $ASKCACHE_PARITY_SCORE; a non-zero "
        "exit stops the loop (exit code 2)",
    )
    parser.add_argument("--output", default="askcache-verify-output", help="output folder")
    parser.add_argument("--judge", choices=["deterministic", "vision"], default="deterministic")
    parser.add_argument("--model", default=None, help="model for --judge vision")
    parser.add_argument("--device", choices=["desktop", "mobile"], default="desktop")
    parser.add_argument(
        "--full-page", action="store_true", help="capture whole pages, not the viewport"
    )
    parser.add_argument(
        "--parity-threshold", type=float, default=None, help="success at this score (99)"
    )
    parser.add_argument(
        "--score-only",
        action="store_true",
        help="success on the score alone, even with a high-severity gap left",
    )
    parser.add_argument("--max-iterations", type=int, default=None, help="iteration cap (10)")
    parser.add_argument(
        "--fix-timeout", type=float, default=600.0, help="seconds the fix command may take (600)"
    )
    parser.set_defaults(run=run_verify)


def _read_image(path: str) -> Image.Image:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise AskCacheError(f"{path}: not a readable image: {exc}") from exc
    with open_image(raw, path) as opened:  # askcache's pixel limit, naming the file
        return opened.convert("RGB")


def run_fix_command(
    command: str, report: ParityReport, iteration: int, report_path: Path, timeout: float
) -> None:
    """Run ``command`` through the shell with the report on stdin and in the environment.

    Raises:
        FixCommandError: it exited non-zero, timed out or could not start.
    """
    environment = {
        **os.environ,
        "ASKCACHE_REPORT": str(report_path),
        "ASKCACHE_ITERATION": str(iteration),
        "ASKCACHE_PARITY_SCORE": f"{report.parity_score:g}",
    }
    try:
        finished = subprocess.run(
            command,
            shell=True,
            input=report.to_json(),
            text=True,
            env=environment,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise FixCommandError(f"fix command timed out after {timeout:g} s: {command}") from exc
    except OSError as exc:
        raise FixCommandError(f"fix command could not start: {exc}") from exc
    if finished.returncode != 0:
        raise FixCommandError(
            f"fix command exited {finished.returncode} at iteration {iteration}: {command}"
        )


def run_verify(args: argparse.Namespace, *, sleep: Callable[[float], None] = time.sleep) -> int:
    """Run the command; return its exit code."""
    limits: dict[str, float | int | bool] = {"high_gaps_block_success": not args.score_only}
    if args.parity_threshold is not None:
        limits["parity_threshold"] = args.parity_threshold
    if args.max_iterations is not None:
        limits["max_iterations"] = args.max_iterations
    config = ParityConfig(**limits)
    judge = make_judge(args.judge, args.model, config)
    output = Path(args.output)
    folder = output / ITERATIONS_FOLDER
    with ExitStack() as stack:
        browser: list[BrowserCapture] = []
        source: list[Image.Image] = []

        def shoot(where: str) -> Image.Image:
            if not is_url(where):
                return _read_image(where)
            if not browser:
                browser.append(stack.enter_context(BrowserCapture(config)))
            return browser[0].screenshot(where, device=args.device, full_page=args.full_page)

        def capture() -> tuple[Image.Image, Image.Image]:
            if not source:
                source.append(shoot(args.source))
            return source[0], shoot(args.candidate)

        def fix(report: ParityReport, iteration: int) -> None:
            path = folder / f"iteration-{iteration:03d}" / "report.json"
            run_fix_command(args.fix_command, report, iteration, path, args.fix_timeout)

        def decide(reason: LoopExit, history: list[IterationRecord]) -> bool:
            return False  # the caller decides, from the exit code and summary.json

        result = auto_verify(capture, fix, decide, output, judge=judge, config=config, sleep=sleep)
    for record in result.iterations:
        print(
            f"  iteration {record.iteration}: {record.verdict}, parity {record.parity_score:.2f}, "
            f"{record.gaps} gap(s)"
        )
    final = f"{result.final_score:.2f}" if result.iterations else "none"
    if result.exit == LoopExit.SUCCESS:
        print(
            f"parity reached: {final} >= {result.threshold:g} ({len(result.iterations)} iterations)"
        )
    elif result.exit == LoopExit.ERROR:
        print(f"error after {len(result.iterations)} iteration(s): {result.error}")
    else:
        print(
            f"parity not reached ({result.exit.value}): {final} < {result.threshold:g} after "
            f"{len(result.iterations)} iterations; proceed or abort is your decision"
        )
    if result.iterations and result.iterations[-1].recommendations:
        print("last recommendations:")
        for recommendation in result.iterations[-1].recommendations:
            print(f"  - {recommendation}")
    print(f"history: {folder / 'summary.json'}")
    return VERIFY_EXIT_CODES[result.exit]
