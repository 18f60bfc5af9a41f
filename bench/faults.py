"""Fault injection: replay a recorded task on a real application that misbehaves, and count
the actions the replay got wrong.

    python bench/faults.py [--only NAME ...] [--no-write]

Each scenario records the task once on the healthy application (a scripted model through the
real ``anthropic`` client and :class:`~askcache.testing.MessagesApiStandIn`), then replays it
with ``strategy="execute"`` and the default :class:`~askcache.CacheExecutionSettings` on the
faulty one, under Xvfb. When the replay hands the turn back, a scripted model does the
sensible thing: it closes what covers the form (so the replay can re-join), finishes the task,
or stops when the application does not answer.

A **wrong action** is an action the replay executed on a screen that no longer matched the
recording, read from the application itself just before the action runs: the Tk form's
published state (a changed layout, a dialog or a dimmed backdrop on screen, input already
ignored, a click whose point is over another widget than when recorded, typing into a field
that is not the recorded one or not empty), xcalc's button under the point (xwininfo) when that
button was relabelled.

``tests/integration/test_fault_injection.py`` runs the same scenarios and asserts on them;
this script writes their table into docs/benchmarks.md (section ``faults``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from askcache import (
    ActResult,
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.foundation.actions import ACTING_ACTIONS, Action, parse_action
from askcache.foundation.geometry import Point
from askcache.foundation.messages import MessageParam, ToolUseBlockParam
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    TkFormApp,
    VirtualDisplay,
    run_on_display,
    text_reply,
    tool_use_reply,
)
from askcache.tools.desktop import DesktopBackend
from askcache.tools.tool import ToolOutput

GOAL = "Type Ada Lovelace into the Name field and press Save"
ADA = {"name": "Ada Lovelace", "email": ""}
CALC_GOAL = "Compute 12+30 in xcalc"
CALC_KEYS = (47, 48, 50, 49, 52, 55)
"""xcalc's buttons (app-defaults numbers) for 1 2 + 3 0 =."""
CALC_SIZE = (1280, 800)
RECORDED_SCREEN = (1280, 800)

Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class Fault:
    """One scenario: what is wrong with the application, and what should come of it."""

    name: str
    """Row label."""
    app: Literal["tk", "xcalc"] = "tk"
    form_args: tuple[str, ...] = ()
    """Command-line options of the Tk form (its faults)."""
    screen: tuple[int, int] = RECORDED_SCREEN
    zoom: float = 1.0
    fail_click: int | None = None
    """The backend raises on this click (1-based, every click counted)."""
    fail_looks_after_result_of_click: tuple[int, int] | None = None
    """``(click, looks)``: the backend raises on this many screenshots in a row right after
    the result of this click (1-based): the looks of the replay's wait for its effect."""
    fail_result_of_click: int | None = None
    """The backend raises on the first screenshot after this click (1-based): the click's
    own result, so its tool call fails after the click was done."""
    xcalc_resources: tuple[str, ...] = ()
    """X resources for xcalc (``-xrm XCalc*ti.RESOURCE``)."""
    calc_keys: tuple[int, ...] = CALC_KEYS
    """The xcalc buttons the task clicks (app-defaults numbers)."""
    changed_button: int | None = None
    """The xcalc button the resources change: a replayed click on it is wrong."""
    status: str = "handed_back"
    """The status the replay must end with."""
    rejoins: int | None = None
    """The re-joins it must make (``None``: not asserted)."""
    saved: bool = True
    """The contact must end up saved exactly once (the model finished or the replay did)."""
    unavoidable: int = 0
    """Wrong actions no check before acting can prevent (a key rebound while its label looks
    as recorded: the click that reveals it); the replay must hand back right after them."""
    weakness: str | None = None
    """A fault the replay does not handle yet: why, for the tests' strict xfail."""


FAULTS: list[Fault] = [
    Fault("none (healthy app)", status="completed", rejoins=0),
    Fault("layout changed before step 1", form_args=("--change-after", "0")),
    Fault("layout changes as step 1 (click Name) lands", form_args=("--change-after", "1")),
    Fault("layout changes as step 2 (type) lands", form_args=("--change-after", "13")),
    Fault(
        "dialog appears before step 3 (over Save)",
        form_args=("--dialog-after", "13"),
        status="completed",
        rejoins=1,
    ),
    Fault(
        "dialog appears before step 2 (away from the Name field)",
        form_args=("--dialog-after", "1"),
        status="completed",
        rejoins=1,
    ),
    Fault(
        "dimmed backdrop before step 2",
        form_args=("--backdrop-after", "1"),
        status="completed",
        rejoins=1,
    ),
    Fault("tool error on the Save click", fail_click=2),
    Fault(
        "screenshot fails: the Name click's result",
        fail_result_of_click=1,
        rejoins=0,  # the model's screenshot is no progress; it then types, and the form moved on
    ),
    Fault(
        "screenshot fails: the Name click's result (slow app)",
        form_args=("--slow", "0.8"),
        fail_result_of_click=1,
        rejoins=0,  # as above; the hand-back waited for the focus, so the model types, once
    ),
    Fault(
        "screenshots fail: 4 in a row after the Name click's result",
        fail_looks_after_result_of_click=(1, 4),
    ),
    Fault(
        # the first look of the wait for the slow form's answer to the Name click
        "screenshot fails inside the replay's wait (slow app)",
        form_args=("--slow", "0.8"),
        fail_looks_after_result_of_click=(1, 1),
        status="completed",
        rejoins=0,  # a look skipped: the wait goes on
    ),
    Fault(
        "screenshot fails: the Save click's result (slow app)",
        form_args=("--slow", "0.8"),
        fail_result_of_click=2,
    ),
    Fault("slow app (answers after 0.8 s)", form_args=("--slow", "0.8"), status="completed"),
    Fault("frozen app (ignores input)", form_args=("--freeze-after", "0"), saved=False),
    Fault("window moved", form_args=("--position", "200", "150"), status="completed", rejoins=0),
    Fault(
        "screen resized, same aspect (1920x1200)",
        screen=(1920, 1200),
        zoom=1.5,  # the form drawn at 1.5x: the default hash for other densities is strict,
        status="completed",  # but each click's label reads as recorded and its look passes
    ),
    Fault("screen resized, other aspect (1024x768)", screen=(1024, 768)),
    Fault("Name field pre-filled", form_args=("--prefill", "Grace"), status="completed"),
    Fault(
        "xcalc: key 3 relabelled 7",
        app="xcalc",
        xcalc_resources=("button49.label: 7",),
        changed_button=49,
        saved=False,
    ),
    Fault(
        "xcalc: key 3 relabelled and rebound to 7",
        app="xcalc",
        xcalc_resources=(
            "button49.label: 7",
            "button49.translations: #override<Btn1Down>,<Btn1Up>:digit(7)unset()",
        ),
        changed_button=49,
        saved=False,
    ),
    Fault(
        "xcalc: key 3 rebound to 7, label unchanged",
        app="xcalc",
        xcalc_resources=("button49.translations: #override<Btn1Down>,<Btn1Up>:digit(7)unset()",),
        changed_button=49,
        saved=False,
        unavoidable=1,  # the key looks exactly as recorded: the display shows 7 after it
    ),
    Fault(
        "xcalc: x! rebound to x², label unchanged (3 x!: the display near the key)",
        app="xcalc",
        calc_keys=(49, 22),  # 3, x!: 6 when recorded; x! sits 146 px below the display
        xcalc_resources=("button22.translations: #override<Btn1Down>,<Btn1Up>:square()unset()",),
        changed_button=22,
        saved=False,
        unavoidable=1,  # looks as recorded; the display then shows 9, not 6
    ),
]


@dataclass
class Outcome:
    """What one scenario measured."""

    fault: Fault
    wrong: list[str]
    """Each wrong action, described."""
    status: str
    stopped_at_step: int | None
    reason: str | None
    model_calls: int
    calls_after_rejoin: int | None
    """Model calls after the first re-join (``None``: no re-join)."""
    rejoins: int
    handbacks: int
    handed_back_at: list[int]
    """The step of each hand-back, in order (from the messages the model was given)."""
    seconds: float
    saved: list[dict[str, str]] = field(default_factory=list)
    """What the Tk form saved (empty for xcalc)."""
    display: str = ""
    """xcalc: what the run left on its display, as a short description."""

    @property
    def wrong_actions(self) -> int:
        return len(self.wrong)


class FaultyDesktop(DesktopBackend):
    """The real desktop backend, with a click or screenshots that raise (injected faults)."""

    def __init__(
        self,
        display: str,
        *,
        fail_click: int | None = None,
        fail_result_of_click: int | None = None,
        fail_looks_after_result_of_click: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(display)
        self.fail_click = fail_click
        self.fail_result_of_click = fail_result_of_click
        self.fail_looks = fail_looks_after_result_of_click
        self.clicks = 0
        self._result_due = False
        self._looks_due = 0
        """Screenshots still to fail after the result of the click ``fail_looks`` names."""

    def click(self, point: Point | None, button: str, count: int, modifiers: str | None) -> None:
        self.clicks += 1
        if self.clicks == self.fail_click:
            raise RuntimeError("injected fault: the X server refused the click")
        super().click(point, button, count, modifiers)
        self._result_due = self.clicks == self.fail_result_of_click
        if self.fail_looks is not None and self.clicks == self.fail_looks[0]:
            self._looks_due = -1  # the click's result comes first, then the failing looks

    def screenshot(self) -> Any:
        due, self._result_due = self._result_due, False
        if self._looks_due == -1:  # the click's own result
            self._looks_due = self.fail_looks[1] if self.fail_looks else 0
        elif self._looks_due > 0:
            self._looks_due -= 1
            due = True
        if due:
            raise RuntimeError("injected fault: the screenshot could not be taken")
        return super().screenshot()


class Witness(ComputerTool):
    """The computer tool, with a look at the application before each acting call."""

    def __init__(self, backend: DesktopBackend, **options: Any) -> None:
        super().__init__(backend, settle_delay=0.3, **options)
        self.before: Callable[[ToolUseBlockParam, Action], None] | None = None

    def run(self, block: ToolUseBlockParam) -> ToolOutput:
        action = parse_action(block)
        if self.before is not None and action is not None and action.name in ACTING_ACTIONS:
            self.before(block, action)
        return super().run(block)


# The Tk form -------------------------------------------------------------------------------


def _widget_at(state: dict[str, Any], point: Point) -> str | None:
    for name, (left, top, right, bottom) in state["widgets"].items():
        if left <= point[0] < right and top <= point[1] < bottom:
            return str(name)
    return None


class FormWitness:
    """Records what each model action touched; judges each replayed action against that."""

    def __init__(self, app: TkFormApp, tool: ComputerTool) -> None:
        self.app, self.tool = app, tool
        self.clicks: dict[tuple[int, int], str | None] = {}
        self.typed_into: str | None = None
        self.wrong: list[str] = []

    def record(self, block: ToolUseBlockParam, action: Action) -> None:
        state = self._state()
        if action.point is not None:
            self.clicks[action.point] = _widget_at(state, self.tool.to_screen(action.point))
        elif action.name == "type":
            self.typed_into = state["focus"]

    def judge(self, block: ToolUseBlockParam, action: Action) -> None:
        if not block.replayed:
            return
        state = self._state()
        what = f"replayed {action.name} {block.input.get('coordinate') or block.input.get('text')}"
        faults = [f for f in state["faults"] if f != "frozen"]
        if faults:
            self.wrong.append(f"{what} with {', '.join(faults)} on screen")
        elif state["ignored"]:
            self.wrong.append(f"{what} after the form had ignored {state['ignored']} inputs")
        elif action.point is not None:
            target = _widget_at(state, self.tool.to_screen(action.point))
            expected = self.clicks[_nearest(self.clicks, action.point, self.tool)]
            if target != expected:
                self.wrong.append(f"{what} landed on {target}, recorded on {expected}")
        elif action.name == "type":
            focus = state["focus"]
            if focus != self.typed_into or (focus and state["values"][focus]):
                value = state["values"].get(focus or "", "")
                self.wrong.append(f"{what} into {focus} holding {value!r}")

    def _state(self) -> dict[str, Any]:
        return self.app.current()  # every input delivered so far handled


def _nearest(
    recorded: dict[tuple[int, int], str | None], point: Point, tool: ComputerTool
) -> tuple[int, int]:
    return min(recorded, key=lambda p: (p[0] - point[0]) ** 2 + (p[1] - point[1]) ** 2)


class FormModel:
    """The scripted model after a hand-back: close what covers the form, stop when the form
    ignores input, otherwise fill the form (:class:`FormFillingScript`).

    It reads the form as the replay left it (a hand-back on a screen that does not show
    what a replayed step did yet makes it repeat that step), but after its own action it
    waits for the form's answer, as a model that sees nothing changed yet would wait."""

    def __init__(self, app: TkFormApp, tool: ComputerTool) -> None:
        self.app, self.tool = app, tool
        self.fill = FormFillingScript(app, "Ada Lovelace", to_model=tool.from_screen)
        self.acted = False
        """True when its last reply was an action whose answer it has not seen yet."""

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        reply = self._decide(request)
        content = reply.get("content", [])
        self.acted = any(
            block.get("type") == "tool_use" and block["input"].get("action") != "screenshot"
            for block in content
        )
        return reply

    def _decide(self, request: dict[str, Any]) -> dict[str, Any]:
        last = request["messages"][-1]
        saw_screen = isinstance(last.get("content"), list) and any(
            block.get("type") == "tool_result" for block in last["content"]
        )
        if not saw_screen:
            return tool_use_reply("computer", {"action": "screenshot"})
        state = self.app.settled() if self.acted else self.app.current()
        if state["ignored"]:
            return text_reply("The form does not respond to input; I stop here.")
        for button in ("dialog_close", "backdrop_continue"):
            if button in state["widgets"]:
                point = self.tool.from_screen(self.app.center(button))
                return tool_use_reply("computer", {"action": "left_click", "coordinate": point})
        return self.fill(request)


def _settings(cache_dir: Path, strategy: str, filename: str) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(filename=filename),
        execution_settings=CacheExecutionSettings(),
    )


@contextmanager
def _desktop(
    size: tuple[int, int], fault: Fault | None = None
) -> Iterator[tuple[str, FaultyDesktop]]:
    with VirtualDisplay(*size) as screen:
        backend = FaultyDesktop(
            screen.display,
            fail_click=fault.fail_click if fault else None,
            fail_result_of_click=fault.fail_result_of_click if fault else None,
            fail_looks_after_result_of_click=(
                fault.fail_looks_after_result_of_click if fault else None
            ),
        )
        try:
            yield screen.display, backend
        finally:
            backend.close()


def record_form(cache_dir: Path, work: Path) -> dict[tuple[int, int], str | None]:
    """Record the form task on the healthy form; returns the recorded click targets."""
    with (
        _desktop(RECORDED_SCREEN) as (display, backend),
        TkFormApp(display, work / "state.json") as app,
    ):
        tool = Witness(backend)
        witness = FormWitness(app, tool)
        tool.before = witness.record
        script = FormFillingScript(app, "Ada Lovelace", to_model=tool.from_screen)
        with MessagesApiStandIn(script) as api:
            result = Agent(api.client(), [tool], model="claude-test").act(
                GOAL, _settings(cache_dir, "record", "form.json")
            )
        if result.status != "done" or result.conversation.recorded_file is None:
            raise RuntimeError(f"recording failed: {result.conversation.reason}")
        return witness.clicks


def run_form(fault: Fault, cache_dir: Path, work: Path, recorded: dict[Any, Any]) -> Outcome:
    """Replay the form task on the form with ``fault``."""
    with (
        _desktop(fault.screen, fault) as (display, backend),
        TkFormApp(
            display, work / "state.json", zoom=fault.zoom, extra_args=list(fault.form_args)
        ) as app,
    ):
        tool = Witness(backend)
        witness = FormWitness(app, tool)
        witness.clicks, witness.typed_into = dict(recorded), "name"
        tool.before = witness.judge
        with MessagesApiStandIn(FormModel(app, tool)) as api:
            started = time.monotonic()
            result = Agent(api.client(), [tool], model="claude-test").act(
                GOAL, _settings(cache_dir, "execute", "form.json")
            )
            seconds = time.monotonic() - started
        saved = app.settled()["saved"]  # a slow form's last inputs applied
        return _outcome(fault, result, witness.wrong, seconds, saved=saved)


# xcalc -------------------------------------------------------------------------------------


def _xcalc(display: str, *resources: str) -> Any:
    command = ["xcalc", "-geometry", "260x360+0+0"]
    for resource in resources:
        command += ["-xrm", f"XCalc*ti.{resource}"]
    return run_on_display(display, *command)


def xcalc_buttons(display: str) -> list[Box]:
    """xcalc's 55 buttons (TI layout), in app-defaults order, as screen boxes (xwininfo)."""
    text = subprocess.run(
        ["xwininfo", "-root", "-tree"],
        env={"DISPLAY": display, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    boxes = []
    for match in re.finditer(r"(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)", text):
        width, height, x, y = (int(v) for v in match.groups())
        if 40 < width < 60 and 15 < height < 30:
            boxes.append((x, y, x + width, y + height))
    boxes.sort(key=lambda b: (b[1], b[0]))
    if len(boxes) != 55:
        raise RuntimeError(f"expected xcalc's 55 buttons, found {len(boxes)}")
    return boxes


def _center(box: Box) -> list[int]:
    return [(box[0] + box[2]) // 2, (box[1] + box[3]) // 2]


XCALC_DISPLAY_BOX = (5, 5, 255, 45)
"""xcalc's display, in its 260x360 window at the screen's origin."""


def record_xcalc(cache_dir: Path, keys: tuple[int, ...] = CALC_KEYS) -> bytes:
    """Record ``keys`` (12+30= by default) clicked on xcalc's buttons; returns its display's
    pixels at the end."""
    with _desktop(CALC_SIZE) as (display, backend), _xcalc(display):
        buttons = xcalc_buttons(display)
        script: list[Any] = [tool_use_reply("computer", {"action": "screenshot"})]
        script += [
            tool_use_reply(
                "computer", {"action": "left_click", "coordinate": _center(buttons[n - 1])}
            )
            for n in keys
        ]
        script.append(text_reply("12 + 30 = 42"))
        with MessagesApiStandIn(script) as api:
            result = Agent(api.client(), [Witness(backend)], model="claude-test").act(
                CALC_GOAL, _settings(cache_dir, "record", "xcalc.json")
            )
        if result.status != "done":
            raise RuntimeError(f"recording failed: {result.conversation.reason}")
        time.sleep(0.3)
        return backend.screenshot().crop(XCALC_DISPLAY_BOX).tobytes()


def run_xcalc(fault: Fault, cache_dir: Path, recorded_display: bytes) -> Outcome:
    """Replay 12+30= on xcalc with ``fault``'s resources; the model stops when handed back."""
    with (
        _desktop(fault.screen, fault) as (display, backend),
        _xcalc(display, *fault.xcalc_resources),
    ):
        tool = Witness(backend)
        changed = xcalc_buttons(display)[fault.changed_button - 1] if fault.changed_button else None
        wrong: list[str] = []

        def judge(block: ToolUseBlockParam, action: Action) -> None:
            if block.replayed and changed is not None and action.point is not None:
                x, y = tool.to_screen(action.point)
                if changed[0] <= x < changed[2] and changed[1] <= y < changed[3]:
                    wrong.append(
                        f"replayed {action.name} at {list(action.point)} on the changed key"
                    )

        tool.before = judge
        stop = text_reply("The calculator's keys are not as expected; I stop here.")
        with MessagesApiStandIn([stop]) as api:
            started = time.monotonic()
            result = Agent(api.client(), [tool], model="claude-test").act(
                CALC_GOAL, _settings(cache_dir, "execute", "xcalc.json")
            )
            seconds = time.monotonic() - started
        time.sleep(0.3)
        shown = backend.screenshot().crop(XCALC_DISPLAY_BOX).tobytes()
        shows = "as recorded" if shown == recorded_display else "differs from the recording"
        return _outcome(fault, result, wrong, seconds, display=shows)


# Both --------------------------------------------------------------------------------------


def calls_after_rejoin(messages: list[MessageParam]) -> int | None:
    """Model calls after the first re-join: the first replayed call after a model call."""
    model_called = False
    for index, message in enumerate(messages):
        if message.usage is not None:
            model_called = True
        elif model_called and any(call.replayed for call in message.tool_uses):
            return sum(1 for m in messages[index:] if m.usage is not None)
    return None


def _handed_back_at(messages: list[MessageParam]) -> list[int]:
    steps = []
    for message in messages:
        if message.role == "user" and not isinstance(message.content, str):
            for block in message.content:
                found = re.match(
                    r"Replay of cached trajectory .* stopped at step (\d+)",
                    getattr(block, "text", "") or "",
                )
                if found:
                    steps.append(int(found.group(1)))
    return steps


def _outcome(
    fault: Fault, result: ActResult, wrong: list[str], seconds: float, **extra: Any
) -> Outcome:
    replay = result.replay
    if replay is None:
        raise RuntimeError("no replay ran")
    return Outcome(
        fault=fault,
        wrong=wrong,
        status=replay.status,
        stopped_at_step=replay.stopped_at_step,
        reason=replay.reason,
        model_calls=result.model_calls,
        calls_after_rejoin=calls_after_rejoin(result.conversation.messages),
        rejoins=replay.rejoins,
        handbacks=replay.handbacks,
        handed_back_at=_handed_back_at(result.conversation.messages),
        seconds=seconds,
        **extra,
    )


class Recordings:
    """The two recordings, made once; each replay gets a fresh copy (its own ledger)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._form: dict[Any, Any] | None = None
        self._xcalc: dict[tuple[int, ...], bytes] = {}
        self._runs = 0

    def run(self, fault: Fault) -> Outcome:
        self._runs += 1
        work = self.folder / f"run{self._runs}"
        work.mkdir()
        if fault.app == "tk":
            if self._form is None:
                self._form = record_form(self.folder / "form", self.folder)
            shutil.copy(self.folder / "form" / "form.json", work / "form.json")
            return run_form(fault, work, work, self._form)
        keys = fault.calc_keys
        recorded = self.folder / ("xcalc-" + "-".join(map(str, keys)))
        if keys not in self._xcalc:
            self._xcalc[keys] = record_xcalc(recorded, keys)
        shutil.copy(recorded / "xcalc.json", work / "xcalc.json")
        return run_xcalc(fault, work, self._xcalc[keys])


def table(outcomes: list[Outcome]) -> str:
    rows = [
        "| fault | wrong actions | status | stopped at step | model calls | "
        "after re-join | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for o in outcomes:
        stopped = "-" if o.stopped_at_step is None else str(o.stopped_at_step)
        if o.rejoins:
            at = ", ".join(map(str, o.handed_back_at))
            stopped = f"- (handed back at {at}, re-joined)"
        after = "-" if o.calls_after_rejoin is None else str(o.calls_after_rejoin)
        rows.append(
            f"| {o.fault.name} | {o.wrong_actions} | {o.status} | {stopped} | {o.model_calls} "
            f"| {after} | {o.seconds:.1f} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="scenarios whose name contains one of these")
    parser.add_argument("--no-write", action="store_true", help="print, do not write the docs")
    args = parser.parse_args(argv)
    faults = [f for f in FAULTS if not args.only or any(o in f.name for o in args.only)]
    outcomes = []
    with tempfile.TemporaryDirectory() as folder:
        recordings = Recordings(Path(folder))
        for fault in faults:
            outcome = recordings.run(fault)
            print(
                f"{fault.name}: {outcome.status} at {outcome.stopped_at_step}, "
                f"wrong {outcome.wrong}, calls {outcome.model_calls}, "
                f"after re-join {outcome.calls_after_rejoin}, {outcome.seconds:.1f} s, "
                f"saved {outcome.saved}, display {outcome.display}; "
                f"{outcome.reason}",
                flush=True,
            )
            outcomes.append(outcome)
    text = table(outcomes)
    print(text)
    if not args.no_write:
        from bench._common import machine, write_section

        write_section("faults", _section(text, machine()))
    return 0


def _section(text: str, where: str) -> str:
    def run(*command: str) -> str:
        return subprocess.run(command, check=False, capture_output=True, text=True).stdout.strip()

    return f"""## Fault injection (`bench/faults.py`)

{where} `uname -srm`: {run("uname", "-srm")}; `nproc`: {run("nproc")}.

Each row: the task recorded once on the healthy application under Xvfb (the Tk form: click
Name, type "Ada Lovelace", click Save, 4 steps with the first screenshot; xcalc: click 1 2 +
3 0 =, 7 steps), replayed with `strategy="execute"` and the default settings on the faulty
one. When the replay hands back, a scripted model closes what covers the form, finishes the
task, or stops when the form ignores input (xcalc: stops). **Wrong actions**: actions the
replay executed on a screen that no longer matched the recording, read from the application
just before each one (the Tk form's published state: a changed layout, a dialog or backdrop
on screen, input already ignored, a click over another widget than when recorded, typing
into a field not empty; xcalc: a click on the relabelled or rebound key; a key rebound with
its label unchanged looks exactly as recorded, so that one click cannot be avoided: the replay
must stop right after it). *Stopped at step*: where the
replay handed back (its effect did not appear when the step ran; not run otherwise). *Model
calls*: every call of the run; *after re-join*: calls after the replay took over again.
*Seconds*: the whole `Agent.act`, model turns included (the stand-in answers at once), plus
one request to the form per replayed action for reading its state (answered once the form
has handled every input delivered). A replay that meets another screen at its first step
waits `settle_timeout` (10 s) for it before handing back (the start-up wait, docs/caching.md),
later steps the quiet period (1.5 s).

{text}
"""


if __name__ == "__main__":
    sys.exit(main())
