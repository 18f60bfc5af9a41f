"""Re-joining after a hand-back, on real X applications under Xvfb (Debian's xedit and xcalc).

The issue: a replay whose click's effect differed handed back; the model took one screenshot
and meant to stop, and right after that screenshot the replay took over again and pressed
Return on the screen it had flagged. Here each case records a task once through the real
``anthropic`` client and the local stand-in, replays it with ``strategy="execute"`` on the
real desktop backend, and reads what reached the application from the X server itself: an
XRecord log of every key and button event (:class:`~askcache.testing.InputLog`), the file
xedit saved, and xcalc's display. Each re-join condition of :mod:`askcache.replay.rejoin`
gets a case where it fails (the replay stays out) and where every condition holds (it takes
over again).

xedit's fault is real: the application stops answering (``SIGSTOP``) as the replay clicks,
so the click lands but nothing is drawn; the replay sees no effect and hands back; the
application then catches up (``SIGCONT``) before the model's first look, so the screen soon
passes the next step's check. xcalc's fault is a key rebound to another digit with its label
unchanged: the display shows 7 where the recording showed 3, away from the key.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bench.faults import CALC_GOAL, CALC_SIZE, XCALC_DISPLAY_BOX, record_xcalc
from PIL import Image, ImageChops

from askcache import (
    ActResult,
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
    open_ledger,
)
from askcache.cli.html_report import rejoin_lines
from askcache.foundation.actions import parse_action
from askcache.foundation.messages import ToolUseBlockParam
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.testing import (
    FormFillingScript,
    InputLog,
    MessagesApiStandIn,
    SimulatedFormApp,
    VirtualDisplay,
    run_on_display,
    text_reply,
    tool_use_reply,
)
from askcache.testing._process import stop_process
from askcache.tools.desktop import DesktopBackend
from askcache.tools.tool import ToolOutput

pytestmark = pytest.mark.integration

SCREEN = (1024, 768)
WAIT = 30.0
"""Seconds before a wait for an event gives up (a failure, never a margin)."""

LIST = "milk\neggs\nbread"
GOAL = "Add apples after bread in the shopping list and save it"
BELOW_TEXT = [150, 200]
"""Below the last line of the list: xedit puts the caret at the end of the text (after
"bread")."""
LINE_ONE = [30, 117]
SAVE = [55, 10]


# What reaches the X server ---------------------------------------------------------------


def _clicks_and_keys(events: list[tuple[str, int]]) -> list[str]:
    return [kind for kind, _ in events if kind in ("button_press", "key_press")]


# xedit ---------------------------------------------------------------------------------


def _wait_for(
    backend: DesktopBackend,
    settled: bool,
    changed_from: Image.Image | None,
    shows: Callable[[Image.Image], bool] | None = None,
) -> None:
    """Wait until the screen differs from ``changed_from`` (when given) and ``shows`` what
    it must (when given), and then, when ``settled``, until two looks in a row are the same."""
    deadline = time.monotonic() + WAIT
    previous: Image.Image | None = None
    while time.monotonic() < deadline:
        now = backend.screenshot().convert("RGB")
        unchanged = (
            changed_from is not None and ImageChops.difference(now, changed_from).getbbox() is None
        )
        if unchanged or (shows is not None and not shows(now)):
            time.sleep(0.05)
            continue
        changed_from = shows = None
        if not settled or (
            previous is not None and ImageChops.difference(now, previous).getbbox() is None
        ):
            return
        previous = now
        time.sleep(0.2)
    raise AssertionError("the screen did not change and settle")


def _shows_the_list(screen: Image.Image) -> bool:
    """xedit's window is drawn: a white text area, the three lines' ink, the Save label."""
    grey = screen.convert("L")
    white = grey.getpixel((300, 250)) == 255
    ink = [grey.crop(box).getextrema()[0] < 100 for box in [(17, 111, 60, 152), (40, 3, 70, 16)]]
    return white and all(ink)


@contextmanager
def xedit(backend: DesktopBackend, display: str, path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """xedit on ``path``, once its window shows the file."""
    blank = backend.screenshot().convert("RGB")
    process = subprocess.Popen(
        ["xedit", "-geometry", "600x400+0+0", str(path)],
        env={**os.environ, "DISPLAY": display},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(backend, settled=True, changed_from=blank, shows=_shows_the_list)
        yield process
    finally:
        os.kill(process.pid, signal.SIGCONT)
        stop_process(process)


class FreezingTool(ComputerTool):
    """The computer tool on the real desktop; stops xedit (``SIGSTOP``) just before the
    replay's first click, and lets it go on (:meth:`thaw`) once the replay has handed back."""

    def __init__(self, backend: DesktopBackend, process: subprocess.Popen[bytes]) -> None:
        super().__init__(backend, settle_delay=0.3)
        self.desktop, self.process = backend, process
        self.frozen: Image.Image | None = None

    def run(self, block: ToolUseBlockParam) -> ToolOutput:
        action = parse_action(block)
        first_click = block.replayed and action is not None and action.name == "left_click"
        if first_click and self.frozen is None:
            self.frozen = self.desktop.screenshot().convert("RGB")
            os.kill(self.process.pid, signal.SIGSTOP)
        return super().run(block)

    def thaw(self) -> None:
        """Let xedit go on and wait until it has drawn the click it missed."""
        assert self.frozen is not None
        os.kill(self.process.pid, signal.SIGCONT)
        _wait_for(self.desktop, settled=True, changed_from=self.frozen)


class AfterHandBack:
    """The scripted model of a replay: its replies, in order; before the first one (the
    replay has just handed back) xedit catches up on the click it missed."""

    def __init__(self, tool: FreezingTool, replies: list[dict[str, Any]]) -> None:
        self.tool, self.replies = tool, list(replies)
        self.calls = 0

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.calls == 0:
            self.tool.thaw()
        self.calls += 1
        return self.replies.pop(0)


def _settings(cache_dir: Path, strategy: str, filename: str, **execution: Any) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(filename=filename, parameters={"item": "apples"}),
        execution_settings=CacheExecutionSettings(parameter_values={"item": "apples"}, **execution),
    )


@dataclass
class XeditRun:
    result: ActResult
    events: list[tuple[str, int]]
    """Key and button events the X server received during the replay."""
    saved: str
    """The file as xedit left it on disk."""
    model_calls: int


class Xedit:
    """The shopping-list task, recorded once; each replay on a fresh copy of the file at the
    same path (the path shows on xedit's status line, part of the end state)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.file = folder / "list.txt"
        self.cache = folder / "cache"
        self._recorded = False

    def record(self) -> None:
        self.file.write_text(LIST)
        script = [
            tool_use_reply("computer", {"action": "screenshot"}),
            tool_use_reply("computer", {"action": "left_click", "coordinate": BELOW_TEXT}),
            tool_use_reply("computer", {"action": "key", "text": "Return"}),
            tool_use_reply("computer", {"action": "type", "text": "apples"}),
            tool_use_reply("computer", {"action": "left_click", "coordinate": SAVE}),
            text_reply("apples added after bread and saved"),
        ]
        with (
            VirtualDisplay(*SCREEN) as screen,
            _backend(screen.display) as backend,
            xedit(backend, screen.display, self.file),
            MessagesApiStandIn(script) as api,
        ):
            tool = ComputerTool(backend, settle_delay=0.3)
            result = Agent(api.client(), [tool], model="claude-test").act(
                GOAL, _settings(self.cache, "record", "list.json")
            )
        assert result.conversation.recorded_file == "list.json"
        assert self.file.read_text() == LIST + "\napples"
        self._recorded = True

    def replay(self, replies: list[dict[str, Any]]) -> XeditRun:
        if not self._recorded:
            self.record()
        self.file.write_text(LIST)
        with (
            VirtualDisplay(*SCREEN) as screen,
            _backend(screen.display) as backend,
            xedit(backend, screen.display, self.file) as process,
        ):
            tool = FreezingTool(backend, process)
            model = AfterHandBack(tool, replies)
            log = InputLog(screen.display, SCREEN)
            try:
                with MessagesApiStandIn(model) as api:
                    result = Agent(api.client(), [tool], model="claude-test").act(
                        GOAL, _settings(self.cache, "execute", "list.json")
                    )
                events = log.events()
            finally:
                log.close()
        return XeditRun(result, events, self.file.read_text(), model.calls)


@contextmanager
def _backend(display: str) -> Iterator[DesktopBackend]:
    backend = DesktopBackend(display)
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture(scope="module")
def xedit_task(tmp_path_factory: pytest.TempPathFactory) -> Xedit:
    return Xedit(tmp_path_factory.mktemp("xedit"))


def _decisions(result: ActResult) -> list[tuple[bool, str | None]]:
    assert result.replay is not None
    return [(d.rejoined, d.refused_by) for d in result.replay.rejoin_decisions]


SCREENSHOT = tool_use_reply("computer", {"action": "screenshot"})
STOP = text_reply("The replay flagged the list; I stop here.")


def test_a_screenshot_after_a_hand_back_never_lets_the_replay_act_on_the_flagged_screen(
    xedit_task: Xedit,
) -> None:
    # The observation: effect mismatch -> hand-back; the model takes one screenshot
    # and then stops. Nothing may reach xedit after the hand-back: the only click the X
    # server saw is the replay's step 1, no key at all, and the file is as it was.
    run = xedit_task.replay([SCREENSHOT, STOP])
    replay = run.result.replay
    assert replay is not None
    assert (replay.status, replay.stopped_at_step) == ("handed_back", 1), replay.reason
    assert "the action had no effect" in (replay.reason or "")
    assert run.model_calls == 2  # the screenshot, then the stop: the model had every turn
    assert _clicks_and_keys(run.events) == ["button_press"], run.events
    assert run.saved == LIST
    assert _decisions(run.result) == [(False, "model_acted")]
    decision = replay.rejoin_decisions[0]
    assert (decision.step_index, decision.failed_check) == (2, "effect")
    assert "has not acted since the hand-back" in decision.reason
    # ... and the run ledger keeps the refusal with its reason
    entry = open_ledger(LocalCacheStorage(xedit_task.cache)).records("list.json")[-1]
    assert [(d.rejoined, d.refused_by) for d in entry.rejoin_decisions] == [(False, "model_acted")]


def test_a_rejoin_needs_the_model_to_have_acted_and_then_resumes_after_the_flagged_step(
    xedit_task: Xedit,
) -> None:
    # (a) fails after the screenshot; after the model's own click (the caret stays at the end
    # of the list) every condition holds: the replay takes over at step 2, never repeating
    # step 1, and finishes the task.
    click = tool_use_reply("computer", {"action": "left_click", "coordinate": BELOW_TEXT})
    run = xedit_task.replay([SCREENSHOT, click])
    replay = run.result.replay
    assert replay is not None
    assert replay.status == "completed", replay.reason
    assert _decisions(run.result) == [(False, "model_acted"), (True, None)]
    assert replay.rejoin_decisions[1].step_index == 2
    # the replay's click, the model's click, then Return, the typed word and Save
    kinds = _clicks_and_keys(run.events)
    assert kinds[:2] == ["button_press", "button_press"]
    assert kinds.count("button_press") == 3  # step 1 was not clicked again
    assert run.saved == LIST + "\napples"
    assert run.model_calls == 2


def test_a_model_that_acts_and_says_it_stops_keeps_the_turn(xedit_task: Xedit) -> None:
    # (c): the model acts (so (a) holds, and the screen passes) but says it stops: the
    # replay stays out, and nothing after the model's own click reaches xedit.
    click = tool_use_reply(
        "computer",
        {"action": "left_click", "coordinate": BELOW_TEXT},
        text="The list has changed since the recording. I'll stop here after this click.",
    )
    run = xedit_task.replay([click, text_reply("Stopped.")])
    replay = run.result.replay
    assert replay is not None
    assert replay.status == "handed_back"
    assert _decisions(run.result) == [(False, "model_continues")]
    assert "said it stops" in replay.rejoin_decisions[0].reason
    assert _clicks_and_keys(run.events) == ["button_press", "button_press"], run.events
    assert run.saved == LIST


def test_a_rejoin_needs_the_next_steps_check_to_pass(xedit_task: Xedit) -> None:
    # (b), first half: the model clicks on line 1, so Return would land there: step 2's
    # check fails and the replay stays out; once the model has put the caret back, it re-joins.
    to_line_one = tool_use_reply("computer", {"action": "left_click", "coordinate": LINE_ONE})
    back = tool_use_reply("computer", {"action": "left_click", "coordinate": BELOW_TEXT})
    run = xedit_task.replay([to_line_one, back])
    replay = run.result.replay
    assert replay is not None
    assert _decisions(run.result) == [(False, "screen"), (True, None)]
    assert "step 2 does not pass its check" in replay.rejoin_decisions[0].reason
    assert replay.status == "completed", replay.reason
    assert run.saved == LIST + "\napples"  # Return went after bread, not into line 1


# xcalc -----------------------------------------------------------------------------------

REBOUND_3 = "button49.translations: #override<Btn1Down>,<Btn1Up>:digit(7)unset()"
"""xcalc's key 3 enters 7; its label still reads 3."""


def test_a_rejoin_needs_the_check_that_failed_to_pass_again(tmp_path: Path) -> None:
    # (b), second half. 12+30= recorded on xcalc; the key 3, rebound, enters 7: step 4's
    # effect away from its point (the display) differs and the replay hands back. On that
    # screen the next step (click 0) passes its own check: only the failed check keeps the
    # replay out. The model clears the entry (it acted, the display shows 0: still not the
    # recorded 3), then types 3 on the keyboard: now every condition holds, and the replay
    # clicks 0 and = itself.
    recorded = record_xcalc(tmp_path / "record")
    cache = tmp_path / "replay"
    cache.mkdir()
    (cache / "xcalc.json").write_bytes((tmp_path / "record" / "xcalc.json").read_bytes())
    replies = [
        tool_use_reply("computer", {"action": "key", "text": "Delete"}),
        tool_use_reply("computer", {"action": "key", "text": "3"}),
    ]
    with VirtualDisplay(*CALC_SIZE) as screen, _backend(screen.display) as backend:
        command = ["xcalc", "-geometry", "260x360+0+0", "-xrm", f"XCalc*ti.{REBOUND_3}"]
        with run_on_display(screen.display, *command), MessagesApiStandIn(replies) as api:
            log = InputLog(screen.display, CALC_SIZE)
            try:
                result = Agent(
                    api.client(), [ComputerTool(backend, settle_delay=0.3)], model="claude-test"
                ).act(
                    CALC_GOAL,
                    CachingSettings(
                        strategy="execute",
                        cache_dir=cache,
                        writing_settings=CacheWritingSettings(filename="xcalc.json"),
                    ),
                )
                events = log.events()
            finally:
                log.close()
            _wait_for(backend, settled=True, changed_from=None)
            display = backend.screenshot().crop(XCALC_DISPLAY_BOX).tobytes()
    replay = result.replay
    assert replay is not None
    assert replay.handback_steps == [4]  # the click on the rebound 3
    assert _decisions(result) == [(False, "screen"), (True, None)], replay.rejoin_decisions
    refused = replay.rejoin_decisions[0]
    assert (refused.step_index, refused.failed_check) == (5, "effect")
    assert "the effect of step 4 still fails" in refused.reason
    assert "step 5 does not pass" not in refused.reason  # the next step's check passed
    assert replay.status == "completed", replay.reason
    assert display == recorded  # 12+30 = 42, as recorded
    assert result.model_calls == 2
    # four replayed clicks (1 2 + 3), the model's two keys, then the replay's 0 and =
    kinds = _clicks_and_keys(events)
    assert kinds == ["button_press"] * 4 + ["key_press"] * 2 + ["button_press"] * 2, events
    lines = rejoin_lines(replay.rejoin_decisions)
    assert lines[0].startswith("at step 5: refused (screen): on the latest screenshot")


# Asked by the model --------------------------------------------------------------------


def test_resume_cached_trajectory_obeys_the_same_rules(tmp_path: Path) -> None:
    # The model asks at once, with the notice still over the form: refused, with the reason
    # in the tool's answer. Once it has dismissed the notice, the replay takes over.
    name = CacheWritingSettings(filename="login.json", parameters={"user": "alice"})
    recording = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(recording, "alice")) as api:
        recorded = Agent(api.client(), [ComputerTool(recording)]).act(
            "Log in as alice",
            CachingSettings(strategy="record", cache_dir=tmp_path, writing_settings=name),
        )
    assert recorded.conversation.recorded_file == "login.json"
    app = SimulatedFormApp(layout="banner")
    replies = [
        tool_use_reply("resume_cached_trajectory", {}),
        tool_use_reply("computer", {"action": "key", "text": "Escape"}),
    ]
    with MessagesApiStandIn(replies) as api:
        result = Agent(api.client(), [ComputerTool(app)]).act(
            "Log in as bob",
            CachingSettings(
                strategy="execute",
                cache_dir=tmp_path,
                writing_settings=CacheWritingSettings(filename="login.json"),
                execution_settings=CacheExecutionSettings(parameter_values={"user": "bob"}),
            ),
        )
    replay = result.replay
    assert replay is not None
    assert _decisions(result) == [(False, "screen"), (True, None)]
    asked = replay.rejoin_decisions[0]
    assert (asked.requested, asked.step_index, asked.failed_check) == (True, 1, "fingerprint")
    answers = [
        block
        for message in result.conversation.messages
        for block in message.tool_results
        if block.is_error
    ]
    assert len(answers) == 1
    assert "does not resume at step 1" in str(answers[0].content)
    assert replay.status == "completed"
    assert app.saved == [{"name": "bob", "email": ""}]
