"""Healing on the real Tk form under Xvfb: model calls per run after the layout changed.

    bash scripts/bench.sh heal        (starts Xvfb; the scripted model, offline)

Two series, each recorded on the original layout first (5 model calls), then run with
``strategy="auto"`` (heal ``auto``):

- ``banner x10``: 10 runs on the banner layout;
- ``alternating x12``: 12 runs whose layout alternates banner, original, banner, ...

Writes the "heal" section of docs/benchmarks.md.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, write_section

from askcache import Agent, CacheWritingSettings, CachingSettings, ComputerTool
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp, TkFormApp
from askcache.testing.simulated import Layout
from askcache.testing.xvfb import VirtualDisplay
from askcache.tools.desktop import DesktopBackend

GOAL = "Type Ada Lovelace into the Name field and press Save"


def _series(layouts: list[Layout]) -> list[tuple[Layout, int, str, str, bool, float]]:
    """Per run: layout, model calls, replay status, heal event, saved right, seconds."""
    rows = []
    with tempfile.TemporaryDirectory() as folder, VirtualDisplay(1280, 800) as screen:
        tmp = Path(folder)
        backend = DesktopBackend(screen.display)
        script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
        try:
            with MessagesApiStandIn(script) as api:
                for index, layout in enumerate(["original", *layouts]):
                    with TkFormApp(screen.display, tmp / "state.json", layout=layout) as app:
                        tool = ComputerTool(backend, settle_delay=0.3)
                        script.app, script.to_model = app, tool.from_screen
                        started = time.monotonic()
                        result = Agent(api.client(), [tool], model="claude-test").act(
                            GOAL,
                            CachingSettings(
                                strategy="record" if index == 0 else "auto",
                                cache_dir=tmp / "cache",
                                writing_settings=CacheWritingSettings(filename="form.json"),
                            ),
                        )
                        seconds = time.monotonic() - started
                        saved = app.settled()["saved"]
                        right = saved == [{"name": "Ada Lovelace", "email": ""}]
                    if index == 0:
                        continue
                    status = result.replay.status if result.replay else "-"
                    event = result.heal.event if result.heal else "-"
                    rows.append((layout, result.model_calls, status, event, right, seconds))
        finally:
            backend.close()
    return rows


def _table(title: str, rows: list[tuple[Layout, int, str, str, bool, float]]) -> list[str]:
    lines = [
        f"**{title}**",
        "",
        "| run | layout | model calls | replay | heal | saved the right value | wall time |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for n, (layout, calls, status, event, right, seconds) in enumerate(rows, 1):
        lines.append(
            f"| {n} | {layout} | {calls} | {status} | {event} | {'yes' if right else 'NO'} "
            f"| {seconds:.2f} s |"
        )
    return [*lines, ""]


def main() -> None:
    banner = _series(["banner"] * 10)
    alternating = _series(["banner", "original"] * 6)
    lines = [
        "## Healing (`bench/heal.py`)",
        "",
        machine(),
        "",
        "The Tk contact form on Xvfb (1280x800), the scripted model (no AI) through the local "
        "Messages API stand-in. Each series starts with a recording on the original layout "
        '(5 model calls), then runs with `strategy="auto"` (heal `auto`).',
        "",
        *_table("Banner layout, 10 runs", banner),
        *_table("Banner on every other run, 12 runs", alternating),
        f"Banner: {sum(r[1] for r in banner[1:])} model calls over runs 2-10. Alternating: "
        f"{sum(r[1] for r in alternating[2:])} model calls over runs 3-12, once both states "
        "were seen (the original was seen when recording, so run 2 already replays: it takes "
        "the variant the heal kept). Wall time is that of `Agent.act` (the application's "
        "start is not counted); run 1 includes the hand-back, the scripted model's turns "
        "(0.3 s settle after each of its actions), the verification and the heal.",
    ]
    body = "\n".join(lines)
    write_section("heal", body)
    print(body)


if __name__ == "__main__":
    main()
