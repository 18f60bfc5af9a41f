"""Screen profiles: a task recorded on one screen, replayed on a fleet's other screens.

    python bench/screens.py [--no-write]

Records 12+30= on Debian's xcalc on a 1280x800 Xvfb screen (:func:`bench.faults.record_xcalc`),
then, on each other screen of :data:`SCREENS` (a 2560x1600 display with xcalc drawn at 2x, sent
to the model as 1280x800 screenshots; a 1024x640 screen):

1. **learning run**: the replay tries the recorded steps scaled, each under the full check;
   when it hands back, a scripted model clears the calculator (AC) and clicks 1 2 + 3 0 =
   where the keys are (xwininfo), and says it is done; the verified run is kept as that
   screen profile's trajectory;
2. **replay** on the learned profile, xcalc unchanged: should make no model call;
3. each of the **change kinds** of the xcalc rows of bench/faults.py on the learned profile
   (a key relabelled, relabelled and rebound, rebound with its label unchanged): the model
   stops when handed back;

and finally the recorded screen again (its trajectory must be untouched by the learning).

Every click is judged before it reaches X against the button boxes xwininfo gives, and the
X server's own log of button presses (XRecord, :class:`~askcache.testing.InputLog`) must hold
exactly the judged clicks: a click
outside the intended key (in the learning run and the unchanged replays: the sequence the
task needs; on a changed xcalc: a replayed click on the changed key) is a **wrong action**
(dangerous), counted apart from **needless hand-backs** (an unchanged screen handed back).
Nothing here was tuned: the check runs with the shipped defaults and thresholds, and xcalc
is in the held-out split of the accuracy benchmark.

``tests/integration/test_screen_profiles.py`` runs the same scenarios and asserts on them;
this script writes their table into docs/benchmarks.md (section ``screens``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.faults import (
    CALC_GOAL,
    CALC_KEYS,
    FAULTS,
    Box,
    Fault,
    Witness,
    record_xcalc,
)

from askcache import ActResult, Agent, CacheWritingSettings, CachingSettings
from askcache.foundation.actions import Action
from askcache.foundation.messages import ToolUseBlockParam
from askcache.testing import (
    InputLog,
    MessagesApiStandIn,
    VirtualDisplay,
    run_on_display,
    text_reply,
)
from askcache.testing.messages_api import tool_use_reply
from askcache.tools.desktop import DesktopBackend

ALL_CLEAR = 5
"""xcalc's AC button (app-defaults number)."""


@dataclass(frozen=True)
class Screen:
    """A fleet's screen: the Xvfb size and how big xcalc is drawn on it."""

    name: str
    size: tuple[int, int]
    scale: int = 1
    """xcalc drawn at this many times its size (its font, key sizes and gaps)."""
    profile: str = ""
    """The screen profile id askcache gives it."""

    def xcalc(self) -> list[str]:
        """The command that starts xcalc at this scale, at the screen's origin."""
        s = self.scale
        command = ["xcalc", "-geometry", f"{260 * s}x{360 * s}+0+0"]
        if s == 1:
            return command
        resources = {
            "Font": "12x24",
            "borderWidth": str(s),
            "Command.width": str(40 * s),
            "Command.height": str(26 * s),
            "Command.internalWidth": str(s),
            "Command.horizDistance": str(2 * s),
            "Command.vertDistance": str(2 * s),
            "bevel.horizDistance": str(4 * s),
            "bevel.vertDistance": str(2 * s),
            "bevel.screen.horizDistance": str(6 * s),
            "bevel.screen.vertDistance": str(2 * s),
            "bevel.screen.Label.horizDistance": str(4 * s),
            "bevel.screen.Label.vertDistance": str(2 * s),
            "bevel.screen.LCD.horizDistance": str(4 * s),
            "bevel.screen.LCD.vertDistance": str(2 * s),
            "ti.bevel.screen.LCD.width": str(186 * s),
        }
        for key, value in resources.items():
            command += ["-xrm", f"XCalc*{key}: {value}"]
        return command


RECORDED = Screen("recorded screen (1280x800)", (1280, 800), profile="1280x800@1x")
SCREENS = [
    Screen("2x display (2560x1600, xcalc at 2x)", (2560, 1600), 2, "1280x800@2x"),
    Screen("smaller screen (1024x640)", (1024, 640), 1, "1024x640@1x"),
]
CHANGES = [f for f in FAULTS if f.app == "xcalc" and f.calc_keys == CALC_KEYS]
"""The xcalc change kinds of bench/faults.py on the recorded task (12+30=)."""


def buttons(display: str, scale: int) -> list[Box]:
    """xcalc's 55 buttons (TI layout), in app-defaults order, as screen boxes (xwininfo),
    once xcalc has laid them out (asked again until then, for at most 30 s)."""
    deadline = time.monotonic() + 30
    while True:
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
            if 40 * scale < width < 60 * scale and 15 * scale < height < 30 * scale:
                boxes.append((x, y, x + width, y + height))
        boxes.sort(key=lambda b: (b[1], b[0]))
        if len(boxes) == 55:
            return boxes
        if time.monotonic() > deadline:
            raise RuntimeError(f"expected xcalc's 55 buttons, found {len(boxes)}")
        time.sleep(0.1)


def _button_at(boxes: list[Box], point: tuple[int, int]) -> int | None:
    """The app-defaults number of the button under ``point`` (screen pixels), if any."""
    for number, (left, top, right, bottom) in enumerate(boxes, start=1):
        if left <= point[0] < right and top <= point[1] < bottom:
            return number
    return None


@dataclass
class Run:
    """What one run on one screen measured."""

    screen: Screen
    kind: str
    """``learn``, ``replay`` or a change kind's name."""
    clicked: list[int | None] = field(default_factory=list)
    """The button under each click, in order (``None``: between keys)."""
    replayed: list[bool] = field(default_factory=list)
    """Whether each click was the replay's (else the model's)."""
    wrong: list[str] = field(default_factory=list)
    status: str = ""
    model_calls: int = 0
    handbacks: int = 0
    handed_back_at: int | None = None
    reason: str | None = None
    profile: str | None = None
    """The profile the heal wrote, when the run healed."""
    presses: int = 0
    """Button presses the X server received in the run (XRecord): each must be one of the
    judged clicks."""


class ScriptedModel:
    """After a hand-back: clear the calculator and click 1 2 + 3 0 = where the keys are;
    ``stop``: say it stops instead."""

    def __init__(self, tool: Witness, boxes: list[Box], *, stop: bool) -> None:
        self.tool, self.boxes, self.stop = tool, boxes, stop
        self.queue: list[dict[str, Any]] | None = None

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.stop:
            return text_reply("The calculator's keys are not as expected; I stop here.")
        if self.queue is None:
            self.queue = [
                tool_use_reply("computer", {"action": "left_click", "coordinate": self._at(n)})
                for n in (ALL_CLEAR, *CALC_KEYS)
            ]
            self.queue.append(tool_use_reply("computer", {"action": "screenshot"}))
        if self.queue:
            return self.queue.pop(0)
        return text_reply("12 + 30 = 42")

    def _at(self, number: int) -> list[int]:
        left, top, right, bottom = self.boxes[number - 1]
        return list(self.tool.from_screen(((left + right) // 2, (top + bottom) // 2)))


@contextmanager
def _xcalc_on(screen: Screen, *resources: str) -> Iterator[tuple[str, DesktopBackend]]:
    command = screen.xcalc()
    for resource in resources:
        command += ["-xrm", f"XCalc*ti.{resource}"]
    with VirtualDisplay(*screen.size) as xvfb:
        backend = DesktopBackend(xvfb.display)
        try:
            with run_on_display(xvfb.display, *command):
                yield xvfb.display, backend
        finally:
            backend.close()


def run_on(screen: Screen, cache_dir: Path, kind: str, change: Fault | None = None) -> Run:
    """One run of the recorded task on ``screen`` (``kind``: ``learn``, ``replay``, or
    ``change``'s name with its resources)."""
    resources = change.xcalc_resources if change is not None else ()
    run = Run(screen, kind)
    with _xcalc_on(screen, *resources) as (display, backend):
        boxes = buttons(display, screen.scale)
        tool = Witness(backend)

        def judge(block: ToolUseBlockParam, action: Action) -> None:
            if action.point is None:
                return
            number = _button_at(boxes, tool.to_screen(action.point))
            run.clicked.append(number)
            run.replayed.append(block.replayed)
            if change is not None and block.replayed and number == change.changed_button:
                run.wrong.append(f"replayed click on the changed key {number}")

        tool.before = judge
        model = ScriptedModel(tool, boxes, stop=kind != "learn")
        log = InputLog(display, screen.size)
        try:
            with MessagesApiStandIn(model) as api:
                result = Agent(api.client(), [tool], model="claude-test").act(
                    CALC_GOAL,
                    CachingSettings(
                        strategy="auto",  # heals: a verified run after a hand-back is kept
                        cache_dir=cache_dir,
                        writing_settings=CacheWritingSettings(filename="xcalc.json"),
                    ),
                )
            run.presses = sum(kind == "button_press" for kind, _ in log.events())
        finally:
            log.close()
    _summarise(run, result, change)
    return run


def _summarise(run: Run, result: ActResult, change: Fault | None) -> None:
    replay = result.replay
    if replay is None:
        raise RuntimeError("no replay ran")
    run.status = replay.status
    run.model_calls = result.model_calls
    run.handbacks = replay.handbacks
    run.handed_back_at = replay.handback_steps[0] if replay.handback_steps else None
    run.reason = replay.reason
    run.profile = result.heal.profile if result.heal is not None else None
    if change is None and not _on_course(run.clicked):
        # on an unchanged xcalc every click must be on the key the task needs at that point
        run.wrong.append(f"clicks on keys {run.clicked}: not the task's")


def _on_course(keys: list[int | None]) -> bool:
    """True when every click so far is on the key 12+30= needs there: a prefix of the task's
    keys, or (a learned trajectory: the recorded steps stopped passing, the model took over)
    such a prefix, AC, and a prefix of the whole task again."""
    task: list[int | None] = list(CALC_KEYS)
    if ALL_CLEAR in keys:
        cut = keys.index(ALL_CLEAR)
        rest = keys[cut + 1 :]
        return keys[:cut] == task[:cut] and rest == task[: len(rest)]
    return keys == task[: len(keys)]


def measure(folder: Path) -> list[Run]:
    """Every run of every screen."""
    record_xcalc(folder / "record")
    runs = []
    for screen in SCREENS:
        work = folder / screen.profile
        work.mkdir()
        shutil.copy(folder / "record" / "xcalc.json", work / "xcalc.json")
        runs.append(run_on(screen, work, "learn"))
        runs.append(run_on(screen, work, "replay"))
        for change in CHANGES:
            trial = folder / f"{screen.profile}-{len(runs)}"
            shutil.copytree(work, trial)
            runs.append(run_on(screen, trial, change.name, change))
        runs.append(run_on(RECORDED, work, f"replay after learning {screen.profile}"))
    return runs


def table(runs: list[Run]) -> str:
    rows = [
        "| screen | run | wrong actions | needless hand-backs | status | handed back at step "
        "| model calls | learned profile |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in runs:
        change = next((c for c in CHANGES if c.name == run.kind), None)
        needless = run.handbacks if change is None and run.kind != "learn" else 0
        at = "-" if run.handed_back_at is None else str(run.handed_back_at)
        wrong = str(len(run.wrong))
        if change is not None and change.unavoidable and len(run.wrong) <= change.unavoidable:
            wrong += " (unavoidable: looks as recorded)"
        rows.append(
            f"| {run.screen.name} | {run.kind} | {wrong} | {needless} | {run.status} "
            f"| {at} | {run.model_calls} | {run.profile or '-'} |"
        )
    return "\n".join(rows)


def totals(runs: list[Run]) -> str:
    """The table in one paragraph: dangerous failures apart from needless hand-backs."""
    learning = [r for r in runs if r.kind == "learn"]
    changed = {c.name: c for c in CHANGES}
    unavoidable = sum(
        min(len(r.wrong), changed[r.kind].unavoidable) for r in runs if r.kind in changed
    )
    wrong = sum(len(r.wrong) for r in runs) - unavoidable
    after = [r for r in runs if r.kind not in changed and r.kind != "learn"]
    return (
        f"**In all**: {wrong} wrong actions a check could have prevented, {unavoidable} that "
        f"none can (a key rebound with its label unchanged: the replay stopped right after "
        f"it); learning took one run per screen ({', '.join(str(r.model_calls) for r in learning)} "
        f"model calls), with {sum(len(r.wrong) for r in learning)} wrong clicks; after it, "
        f"{sum(r.handbacks for r in after)} needless hand-backs and "
        f"{sum(r.model_calls for r in after)} model calls in {len(after)} runs on unchanged "
        "screens (the learned ones and the recorded one)."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print, do not write the docs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        runs = measure(Path(folder))
    for run in runs:
        print(
            f"{run.screen.name} / {run.kind}: {run.status} at {run.handed_back_at}, "
            f"calls {run.model_calls}, clicked {run.clicked}, wrong {run.wrong}; {run.reason}",
            flush=True,
        )
    text = table(runs) + "\n\n" + totals(runs)
    print(text)
    if not args.no_write:
        from bench._common import machine, write_section

        write_section("screens", _section(text, machine()))
    return 0


def _section(text: str, where: str) -> str:
    def run(*command: str) -> str:
        return subprocess.run(command, check=False, capture_output=True, text=True).stdout.strip()

    return f"""## Screen profiles: learned once (`bench/screens.py`)

{where} `uname -srm`: {run("uname", "-srm")}; `nproc`: {run("nproc")}. The machine may
be shared: the load average above counts everything else that ran on it (no figure here is a
time).

xcalc's 12+30= (7 steps: a screenshot, then clicks on 1 2 + 3 0 =) recorded once on a 1280x800
Xvfb screen, then run on two other screens of a fleet: a 2560x1600 display with xcalc drawn at
2x (its font 12x24, its keys and gaps doubled; screenshots sent at 1280x800: profile
`1280x800@2x`) and a 1024x640 screen (`1024x640@1x`). On each: one **learning run** (the
recorded steps tried scaled, each under the full check; at the hand-back a scripted model
presses AC and 1 2 + 3 0 = where the keys are, and the verified run becomes the profile's
trajectory), the **replay** on the learned profile, the **change kinds** of the xcalc rows of
the fault table on the learned profile (the model stops at the hand-back), and the recorded
screen again afterwards. **Wrong actions** (dangerous): a click the application received off
the key the task needed there, or a replayed click on the changed key, judged before each click
from xwininfo's button boxes. **Needless hand-backs**: hand-backs of a run on an unchanged
xcalc after learning. Held out: nothing was tuned on these runs (the shipped defaults and
thresholds; xcalc is in the held-out split of the accuracy benchmark). A key rebound with its
label unchanged looks exactly as recorded, so that one click cannot be avoided (as in the fault
table): the replay must stop right after it.

{text}
"""


if __name__ == "__main__":
    sys.exit(main())
