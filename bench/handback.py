"""Hand-back dead time: on a genuinely changed screen, how long after the screen is still
(and changed) the model is first asked.

    python bench/handback.py [--only NAME ...] [--runs N] [--late N] [--no-write] [--json PATH]

Applications: those of ``bench/drift.py`` (mousepad, vi in xterm, the list page in
Chromium), with its machinery: each task is recorded once under Xvfb with a scripted model
through the real ``anthropic`` client and :class:`~askcache.testing.MessagesApiStandIn` and
the real :class:`~askcache.tools.desktop.DesktopBackend`, then replayed with
``strategy="execute"`` and the default :class:`~askcache.CacheExecutionSettings`.

*Changed-screen runs* (``--runs`` per application and condition, alternating drift's
*another file open* and *extra line*): the application is started on the changed file, and
the replay starts only once its screen is drawn and still (drift's settle, then looks
0.2 s apart until two match, fewer than 60 pixels apart, a blinking caret) and differs from
the recording's screen before the first action. Per run:

- ``t_still``: when the last of those looks returned, just before ``Agent.act``;
- ``t_model``: when the stand-in received the first Messages request (the scripted model
  notes the time as it is called; under ``strategy="execute"`` the model is asked only
  after a hand-back);
- the dead time ``t_model - t_still``; a run where the model is never asked has none.

Two conditions, each on its own copy of the cache folder (the file and its run ledger), so
that no run sees another's hand-back:

- *first run*: the folder as the recording left it (no replay in the ledger);
- *after 5 runs*: the folder after 5 unchanged replays that completed (checked in the ledger
  through :func:`askcache.open_ledger`).

*Started late* (``--late`` per application and condition): drift's situation, the
application started at the same moment as the replay; it should complete with no hand-back.

Counted from the application's side, as drift counts them: **wrong actions** (replayed
actions that ran on a screen that differed from the recording's before the same action),
**needless hand-backs** (the screen, when the model was first asked, was as recorded).

Uses only the public surface (``Agent``, ``CachingSettings``, ``ComputerTool``,
``DesktopBackend``, the storage and the ledger), so it measures any replay core. Writes the
"hand-back latency" section of docs/benchmarks.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.drift import (
    APPS,
    CARET,
    EXTRA,
    GOAL,
    LIST,
    MOUSEPAD,
    OTHER,
    SCREEN,
    Run,
    Stopper,
    Task,
    Witness,
    _backend,
    _differing,
    _same,
    _settled,
    _start,
    _stop,
)
from PIL import Image

from askcache import (
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    LocalCacheStorage,
    open_ledger,
)
from askcache.testing import InputLog, MessagesApiStandIn, VirtualDisplay
from askcache.tools.desktop import DesktopBackend

CHANGED = ("another file open", "extra line")
"""The changed screens, alternated over a condition's runs."""
LATE = "started late"
SEASON = 5
"""Unchanged replays that complete before the *after 5 runs* condition."""
CONDITIONS = ("first run", f"after {SEASON} runs")
LOOK = 0.2
"""Seconds between the looks that show the screen still before a replay."""


class Clocked(Stopper):
    """Drift's stopping model, noting when each request arrived (``time.monotonic``)."""

    def __init__(self, backend: DesktopBackend) -> None:
        super().__init__(backend)
        self.times: list[float] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.times.append(time.monotonic())
        return super().__call__(request)


@dataclass
class Sample:
    """One replay and its times."""

    app: str
    condition: str
    situation: str
    run: Run
    dead: float | None
    """``t_model - t_still`` in seconds; ``None`` when the model was never asked or the
    screen was not watched still (started late)."""
    from_start: float | None
    """``t_model`` less the moment ``Agent.act`` was called."""
    changed: int
    """Pixels by which the still screen differed from the recording's before the first
    action (0 for started late)."""
    waited: float
    """The replay's own account: seconds its steps waited (``StepRecord.waited_seconds``)."""


def _still(backend: DesktopBackend) -> tuple[float, Image.Image]:
    """Look every :data:`LOOK` seconds until two looks in a row match; when the second one
    returned, and the screen."""
    previous = backend.screenshot().convert("RGB")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(LOOK)
        now = backend.screenshot().convert("RGB")
        at = time.monotonic()
        if _same(now, previous):
            return at, now
        previous = now
    raise RuntimeError("the screen did not keep still")


def _settings(cache: Path) -> CachingSettings:
    return CachingSettings(
        strategy="execute",
        cache_dir=cache,
        writing_settings=CacheWritingSettings(filename="task.json"),
        execution_settings=CacheExecutionSettings(),
    )


def replay(task: Task, cache: Path, situation: str, condition: str) -> Sample:
    """Replay ``task`` from the cache folder ``cache`` in ``situation`` (``unchanged``, one
    of :data:`CHANGED`, or :data:`LATE`) on a fresh X server and application."""
    task.runs += 1
    original = EXTRA if situation == "extra line" else LIST
    task.file.write_text(original)
    task.other.write_text(OTHER)
    files = [task.file]
    if situation == "another file open":
        files = [task.other, task.file] if task.app is MOUSEPAD else [task.other]
    home = task.folder / f"home-{task.runs}"
    still: float | None = None
    changed = 0
    with VirtualDisplay(*SCREEN) as screen, _backend(screen.display) as backend:
        log = InputLog(screen.display, SCREEN)
        process: subprocess.Popen[bytes] | None = None
        try:
            if situation != LATE:
                process = _start(task.app, screen.display, files, home)
                _settled(backend)
            tool = Witness(backend)
            model = Clocked(backend)
            with MessagesApiStandIn(model) as api:
                agent = Agent(api.client(), [tool], model="claude-test")
                if situation == LATE:
                    process = _start(task.app, screen.display, files, home)
                else:
                    still, shown = _still(backend)
                    changed = _differing(shown, task.recorded_screens[0])
                    if situation in CHANGED and changed <= CARET:
                        raise RuntimeError(f"{task.app.name}: {situation} shows no change")
                started = time.monotonic()
                result = agent.act(GOAL, _settings(cache))
                seconds = time.monotonic() - started
            presses = sum(kind in ("key_press", "button_press") for kind, _ in log.events())
        finally:
            log.close()
            if process is not None:
                _stop(process)
    run = task._judge(
        situation=situation,
        result=result,
        tool=tool,
        model=model,
        presses=presses,
        original=original,
        seconds=seconds,
    )
    asked = model.times[0] if model.times else None
    steps = result.replay.steps if result.replay is not None else []
    return Sample(
        app=task.app.name,
        condition=condition,
        situation=situation,
        run=run,
        dead=None if asked is None or still is None else asked - still,
        from_start=None if asked is None else asked - started,
        changed=changed,
        waited=sum(step.waited_seconds for step in steps),
    )


def _replays(cache: Path) -> list[str]:
    """The statuses of the replays in the cache folder's run ledger, oldest first."""
    with open_ledger(LocalCacheStorage(cache)) as ledger:
        return [r.status for r in ledger.records() if r.event == "replay"]


def _line(sample: Sample) -> str:
    run = sample.run
    dead = "-" if sample.dead is None else f"{sample.dead:.2f} s"
    return (
        f"{sample.app} / {sample.condition} / {sample.situation}: dead {dead}, "
        f"{run.status}, wrong {run.wrong} (pixels {run.differing}), needless {run.needless}, calls {run.model_calls}, "
        f"replayed {run.replayed}, file {run.file}, changed {sample.changed} px, "
        f"waited {sample.waited:.2f} s, act {run.seconds:.2f} s; {run.reason}"
    )


def measure(app_index: int, folder: Path, runs: int, late: int) -> list[Sample]:
    """Record one application's task and replay it in both conditions."""
    app = APPS[app_index]
    task = Task(app, folder / "task")
    task.record()
    fresh = folder / "fresh"
    shutil.copytree(task.cache, fresh)
    print(f"{app.name}: recorded; ledger replays {_replays(fresh)}", flush=True)
    seasoned = folder / "seasoned"
    shutil.copytree(fresh, seasoned)
    for attempt in range(2 * SEASON):
        if _replays(seasoned).count("completed") >= SEASON:
            break
        sample = replay(task, seasoned, "unchanged", f"seasoning {attempt + 1}")
        print(_line(sample), flush=True)
    statuses = _replays(seasoned)
    if statuses.count("completed") < SEASON:
        raise RuntimeError(f"{app.name}: {SEASON} unchanged replays did not complete: {statuses}")
    print(f"{app.name}: ledger replays {statuses}", flush=True)
    samples = []
    for condition, source in zip(CONDITIONS, (fresh, seasoned), strict=True):
        plan = [CHANGED[n % len(CHANGED)] for n in range(runs)] + [LATE] * late
        for number, situation in enumerate(plan):
            cache = folder / f"{condition.replace(' ', '-')}-{number}"
            shutil.copytree(source, cache)
            sample = replay(task, cache, situation, condition)
            print(_line(sample), flush=True)
            samples.append(sample)
    return samples


def table(samples: list[Sample]) -> str:
    """The dead times and counts per application and condition, changed screens and
    started late apart."""
    rows = [
        "| application | condition | situation | runs | dead time median | min | max "
        "| from `act` median | `act` median | screen changed by | wrong actions "
        "| needless hand-backs | status | file |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    groups: dict[tuple[str, str, str], list[Sample]] = {}
    for sample in samples:
        kind = "started late" if sample.situation == LATE else "changed screen"
        groups.setdefault((sample.app, sample.condition, kind), []).append(sample)

    def counted(values: list[str]) -> str:
        return ", ".join(f"{values.count(v)} {v}" for v in dict.fromkeys(values))

    for (app, condition, kind), group in groups.items():
        dead = [s.dead for s in group if s.dead is not None]
        start = [s.from_start for s in group if s.from_start is not None]
        times = (
            f"{statistics.median(dead):.2f} s | {min(dead):.2f} s | {max(dead):.2f} s"
            if dead
            else "- | - | -"
        )
        pixels = sorted({s.changed for s in group})
        changed = "-" if kind != "changed screen" else " / ".join(f"{p:,} px" for p in pixels)
        rows.append(
            f"| {app} | {condition} | {kind} | {len(group)} | {times} "
            f"| {f'{statistics.median(start):.2f} s' if start else '-'} "
            f"| {statistics.median(s.run.seconds for s in group):.2f} s "
            f"| {changed} "
            f"| {sum(len(s.run.wrong) for s in group)} "
            f"| {sum(s.run.needless for s in group)} "
            f"| {counted([s.run.status for s in group])} "
            f"| {counted([s.run.file for s in group])} |"
        )
    return "\n".join(rows)


GOAL_SECONDS = 1.0
"""Issue 32's goal: the median dead time on every changed-screen row at most this."""


def verdict(samples: list[Sample]) -> str:
    """Issue 32's goal against these samples, and what each wrong action was."""
    misses = []
    groups: dict[tuple[str, str], list[float]] = {}
    for sample in samples:
        if sample.situation in CHANGED:
            groups.setdefault((sample.app, sample.condition), []).append(
                sample.dead if sample.dead is not None else float("inf")
            )
    for (app, condition), dead in groups.items():
        if statistics.median(dead) > GOAL_SECONDS:
            misses.append(f"{app}, {condition}: {statistics.median(dead):.2f} s")
    late = [s for s in samples if s.situation == LATE]
    handbacks = sum(s.run.status == "handed_back" for s in late)
    needless = sum(s.run.needless for s in late)
    late_wrong = sum(len(s.run.wrong) for s in late)
    met = f"**not met** ({'; '.join(misses)})" if misses else "met"
    goal = (
        f"**Goal** (issue 32): median dead time at most {GOAL_SECONDS:.0f} s on every "
        f"changed-screen row: {met}. Started late: {handbacks} hand-backs ({needless} "
        f"needless), {late_wrong} wrong actions in {len(late)} runs."
    )
    wrong = [
        f"- {s.app}, {s.condition}, {s.situation}: action {n} ({pixels} px differ); "
        f"then: {s.run.status}, file {s.run.file}"
        for s in samples
        for n, pixels in zip(s.run.wrong, s.run.differing, strict=True)
    ]
    return goal + ("\n\nThe wrong actions:\n\n" + "\n".join(wrong) if wrong else "")


def _section(text: str, where: str, runs: int, late: int) -> str:
    return f"""## Hand-back latency on a changed screen (`bench/handback.py`)

{where}

The applications and tasks of `bench/drift.py` (mousepad, vi in xterm, the list page in
Chromium), each recorded once, replayed with `strategy="execute"` and the default settings on
a fresh X server and application each time. *Changed screen*: {runs} runs per application
and condition, alternating drift's *another file open* and *extra line*; the replay starts
once the application's screen is drawn, still (two looks {LOOK} s apart match) and differs
from the recording's screen before the first action. **Dead time**: from the last of those
looks (just before `Agent.act`) to the stand-in's receipt of the first Messages request
(the model is asked only after a hand-back); *from `act`*: the same from the call of
`Agent.act`; *`act`*: the whole `Agent.act`. *First run*: the cache folder as the recording left it; *after {SEASON} runs*:
a copy of it after {SEASON} unchanged replays completed (every run starts from its own copy,
so no run sees another's hand-back). *Started late* ({late} per application and condition):
the application starts with the replay; it should complete with no hand-back. Wrong actions
and needless hand-backs are counted as in `bench/drift.py`.

{text}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="applications whose names contain these")
    parser.add_argument(
        "--runs", type=int, default=10, help="changed-screen runs per application and condition"
    )
    parser.add_argument(
        "--late", type=int, default=3, help="started-late runs per application and condition"
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not write the docs")
    parser.add_argument("--json", type=Path, help="also write every run's figures to this file")
    args = parser.parse_args(argv)
    samples: list[Sample] = []
    with tempfile.TemporaryDirectory() as folder:
        for number, app in enumerate(APPS):
            if args.only and not any(o.lower() in app.name.lower() for o in args.only):
                continue
            samples += measure(number, Path(folder) / f"app{number}", args.runs, args.late)
    text = table(samples) + "\n\n" + verdict(samples)
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(s) for s in samples], indent=1))
    print(text)
    if not args.no_write:
        from bench._common import machine, write_section

        write_section("handback", _section(text, machine(), args.runs, args.late))
    return 0


if __name__ == "__main__":
    sys.exit(main())
