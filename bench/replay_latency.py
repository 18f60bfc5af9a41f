"""Replay latency on a real application: the Tk form under Xvfb, default settings.

    bash scripts/bench.sh replay_latency [RUNS]

Writes the "replay latency" section of docs/benchmarks.md: the form as it is, and the form
answering every input 0.8 s late (its ``--slow 0.8`` option).

Records the form once (scripted model through the real anthropic client and the local
stand-in; the computer tool waits VisionAgent's 0.3 s after each of the model's actions),
then replays it RUNS times with default CacheExecutionSettings on a fresh form each time and
reports, per replayed step, the time from looking at the screen to the verified effect of
the action (StepRecord.seconds), and whole replays. Wrong saves and hand-backs are counted:
a fast replay that clicks wrongly would be no result.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, write_section

from askcache import (
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    SimulatedFormApp,
    TkFormApp,
    VirtualDisplay,
)
from askcache.tools.desktop import DesktopBackend

GOAL = "Type Ada Lovelace into the Name field and press Save"
ADA = [{"name": "Ada Lovelace", "email": ""}]


def _act(  # noqa: PLR0917 - one call site, read as a sentence
    client: Any,
    script: FormFillingScript,
    backend: DesktopBackend,
    display: str,
    folder: Path,
    strategy: str,
    execution: CacheExecutionSettings,
    **app_options: Any,
) -> tuple[Any, list[dict[str, str]], float]:
    with TkFormApp(display, folder / "state.json", **app_options) as app:
        tool = ComputerTool(backend, settle_delay=0.3)
        script.app, script.to_model = app, tool.from_screen
        settings = CachingSettings(
            strategy=strategy,  # type: ignore[arg-type]
            cache_dir=folder / "cache",
            writing_settings=CacheWritingSettings(filename="form.json"),
            execution_settings=execution,
        )
        started = time.monotonic()
        result = Agent(client, [tool], model="claude-bench").act(GOAL, settings)
        seconds = time.monotonic() - started
        return result, app.settled()["saved"], seconds


def measure(
    runs: int = 10,
    execution: CacheExecutionSettings | None = None,
    app_args: list[str] | None = None,
) -> dict[str, Any]:
    """Record once, replay ``runs`` times (the replays on a form started with ``app_args``);
    per-step and per-replay figures."""
    execution = execution or CacheExecutionSettings()
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    steps: list[float] = []
    waits: list[float] = []
    totals: list[float] = []
    statuses: list[str] = []
    wrong = 0
    calls = 0
    with (
        tempfile.TemporaryDirectory() as tmp,
        MessagesApiStandIn(script) as api,
        VirtualDisplay(1280, 800) as screen,
    ):
        folder = Path(tmp)
        backend = DesktopBackend(screen.display)
        try:
            client = api.client()
            _act(client, script, backend, screen.display, folder, "record", execution)
            for _ in range(runs):
                result, saved, seconds = _act(
                    client,
                    script,
                    backend,
                    screen.display,
                    folder,
                    "execute",
                    execution,
                    extra_args=app_args or [],
                )
                replay = result.replay
                statuses.append(replay.status)
                wrong += saved != ADA
                calls += result.model_calls
                totals.append(seconds)
                for step in replay.steps:
                    if step.seconds is not None and step.validated:
                        steps.append(step.seconds)
                        waits.append(step.waited_seconds)
        finally:
            backend.close()
    ordered = sorted(steps)
    return {
        "runs": runs,
        "steps": len(steps),
        "median": statistics.median(steps),
        "p90": ordered[int(0.9 * (len(ordered) - 1))],
        "max": ordered[-1],
        "median_wait": statistics.median(waits),
        "replay_median": statistics.median(totals),
        "statuses": {status: statuses.count(status) for status in sorted(set(statuses))},
        "wrong_saves": wrong,
        "model_calls": calls,
    }


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    rows = [
        ("the Tk form", measure(runs)),
        ("the Tk form answering 0.8 s late", measure(runs, app_args=["--slow", "0.8"])),
    ]
    lines = [
        "## Replay latency (`bench/replay_latency.py`)",
        "",
        machine(),
        "",
        f"The Tk contact form under Xvfb (1280x800), recorded once by the scripted model, then replayed {runs} times with the default `CacheExecutionSettings` (auto-wait, no fixed delay) on a fresh form each time. "
        "A step's time runs from looking at the screen to the verified effect of its action (`StepRecord.seconds`: screenshot, checks, the action through XTEST, the screenshot after it, the effect check). "
        "Before this engine, with the shipped defaults then (a 0.5 s delay between actions, VisionAgent's 0.3 s settle delay), a step cost 0.67 s (issue 9's measurement). Goal: median step at most 0.15 s; a UI answering 0.8 s late replays with no false hand-back and no wrong action.",
        "",
        "| application | steps | median step | p90 | slowest | median wait in a step | median replay (4 steps, whole `act`) | statuses | model calls | wrong saves |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in rows:
        statuses = ", ".join(f"{k} {v}" for k, v in r["statuses"].items())
        lines.append(
            f"| {name} | {r['steps']} | {r['median'] * 1000:.0f} ms | {r['p90'] * 1000:.0f} ms | {r['max'] * 1000:.0f} ms | {r['median_wait'] * 1000:.0f} ms | {r['replay_median']:.2f} s | {statuses} | {r['model_calls']} | {r['wrong_saves']} |"
        )
    body = "\n".join(lines)
    write_section("replay latency", body)
    print(body)


if __name__ == "__main__":
    main()
