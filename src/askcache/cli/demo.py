"""The end-to-end demo: record, replay, change the application, watch the hand-back and the
heal, replay the healed trajectory.

On a real X display (``$DISPLAY``, or an Xvfb it starts) it launches a small real Tk
application in its own process and drives it with pyautogui and mss. The model is Claude
when ``ANTHROPIC_API_KEY`` is set; otherwise a scripted model (no AI) answers the real
``anthropic`` client through a local Messages API stand-in on 127.0.0.1, and the summary
says so. ``screen="simulated"`` runs the same story on a form drawn with Pillow, with no X.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from askcache.agent.act import DEFAULT_MODEL, ActResult, Agent
from askcache.cli.html_report import (
    ReplaySection,
    model_actions,
    recorded_views,
    savings_text,
    write_html_report,
)
from askcache.cli.savings import saving_words
from askcache.foundation.errors import MissingApiKeyError
from askcache.foundation.settings import (
    CacheExecutionSettings,
    CacheStrategy,
    CacheWritingSettings,
    CachingSettings,
    HealMode,
)
from askcache.replay import ReplayResult
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.ledger import open_ledger
from askcache.storage.versions import VERSIONS_FOLDER
from askcache.testing import FormFillingScript, FormView, MessagesApiStandIn, SimulatedFormApp
from askcache.testing.simulated import Layout
from askcache.tools import ComputerTool

if TYPE_CHECKING:
    from askcache.tools.desktop import DesktopBackend

__all__ = ["DemoOutcome", "format_summary", "run_demo"]

GOAL = "Type Ada Lovelace into the Name field of the contact form and press Save"
CACHE_NAME = "contact-form.json"
Screen = Literal["tk", "simulated"]


@dataclass
class DemoOutcome:
    """The three runs of the demo."""

    mode: str
    """Who played the model."""
    where: str
    """Which screen and application."""
    cache_path: Path
    """The cache file written by the recording."""
    record: ActResult
    """The recording run."""
    replay: ActResult
    """The replay on the unchanged application."""
    changed: ActResult
    """The replay on the changed application, finished by the model."""
    seconds: tuple[float, float, float]
    """Wall time of the three runs."""
    saved: tuple[list[dict[str, str]], list[dict[str, str]], list[dict[str, str]]]
    """What the application had saved after each run."""
    healed: ActResult | None = None
    """The replay on the changed application after the heal (the fourth act)."""
    healed_seconds: float = 0.0
    """Wall time of the fourth act."""
    healed_saved: list[dict[str, str]] = field(default_factory=list)
    """What the application had saved after the fourth act."""
    report_path: Path | None = None
    """The HTML report."""
    notes: list[str] = field(default_factory=list)
    """Remarks printed with the summary."""


class _Stage:
    """Launches the application in a layout and gives the computer tool that drives it."""

    def __init__(self, screen: Screen, stack: ExitStack, workdir: Path) -> None:
        self.screen, self.stack, self.workdir = screen, stack, workdir
        self.where = "a simulated contact form drawn with Pillow (no X server)"
        self._backend: DesktopBackend | None = None
        self._display = ""
        if screen == "tk":
            self._display = self._open_display()

    def _open_display(self) -> str:
        from askcache.testing.xvfb import VirtualDisplay, accepts_connections

        display = os.environ.get("DISPLAY")
        if display and accepts_connections(display):
            self.where = f"the Tk contact form on your display {display}"
            return display
        virtual = self.stack.enter_context(VirtualDisplay(1280, 800))
        self.where = f"the Tk contact form on a virtual display (Xvfb {virtual.display}, 1280x800)"
        return virtual.display

    @contextmanager
    def launch(self, layout: Layout) -> Iterator[tuple[FormView, ComputerTool]]:
        """The application, freshly started in ``layout``, and a computer tool on it."""
        if self.screen == "simulated":
            app = SimulatedFormApp(layout=layout)
            yield app, ComputerTool(app)
            return
        from askcache.testing.tk_form import TkFormApp
        from askcache.tools.desktop import DesktopBackend

        if self._backend is None:
            self._backend = DesktopBackend(self._display)
            self.stack.callback(self._backend.close)
        state = self.workdir / ".tk-form-state.json"  # hidden: not a cache file to list
        with TkFormApp(self._display, state, layout=layout) as tk_app:
            yield tk_app, ComputerTool(self._backend, settle_delay=0.3)


def run_demo(
    output_dir: Path,
    *,
    offline: bool | None = None,
    model: str | None = None,
    screen: Screen = "tk",
    progress: Callable[[str], None] | None = None,
) -> DemoOutcome:
    """Run the three acts with cache files and the report under ``output_dir``.

    ``offline=None`` uses the real model when ``ANTHROPIC_API_KEY`` is set. ``progress`` is
    called with a short line as each act starts (the command prints them on stderr).
    """
    say = progress or (lambda _: None)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / CACHE_NAME).unlink(missing_ok=True)
    shutil.rmtree(output_dir / VERSIONS_FOLDER / CACHE_NAME, ignore_errors=True)
    use_real = bool(os.environ.get("ANTHROPIC_API_KEY")) if offline is None else not offline
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with ExitStack() as stack:
        stage = _Stage(screen, stack, output_dir)
        if use_real:
            import anthropic

            if not os.environ.get("ANTHROPIC_API_KEY"):
                raise MissingApiKeyError("the demo with Claude", "askcache demo --offline")
            client = anthropic.Anthropic()
            mode = f"Claude ({model or DEFAULT_MODEL}) through the Anthropic API"
        else:
            api = stack.enter_context(MessagesApiStandIn(script))
            client = api.client()
            mode = (
                "offline: a scripted model (no AI) answering the real anthropic client "
                f"through a local Messages API stand-in at {api.base_url}"
            )

        def act(
            layout: Layout, strategy: CacheStrategy, heal: HealMode | None = None
        ) -> tuple[ActResult, float, list[dict[str, str]]]:
            with stage.launch(layout) as (view, tool):
                script.app, script.to_model = view, tool.from_screen
                agent = Agent(client, [tool], model=model or DEFAULT_MODEL)
                settings = CachingSettings(
                    strategy=strategy,
                    cache_dir=output_dir,
                    writing_settings=CacheWritingSettings(filename=CACHE_NAME),
                    execution_settings=CacheExecutionSettings(keep_step_views=True),
                    heal=heal,
                )
                started = time.monotonic()
                result = agent.act(GOAL, settings)
                elapsed = time.monotonic() - started
                time.sleep(0.2)  # let the application publish its last state
                return result, elapsed, view.saved

        say(f"1/4 recording: the model fills in the form ({mode.split(':')[0]})")
        record, t1, saved1 = act("original", CacheStrategy.RECORD)
        say(f"2/4 replaying on the unchanged form ({t1:.1f} s so far)")
        replay, t2, saved2 = act("original", CacheStrategy.EXECUTE)
        say("3/4 replaying on the changed form: expect a hand-back, then a heal")
        changed, t3, saved3 = act("banner", CacheStrategy.EXECUTE, HealMode.AUTO)
        say("4/4 replaying the healed file on the changed form")
        healed, t4, saved4 = act("banner", CacheStrategy.EXECUTE)
    outcome = DemoOutcome(
        mode=mode,
        where=stage.where,
        cache_path=output_dir / CACHE_NAME,
        record=record,
        replay=replay,
        changed=changed,
        seconds=(t1, t2, t3),
        saved=(saved1, saved2, saved3),
        healed=healed,
        healed_seconds=t4,
        healed_saved=saved4,
    )
    outcome.report_path = _report(outcome, output_dir)
    return outcome


def _report(outcome: DemoOutcome, output_dir: Path) -> Path:
    storage = LocalCacheStorage(output_dir)
    cache_file = load_cache_file(storage, CACHE_NAME)
    recorded = recorded_views(outcome.record.conversation.messages, cache_file)

    replays = iter(r for r in open_ledger(storage).records(CACHE_NAME) if r.event == "replay")

    def saved(run: ActResult) -> str | None:
        """The run's replay entry in words (the runs were made in turn, one entry each)."""
        if not run.ledger_entries:
            return None
        entry = next(replays, None)
        return None if entry is None else savings_text(entry)

    sections = [
        ReplaySection(
            title,
            run.replay,
            views=run.views,
            model_steps=model_actions(run.conversation.messages),
            saved=saved(run),
        )
        for title, run in (
            ("Replay on the unchanged application", outcome.replay),
            ("Replay after the application changed (a notice banner)", outcome.changed),
            ("Replay of the healed trajectory on the changed application", outcome.healed),
        )
        if run is not None
        if run.replay is not None
    ]
    return write_html_report(
        output_dir / "report.html",
        title="askcache demo: recorded vs current regions",
        recorded=recorded,
        sections=sections,
        summary=format_summary(outcome, with_report=False),
    )


def _steps_table(replay: ReplayResult) -> list[str]:
    lines = ["      step  action        check"]
    for step in replay.steps:
        check = step.check_summary()
        if step.validated:
            check += ": " + ("ok" if step.matched else "MISMATCH -> handed back")
        lines.append(f"      {step.step_index:>4}  {step.action:<12}  {check}")
    return lines


def format_summary(outcome: DemoOutcome, *, with_report: bool = True) -> str:
    """The readable report printed by ``askcache demo``."""
    record, replay, changed = outcome.record, outcome.replay, outcome.changed
    t1, t2, t3 = outcome.seconds
    tokens = record.conversation.usage.total_tokens
    lines = [
        "askcache demo",
        f"  model: {outcome.mode}",
        f"  screen: {outcome.where}",
        f"  task: {GOAL}",
        "",
        f"1. Record: {record.model_calls} model calls, {tokens:,} tokens, {t1:.2f} s",
        f"   the app saved {outcome.saved[0]}; wrote {outcome.cache_path}",
    ]
    if replay.replay is not None:
        r = replay.replay
        lines += [
            "",
            f"2. Replay on the unchanged app: {replay.model_calls} model calls, {t2:.2f} s, "
            f"{r.status}: {r.steps_run} steps, {r.validated} validated, "
            f"{r.unvalidated} unvalidated",
            *_steps_table(r),
            f"   the app saved {outcome.saved[1]}",
        ]
    if changed.replay is not None:
        c = changed.replay
        lines += [
            "",
            "3. Replay after the app changed (a notice banner pushes the form down):",
            *_steps_table(c),
            f"   {c.status} at step {c.stopped_at_step}: {c.reason}",
            f"   the model took over: {changed.model_calls} model calls, {t3:.2f} s, "
            f"finished {changed.status}; the app saved {outcome.saved[2]}",
        ]
        heal = changed.heal
        if heal is not None:
            lines.append(
                f"   healed ({heal.verified_by}): steps {heal.healed_steps} from the model "
                f"are now the trajectory, {heal.version}"
            )
        elif not any(kept.item.kind == "heal" for kept in changed.kept_locally):
            lines.append("   not healed: the run could not be verified")
    healed = outcome.healed
    if healed is not None and healed.replay is not None:
        h = healed.replay
        lines += [
            "",
            f"4. Replay after the heal, on the changed app: {healed.model_calls} model calls, "
            f"{outcome.healed_seconds:.2f} s, {h.status}: {h.steps_run} steps, "
            f"{h.validated} validated",
            f"   the app saved {outcome.healed_saved}",
        ]
    calls = record.model_calls - replay.model_calls
    spared = tokens - replay.conversation.usage.total_tokens
    if "offline" in outcome.mode:
        lines += [
            "",
            f"The replay {saving_words(calls, spared)}",
            "  (offline: token counts are the stand-in's estimates, and the scripted model answers",
            "  at once, so wall time is not compared: the replay waits for the screen to settle,",
            "  which is slower than a model that thinks in no time, and far faster than Claude)",
        ]
    else:
        said = saving_words(calls, spared, t1 - t2, than=f"the recording ({t1:.2f} s)")
        lines += ["", f"The replay {said}"]
    if with_report and outcome.report_path is not None:
        lines.append(f"Report with recorded vs current regions: {outcome.report_path}")
    runs = (outcome.record, outcome.replay, outcome.changed, outcome.healed)
    lines += [line for run in runs if run is not None for line in run.not_shared_lines()]
    return "\n".join(lines)
