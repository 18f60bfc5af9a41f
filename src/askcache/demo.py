"""The end-to-end demo: record, replay, change the screen, watch the hand-back.

Offline by default: a scripted model (no AI) answers through the local Messages API stand-in,
over HTTP, to the real ``anthropic`` client, and the screen is the simulated form app. With
``ANTHROPIC_API_KEY`` set and ``offline=False`` the real model drives the same app.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from askcache.agent import DEFAULT_MODEL, ActResult, Agent
from askcache.replay import ReplayResult
from askcache.settings import (
    CacheExecutionSettings,
    CacheStrategy,
    CacheWritingSettings,
    CachingSettings,
)
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.tools import ComputerTool

__all__ = ["DemoOutcome", "format_summary", "run_demo"]

GOAL = "Type Ada Lovelace into the Name field of the contact form and press Save"
CACHE_NAME = "contact-form.json"


@dataclass
class DemoOutcome:
    """The three runs of the demo and how long each took."""

    mode: str
    """Who played the model."""
    cache_path: Path
    """The cache file written by the recording."""
    record: ActResult
    """The recording run."""
    replay: ActResult
    """The replay on the unchanged screen."""
    changed: ActResult
    """The replay on the changed screen, finished by the model."""
    seconds: tuple[float, float, float]
    """Wall time of the three runs."""
    saved: tuple[list[dict[str, str]], list[dict[str, str]], list[dict[str, str]]]
    """What the app had saved after each run."""


def _timed(run: Callable[[], ActResult]) -> tuple[ActResult, float]:
    started = time.monotonic()
    result = run()
    return result, time.monotonic() - started


def run_demo(output_dir: Path, *, offline: bool = True, model: str | None = None) -> DemoOutcome:
    """Run the three acts of the demo with cache files under ``output_dir``."""
    output_dir.mkdir(parents=True, exist_ok=True)
    cache_file = output_dir / CACHE_NAME
    cache_file.unlink(missing_ok=True)
    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace")
    use_real = not offline and bool(os.environ.get("ANTHROPIC_API_KEY"))
    with ExitStack() as stack:
        if use_real:
            import anthropic

            client = anthropic.Anthropic()
            mode = f"the real model {model or DEFAULT_MODEL} through the Anthropic API"
        else:
            api = stack.enter_context(MessagesApiStandIn(script))
            client = api.client()
            mode = (
                "offline: a scripted model (no AI) answering through a local Messages API "
                f"stand-in at {api.base_url}"
            )

        def act(screen: SimulatedFormApp, strategy: CacheStrategy) -> ActResult:
            script.app = screen
            agent = Agent(client, [ComputerTool(screen)], model=model or DEFAULT_MODEL)
            settings = CachingSettings(
                strategy=strategy,
                cache_dir=output_dir,
                writing_settings=CacheWritingSettings(filename=CACHE_NAME),
                execution_settings=CacheExecutionSettings(delay_time_between_action=0.1),
            )
            return agent.act(GOAL, settings)

        record, t1 = _timed(lambda: act(app, CacheStrategy.RECORD))
        fresh = SimulatedFormApp()
        replay, t2 = _timed(lambda: act(fresh, CacheStrategy.EXECUTE))
        changed_app = SimulatedFormApp(layout="banner")
        changed, t3 = _timed(lambda: act(changed_app, CacheStrategy.EXECUTE))
    return DemoOutcome(
        mode=mode,
        cache_path=cache_file,
        record=record,
        replay=replay,
        changed=changed,
        seconds=(t1, t2, t3),
        saved=(app.saved, fresh.saved, changed_app.saved),
    )


def _steps_table(replay: ReplayResult) -> list[str]:
    lines = ["      step  action        check"]
    for step in replay.steps:
        if step.validated:
            verdict = "ok" if step.matched else "MISMATCH -> handed back"
            check = f"distance {step.distance} vs threshold {step.threshold}: {verdict}"
        else:
            check = f"not validated ({step.note})"
        lines.append(f"      {step.step_index:>4}  {step.action:<12}  {check}")
    return lines


def format_summary(outcome: DemoOutcome) -> str:
    """The readable report printed by ``askcache demo``."""
    record, replay, changed = outcome.record, outcome.replay, outcome.changed
    t1, t2, t3 = outcome.seconds
    tokens = record.conversation.usage.total_tokens
    lines = [
        "askcache demo",
        f"  model: {outcome.mode}",
        "  screen: a simulated contact form rendered with Pillow (real PNG screenshots)",
        f"  task: {GOAL}",
        "",
        f"1. Record: {record.model_calls} model calls, {tokens:,} tokens, {t1:.2f} s",
        f"   saved {outcome.saved[0]}; wrote {outcome.cache_path}",
    ]
    if replay.replay is not None:
        r = replay.replay
        lines += [
            "",
            f"2. Replay on the same screen: {replay.model_calls} model calls, {t2:.2f} s, "
            f"{r.status}: {r.steps_run} steps, {r.validated} validated, "
            f"{r.unvalidated} unvalidated",
            *_steps_table(r),
            f"   saved {outcome.saved[1]}",
        ]
    if changed.replay is not None:
        c = changed.replay
        lines += [
            "",
            "3. Replay after the app changed (a notice banner pushes the form down):",
            *_steps_table(c),
            f"   {c.status} at step {c.stopped_at_step}: {c.reason}",
            f"   the model took over: {changed.model_calls} model calls, {t3:.2f} s, "
            f"finished {changed.status}; saved {outcome.saved[2]}",
        ]
    lines += [
        "",
        f"Saved by the replay: {record.model_calls - replay.model_calls} model calls, "
        f"{tokens - replay.conversation.usage.total_tokens:,} tokens, "
        f"{t1 - t2:.2f} s of {t1:.2f} s",
    ]
    if "offline" in outcome.mode:
        lines.append(
            "  (offline: token counts are the stand-in's estimates and the scripted model "
            "answers instantly, so real savings in time are larger)"
        )
    return "\n".join(lines)
