"""``askcache report NAME``: an HTML report of one trajectory and its runs, from what is on disk.

The report is one self-contained HTML file (images inline) a person opens after runs on a
fleet machine or in CI. It shows:

* the cache file: goal, when and at what size it was recorded, what the recording cost, the
  validation set-up, parameters, variants, signature;
* the recorded end state: the 1/8-scale grey thumbnail of the final screen the file keeps,
  with each step's action point;
* the most recent runs from the run ledger (``--runs N``): when, where, status, the step
  a replay stopped at and why, re-joins, model calls, tokens, seconds, what it saved, and
  all replays added up as ``askcache stats`` does;
* every step: its action, its fingerprint set-up, what it changed when recorded (its
  effect tiles before and after) and, with ``--screenshots`` or ``--live``, its region on
  the screen as it is now (the action point marked, the whole screen with the region
  boxed) with what a replay would decide there (the dry run's checks: nothing is clicked
  or typed).

The file is written to a temporary file beside ``--output`` and renamed, so a report is
never half-written. Registered secret values never appear in it.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from PIL import Image

from askcache.cachefile.blind_spots import blind_spots
from askcache.cachefile.format import CacheFile
from askcache.cli.commands.common import (
    EXIT_OK,
    describe_profiles,
    emit_json,
    open_run_ledger,
    open_storage,
    parameter_argument,
    register_given_secrets,
    resolve_name,
)
from askcache.cli.commands.replay import read_screen
from askcache.cli.commands.show import describe_validation
from askcache.cli.commands.stats import stats_line, stats_of
from askcache.cli.html_report import (
    StepRow,
    TrajectoryReport,
    effect_figure,
    end_state_figure,
    view_figures,
    write_trajectory_report,
)
from askcache.foundation.actions import ACTING_ACTIONS, action_anchors, parse_action
from askcache.foundation.errors import AskCacheError
from askcache.replay.dry_run import DryRunStep, dry_run
from askcache.replay.step_view import StepView
from askcache.storage.cache_storage import load_cache_file
from askcache.storage.ledger import RunRecord, TrajectorySummary
from askcache.storage.ledger.summary import fold_all

__all__ = ["DEFAULT_RUNS", "add_report_command", "build_report", "run_report", "screens_in"]

DEFAULT_RUNS = 20
"""Ledger entries a report shows unless ``--runs`` says."""


def add_report_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """Register ``report``."""
    parser = commands.add_parser(
        "report",
        parents=parents,
        help="write an HTML report of a trajectory and its runs",
        description="Write one self-contained HTML file about a cache file: its steps and "
        "checks, what each step changed when recorded, the recorded end state, the most "
        "recent runs from the run ledger with what they saved, and (with --screenshots or "
        "--live) each step's region as it looks now and whether a replay would run there. "
        "Nothing is clicked or typed. Exit 0 once the report is written.",
    )
    parser.add_argument("name", help="cache file name, with or without .json")
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="the HTML file to write (default: askcache-report-NAME.html in the current "
        "folder; replaced whole, never half-written)",
    )
    parser.add_argument(
        "--runs",
        type=_positive,
        default=DEFAULT_RUNS,
        metavar="N",
        help=f"show the N most recent run ledger entries (default {DEFAULT_RUNS})",
    )
    now = parser.add_mutually_exclusive_group()
    now.add_argument(
        "--screenshots",
        metavar="DIR_OR_PNG",
        help="check each step on these screens: a folder of PNGs named by step number "
        "(0.png, step-3.png: the screen before that step; a step without one is checked on "
        "the closest earlier one), or one PNG for every step",
    )
    now.add_argument(
        "--live", action="store_true", help="check each step on the live screen of $DISPLAY"
    )
    now.add_argument("--display", metavar=":N", help="check each step on the live screen of :N")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        type=parameter_argument,
        metavar="NAME=VALUE",
        help="a parameter value for the checks (repeatable; a secret's value never appears "
        "in the report)",
    )
    parser.set_defaults(run=run_report)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of runs, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 run, got {value}")
    return value


_STEP_NUMBER = re.compile(r"(\d+)$")


def screens_in(path: Path) -> dict[int, Image.Image]:
    """The screens of ``--screenshots``: a folder's PNGs by the step number that ends their
    name (``3.png``, ``step-3.png``, ``step_03.png``), or one PNG (or a folder holding a
    single PNG) as the screen before step 0.

    Raises:
        AskCacheError: no such file or folder, no PNG in it, two PNGs for one step, or a
            file that is not an image.
    """
    option = "--screenshots"
    if not path.exists():
        raise AskCacheError(f"{option} {str(path)!r}: no such file or folder")
    if path.is_file():
        return {0: read_screen(path, option)}
    pngs = sorted(p for p in path.iterdir() if p.suffix.lower() == ".png" and p.is_file())
    files: dict[int, Path] = {}
    for png in pngs:
        match = _STEP_NUMBER.search(png.stem)
        if match is None:
            continue
        step = int(match.group(1))
        if step in files:
            raise AskCacheError(
                f"{option} {str(path)!r}: {files[step].name} and {png.name} are both step {step}"
            )
        files[step] = png
    if not files and len(pngs) == 1:
        files = {0: pngs[0]}
    if not files:
        raise AskCacheError(
            f"{option} {str(path)!r}: no PNG named by step number (0.png, step-3.png: the "
            "screen before that step)"
        )
    return {step: read_screen(png, option) for step, png in files.items()}


def _action_text(cache_file: CacheFile, index: int) -> str:
    step = cache_file.trajectory[index]
    action = parse_action(step)
    if action is None:
        return step.name
    arguments = {k: v for k, v in step.input.items() if k != "action"}
    return f"{action.name} {arguments}" if arguments else action.name


def _setup_text(cache_file: CacheFile, index: int) -> str:
    """How the step is checked, from the file: its fingerprint and effect."""
    step = cache_file.trajectory[index]
    action = parse_action(step)
    if action is None or action.name not in ACTING_ACTIONS:
        return "does not act on the screen: not checked"
    config = cache_file.metadata.visual_validation
    if step.visual_representation is None or config is None:
        return "UNCHECKED: acts without a fingerprint"
    text = f"{config.method} {step.visual_representation[:16]}"
    text += "..." if len(step.visual_representation) > 16 else ""
    extras = [
        name
        for name, value in (
            ("detail hash", step.visual_detail),
            ("tone", step.visual_tone),
            ("whole target", step.visual_target),
            ("mask", step.visual_mask),
        )
        if value
    ]
    if extras:
        text += f" + {', '.join(extras)}"
    if step.effect is not None:
        text += f"; effect on {len(step.effect.tiles)} tiles"
    return text


def _facts(cache_file: CacheFile) -> list[str]:
    meta = cache_file.metadata
    rec = meta.recording
    seconds = "" if rec.duration_seconds is None else f", {rec.duration_seconds:.1f} s"
    model = f" with {rec.model}" if rec.model else ""
    facts = [
        f"Goal: {meta.goal}",
        f"Recorded {meta.created_at:%Y-%m-%d %H:%M} UTC at "
        f"{meta.coordinate_space or 'an unknown screen size'}; format version "
        f"{cache_file.version}; {len(cache_file.trajectory)} steps",
        f"The recording cost {rec.model_calls} model calls, {rec.usage.total_tokens:,} "
        f"tokens{seconds}{model}: what a full replay saves",
        "Validation: "
        + (
            describe_validation(meta.visual_validation)
            if meta.visual_validation is not None
            else "none recorded (steps are replayed without looking)"
        ),
    ]
    facts += [f"Cannot see: {gap}" for gap in blind_spots(meta.visual_validation)]
    if cache_file.cache_parameters:
        facts.append(
            "Parameters: "
            + "; ".join(
                f"{key}: {text}" if text else key
                for key, text in cache_file.cache_parameters.items()
            )
        )
    facts.append("S" + describe_profiles(cache_file)[1:])
    if cache_file.variants:
        facts.append(f"Variants (other ways through) at steps {sorted(cache_file.variants)}")
    if cache_file.signature is not None:
        facts.append(f"Signed with key {cache_file.signature.key_id!r}")
    if not meta.is_valid:
        facts.append(f"INVALID: {meta.invalidation_reason or 'no reason given'}")
    return facts


def build_report(
    name: str,
    cache_file: CacheFile,
    records: list[RunRecord],
    *,
    runs: int = DEFAULT_RUNS,
    checked: list[DryRunStep] | None = None,
    views: dict[int, StepView] | None = None,
    checked_on: str | None = None,
    summary: TrajectorySummary | None = None,
) -> TrajectoryReport:
    """What the report of ``name`` shows, from its file, its ledger entries (oldest first,
    as :meth:`RunLedger.records` gives them), its ledger summary (the totals, kept longer than
    the entries; folded from ``records`` when not given) and, when given, a dry run's checks
    and views."""
    by_step = {step.step_index: step for step in checked or []}
    views = views or {}
    anchors = list(action_anchors(cache_file.trajectory))
    rows = []
    for index in range(len(cache_file.trajectory)):
        figure = effect_figure(cache_file, index, anchors[index])
        row = StepRow(
            index,
            _action_text(cache_file, index),
            _setup_text(cache_file, index),
            recorded=[] if figure is None else [figure],
        )
        step = cache_file.trajectory[index]
        if figure is None and step.effect is not None:
            row.recorded_note = "the action changed nothing near its point when recorded"
        dry = by_step.get(index)
        if dry is not None:
            row.check += f"; now: {dry.check_summary()}"
            if dry.checked_on is not None:
                row.matched = dry.problem is None
            if dry.checked_on is None:
                row.current_note = dry.note or ""
            elif dry.problem is None:
                row.current_note = "would run"
            else:
                row.current_note = f"STOP: {dry.problem}"
        if index in views:
            row.current = view_figures(views[index])
        rows.append(row)
    report = TrajectoryReport(
        name=name,
        facts=_facts(cache_file),
        steps=rows,
        end_state=end_state_figure(cache_file),
        runs=list(reversed(records[-runs:])),
        runs_total=len(records) if summary is None else max(summary.entries, len(records)),
        totals=_totals(records, summary),
        checked_on=checked_on,
    )
    if checked is not None:
        stops = [s for s in checked if s.problem is not None]
        unchecked = [s.step_index for s in checked if s.checked_on is None]
        report.verdict_ok = not stops and not unchecked
        if stops:
            report.verdict = (
                f"a replay would stop at step {stops[0].step_index}: {stops[0].problem}"
            )
        elif unchecked:
            report.verdict = (
                f"not confirmed: step(s) {', '.join(map(str, unchecked))} were not checked "
                "(no screen for them)"
            )
        else:
            report.verdict = f"each of the {len(checked)} acting steps would run"
    return report


def _totals(records: list[RunRecord], summary: TrajectorySummary | None) -> str:
    """The line of totals over every replay the ledger counted ("" without replays)."""
    if summary is None:
        summary = fold_all(TrajectorySummary(trajectory="All replays"), records)
    return stats_line(stats_of("All replays", [summary])) if summary.runs else ""


def _output(option: str | None, name: str) -> Path:
    stem = name.removesuffix(".json").replace("/", "-")
    path = Path(option) if option else Path(f"askcache-report-{stem}.html")
    if path.is_dir():
        raise AskCacheError(f"--output {str(path)!r} is a folder; give a file name")
    if not path.parent.is_dir():
        raise AskCacheError(f"--output {str(path)!r}: no folder {str(path.parent)!r}")
    return path


def run_report(args: argparse.Namespace) -> int:
    """Run ``report``."""
    storage = open_storage(args.cache_dir)
    name = resolve_name(storage, args.name)
    cache_file = load_cache_file(storage, name)
    output = _output(args.output, name)
    with open_run_ledger(args, storage) as ledger:
        records = ledger.records(name, limit=args.runs)  # the newest: all a report shows
        summary = ledger.summary(name)
    values = dict(args.param)
    register_given_secrets(cache_file, values)  # never shown
    views: dict[int, StepView] = {}
    checked: list[DryRunStep] | None = None
    checked_on: str | None = None
    if args.live or args.display:
        from askcache.tools.desktop import DesktopBackend

        if not args.display and not os.environ.get("DISPLAY"):
            raise AskCacheError("no X display for --live: set DISPLAY or give --display :N")

        backend = DesktopBackend(args.display)
        try:
            checked = dry_run(
                cache_file, name, backend.screenshot, parameter_values=values, views=views
            )
        finally:
            backend.close()
        checked_on = f"the live screen of {backend.display}"
    elif args.screenshots:
        screens = screens_in(Path(args.screenshots))
        checked = dry_run(cache_file, name, screens, parameter_values=values, views=views)
        checked_on = f"the screenshots in {args.screenshots}"
    report = build_report(
        name,
        cache_file,
        records,
        runs=args.runs,
        checked=checked,
        views=views,
        checked_on=checked_on,
        summary=summary,
    )
    write_trajectory_report(output, report)
    stop = next((s.step_index for s in checked or [] if s.problem is not None), None)
    if args.json:
        emit_json(
            {
                "report": str(output),
                "name": name,
                "runs": len(report.runs),
                "runs_total": report.runs_total,
                "steps": len(report.steps),
                "end_state": report.end_state is not None,
                "checked_on": checked_on,
                "checked_steps": None
                if checked is None
                else sum(1 for s in checked if s.checked_on is not None),
                "unchecked_steps": None
                if checked is None
                else [s.step_index for s in checked if s.checked_on is None],
                "would_stop_at": stop,
            }
        )
    else:
        line = f"wrote {output}: {name}, {len(report.steps)} steps, {len(report.runs)} of "
        line += f"{report.runs_total} ledger entries"
        if report.verdict is not None:
            line += f"; on {checked_on}: {report.verdict}"
        print(line)
    return EXIT_OK
