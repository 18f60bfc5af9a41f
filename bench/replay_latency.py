"""Replay latency on a real application: the Tk form under Xvfb, default settings.

    .venv/bin/python bench/replay_latency.py [RUNS]     (bench/speed.py runs it too)

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
        time.sleep(0.3)  # the form publishes its state a moment after each change
        return result, app.saved, seconds


def measure(runs: int = 10, execution: CacheExecutionSettings | None = None) -> dict[str, Any]:
    """Record once, replay ``runs`` times; per-step and per-replay figures."""
    execution = execution or CacheExecutionSettings()
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    steps: list[float] = []
    waits: list[float] = []
    totals: list[float] = []
    statuses: list[str] = []
    wrong = 0
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
                    client, script, backend, screen.display, folder, "execute", execution
                )
                replay = result.replay
                statuses.append(replay.status)
                wrong += saved != ADA
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
    }


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    print(measure(runs))


if __name__ == "__main__":
    main()
