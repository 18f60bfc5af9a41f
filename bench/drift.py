"""Drift on real applications no test was built around: record a small editing task once,
replay it unchanged and in four kinds of drift, and count what reached the application.

    python bench/drift.py [--only NAME ...] [--no-write]

Applications: Debian's ``mousepad`` (GTK 3), ``vi`` hosted in ``xterm`` (Xt) and a list
editor as a web page in Debian's ``chromium`` (``bench/weblist.py``: a ``<textarea>``, saved
by ctrl+s through a local server), all under Xvfb with the real
:class:`~askcache.tools.desktop.DesktopBackend`. Each task is recorded once
with a scripted model through the real ``anthropic`` client and
:class:`~askcache.testing.MessagesApiStandIn`, then replayed with ``strategy="execute"`` and
the default :class:`~askcache.CacheExecutionSettings`:

- *unchanged*: the same file, the same window;
- *extra line*: the file has a fourth line;
- *moved window*: the window is 150 px right and 120 px down;
- *another file open*: the application shows another file (mousepad: in a second tab, the
  list's tab in front; vi and the web page: another file in the list's place);
- *started late*: the application is started at the same moment as the replay.

When the replay hands back, the scripted model stops at once (it never acts), so every action
that reaches the application comes from the replay.

Counted from the application's side, not from askcache's own report:

- **wrong actions**: replayed actions that ran on a screen that differed from the recording's
  screen before the same action (a screenshot taken just before the action is sent, compared
  with the one taken at the same point of the recording, as seen from the window when it
  moved; a blinking caret, under 60 pixels, is not a difference);
- **needless hand-backs**: hand-backs while the screen was as recorded (the screenshot when
  the model is first asked matches the recording's screen at that point);
- **model calls**, the keys and buttons the X server received (an XRecord log), and whether
  the saved file is as it was, as recorded, or neither.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PIL import Image, ImageChops

from askcache import (
    ActResult,
    Agent,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.foundation.actions import ACTING_ACTIONS, parse_action
from askcache.foundation.messages import ToolUseBlockParam
from askcache.testing import (
    InputLog,
    MessagesApiStandIn,
    VirtualDisplay,
    text_reply,
    tool_use_reply,
)
from askcache.testing._process import stop_process
from askcache.tools.desktop import DesktopBackend
from askcache.tools.tool import ToolOutput

SCREEN = (1024, 768)
WAIT = 30.0
"""Seconds before waiting for an application's window gives up."""
CARET = 60
"""Differing pixels a blinking caret may account for."""
MOVE = (150, 120)
LIST = "milk\neggs\nbread"
EXTRA = "milk\neggs\nbread\nbutter"
OTHER = "call the plumber\nbook the train\nreturn library books\npay the rent"
GOAL = "Add apples after bread in the shopping list and save it"
STOP = "The screen is not as the replay expected; I stop here."


@dataclass(frozen=True)
class App:
    """One application and its editing task."""

    name: str
    command: Callable[[list[Path]], list[str]]
    """The command line that opens these files (the last one in front)."""
    window: str
    """Text in the name of the application's main window (for moving it)."""
    script: list[dict[str, Any]]
    """The recording's model replies after its first screenshot."""
    env: dict[str, str] = field(default_factory=dict)


def _key(text: str) -> dict[str, Any]:
    return tool_use_reply("computer", {"action": "key", "text": text})


def _type(text: str) -> dict[str, Any]:
    return tool_use_reply("computer", {"action": "type", "text": text})


MOUSEPAD = App(
    name="mousepad (GTK 3)",
    command=lambda files: ["dbus-run-session", "--", "mousepad", *map(str, files)],
    window="Mousepad",
    script=[
        tool_use_reply("computer", {"action": "left_click", "coordinate": [200, 250]}),
        _key("Return"),
        _type("apples"),
        _key("ctrl+s"),
    ],
    env={"GSETTINGS_BACKEND": "memory", "NO_AT_BRIDGE": "1"},
)
VI = App(
    name="vi in xterm (Xt)",
    command=lambda files: [
        "xterm",
        "-geometry",
        "80x24+0+0",
        "-e",
        "vi",
        str(files[-1]),
    ],
    window="xterm",
    script=[
        tool_use_reply("computer", {"action": "left_click", "coordinate": [240, 150]}),
        _key("G"),
        _key("o"),
        _type("apples"),
        _key("Escape"),
        _type(":w\n"),
    ],
)
WEB = App(
    name="a web page in Chromium",
    command=lambda files: [
        sys.executable,
        str(Path(__file__).resolve().parent / "weblist.py"),
        *map(str, files),
    ],
    window="Chromium",  # an app window: class (127.0.0.1, Chromium), no name
    script=[
        tool_use_reply("computer", {"action": "left_click", "coordinate": [200, 250]}),
        _key("Return"),
        _type("apples"),
        _key("ctrl+s"),
    ],
)
APPS = [MOUSEPAD, VI, WEB]


def _differing(a: Image.Image, b: Image.Image) -> int:
    diff = ImageChops.difference(a.convert("RGB"), b.convert("RGB")).convert("L")
    return sum(diff.point(lambda v: 255 if v else 0).histogram()[255:])


def _same(a: Image.Image, b: Image.Image) -> bool:
    return _differing(a, b) <= CARET


def _seen(screen: Image.Image, recorded: Image.Image, situation: str) -> tuple[Image.Image, ...]:
    """The replay's screen and the recording's, compared as seen from the application's
    window: with the window moved (it was at the top left when recorded), the part of the
    screen from the window's new corner against the same-sized part from the old one."""
    if situation != "moved window":
        return screen, recorded
    dx, dy = MOVE
    width, height = screen.size
    return screen.crop((dx, dy, width, height)), recorded.crop((0, 0, width - dx, height - dy))


class Witness(ComputerTool):
    """The computer tool on the real desktop, with a screenshot before each acting call."""

    def __init__(self, backend: DesktopBackend) -> None:
        super().__init__(backend, settle_delay=0.3)
        self.desktop = backend
        self.before: list[Image.Image] = []
        """The screen before each acting call, in order."""
        self.replayed = 0

    def run(self, block: ToolUseBlockParam) -> ToolOutput:
        action = parse_action(block)
        if action is not None and action.name in ACTING_ACTIONS:
            self.before.append(self.desktop.screenshot().convert("RGB"))
            self.replayed += bool(block.replayed)
        return super().run(block)


@contextmanager
def _backend(display: str) -> Iterator[DesktopBackend]:
    backend = DesktopBackend(display)
    try:
        yield backend
    finally:
        backend.close()


def _start(app: App, display: str, files: list[Path], home: Path) -> subprocess.Popen[bytes]:
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DISPLAY": display, "XDG_CONFIG_HOME": str(home), **app.env}
    return subprocess.Popen(
        app.command(files),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    stop_process(process)


def _settled(backend: DesktopBackend) -> Image.Image:
    """Wait until the screen is not blank and two looks 0.4 s apart match."""
    deadline = time.monotonic() + WAIT
    previous: Image.Image | None = None
    while time.monotonic() < deadline:
        now = backend.screenshot().convert("RGB")
        drawn = now.convert("L").getextrema()[1] > 0
        if drawn and previous is not None and _same(now, previous):
            return now
        previous = now if drawn else None
        time.sleep(0.4)
    raise RuntimeError("the application's window did not settle")


def _move(display: str, window: str, to: tuple[int, int]) -> None:
    from Xlib import display as xdisplay

    connection = xdisplay.Display(display)
    try:
        for child in connection.screen().root.query_tree().children:
            names = [str(child.get_wm_name() or ""), *(child.get_wm_class() or ())]
            geometry = child.get_geometry()
            if any(window.lower() in n.lower() for n in names) and geometry.width > 100:
                child.configure(x=to[0], y=to[1])
        connection.sync()
    finally:
        connection.close()


@dataclass
class Run:
    app: str
    situation: str
    status: str
    model_calls: int
    replayed: int
    wrong: list[int]
    """Replayed actions (1-based) that ran on a screen that differed from the recording."""
    differing: list[int]
    """For each of them, how many pixels differed."""
    needless: int
    presses: int
    file: str
    """as it was / as recorded / changed otherwise."""
    reason: str
    seconds: float


class Stopper:
    """The scripted model of a replay: looks at the screen when first asked, then stops."""

    def __init__(self, backend: DesktopBackend) -> None:
        self.backend = backend
        self.calls = 0
        self.first: Image.Image | None = None

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.calls == 0:
            self.first = self.backend.screenshot().convert("RGB")
        self.calls += 1
        return text_reply(STOP)


class Task:
    """One application's task: recorded once, then replayed in each situation."""

    def __init__(self, app: App, folder: Path) -> None:
        self.app, self.folder = app, folder
        folder.mkdir(parents=True, exist_ok=True)
        self.cache = folder / "cache"
        self.file = folder / "list.txt"
        self.other = folder / "other.txt"
        self.recorded_screens: list[Image.Image] = []
        self.recorded_file = ""
        self.runs = 0

    def _settings(self, strategy: str) -> CachingSettings:
        return CachingSettings(
            strategy=strategy,  # type: ignore[arg-type]
            cache_dir=self.cache,
            writing_settings=CacheWritingSettings(filename="task.json"),
        )

    def record(self) -> None:
        self.file.write_text(LIST)
        script = [tool_use_reply("computer", {"action": "screenshot"}), *self.app.script]
        script.append(text_reply("apples added after bread and saved"))
        with VirtualDisplay(*SCREEN) as screen, _backend(screen.display) as backend:
            process = _start(self.app, screen.display, [self.file], self.folder / "home-record")
            try:
                _settled(backend)
                tool = Witness(backend)
                with MessagesApiStandIn(script) as api:
                    result = Agent(api.client(), [tool], model="claude-test").act(
                        GOAL, self._settings("record")
                    )
                final = _settled(backend)
            finally:
                _stop(process)
        if result.conversation.recorded_file != "task.json":
            raise RuntimeError(f"{self.app.name}: the recording was not written")
        self.recorded_screens = [*tool.before, final]
        self.recorded_file = self.file.read_text()
        if self.recorded_file == LIST:
            raise RuntimeError(f"{self.app.name}: the recording did not save the file")

    def replay(self, situation: str) -> Run:
        if not self.recorded_screens:
            self.record()
        self.runs += 1
        original = EXTRA if situation == "extra line" else LIST
        self.file.write_text(original)
        self.other.write_text(OTHER)
        files = [self.file]
        if situation == "another file open":
            files = [self.other, self.file] if self.app is MOUSEPAD else [self.other]
        home = self.folder / f"home-{self.runs}"
        with VirtualDisplay(*SCREEN) as screen, _backend(screen.display) as backend:
            log = InputLog(screen.display, SCREEN)
            process: subprocess.Popen[bytes] | None = None
            try:
                if situation != "started late":
                    process = _start(self.app, screen.display, files, home)
                    _settled(backend)
                    if situation == "moved window":
                        _move(screen.display, self.app.window, MOVE)
                        _settled(backend)
                tool = Witness(backend)
                model = Stopper(backend)
                with MessagesApiStandIn(model) as api:
                    agent = Agent(api.client(), [tool], model="claude-test")
                    if situation == "started late":
                        process = _start(self.app, screen.display, files, home)
                    started = time.monotonic()
                    result = agent.act(GOAL, self._settings("execute"))
                    seconds = time.monotonic() - started
                presses = sum(kind in ("key_press", "button_press") for kind, _ in log.events())
            finally:
                log.close()
                if process is not None:
                    _stop(process)
        return self._judge(
            situation=situation,
            result=result,
            tool=tool,
            model=model,
            presses=presses,
            original=original,
            seconds=seconds,
        )

    def _judge(
        self,
        *,
        situation: str,
        result: ActResult,
        tool: Witness,
        model: Stopper,
        presses: int,
        original: str,
        seconds: float,
    ) -> Run:
        replay = result.replay
        recorded = self.recorded_screens
        # the recording's first acting call follows its first screenshot step; the replay's
        # n-th acting call is the recording's n-th
        seen = [_seen(screen, recorded[n], situation) for n, screen in enumerate(tool.before)]
        wrong = [n + 1 for n, pair in enumerate(seen) if not _same(*pair)]
        differing = [_differing(*seen[n - 1]) for n in wrong]
        needless = 0
        if replay is not None and replay.handbacks and model.first is not None:
            at = recorded[min(tool.replayed, len(recorded) - 1)]
            needless = int(_same(*_seen(model.first, at, situation)))
        saved = self.file.read_text()
        if saved == original:
            state = "as it was"
        elif saved == self.recorded_file:
            state = "as recorded"
        else:
            state = "changed otherwise: " + repr(saved)
        return Run(
            app=self.app.name,
            situation=situation,
            status="no replay" if replay is None else replay.status,
            model_calls=result.model_calls,
            replayed=tool.replayed,
            wrong=wrong,
            differing=differing,
            needless=needless,
            presses=presses,
            file=state,
            reason="" if replay is None else (replay.reason or ""),
            seconds=seconds,
        )


SITUATIONS = ["unchanged", "extra line", "moved window", "another file open", "started late"]


def table(runs: list[Run]) -> str:
    rows = [
        "| application | situation | runs | wrong actions | needless hand-backs | model calls | "
        "status | actions replayed | keys and buttons received | file | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.app, run.situation), []).append(run)

    def each(values: list[Any]) -> str:
        return str(values[0]) if len(set(values)) == 1 else " / ".join(map(str, values))

    for (app, situation), group in groups.items():
        wrong = sum(len(r.wrong) for r in group)
        where = [
            f"action {n} in run {i + 1}, {pixels} px differ"
            for i, r in enumerate(group)
            for n, pixels in zip(r.wrong, r.differing, strict=True)
        ]
        wrong_text = f"**{wrong}** ({', '.join(where)})" if wrong else "0"
        seconds = sorted(r.seconds for r in group)[len(group) // 2]
        rows.append(
            f"| {app} | {situation} | {len(group)} | {wrong_text} "
            f"| {sum(r.needless for r in group)} | {each([r.model_calls for r in group])} "
            f"| {each([r.status for r in group])} | {each([r.replayed for r in group])} "
            f"| {each([r.presses for r in group])} | {each([r.file for r in group])} "
            f"| {seconds:.1f} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="applications or situations containing these")
    parser.add_argument(
        "--runs", type=int, default=5, help="recordings, each replayed in every situation"
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not write the docs")
    args = parser.parse_args(argv)

    def chosen(*names: str) -> bool:
        return not args.only or any(o in name for o in args.only for name in names)

    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for number, app in enumerate(APPS):
            for attempt in range(args.runs):
                # a fresh recording each time: what it catches (a blinking caret on or
                # off) varies, and so does what the replay checks
                task = Task(app, Path(folder) / f"app{number}-{attempt}")
                for situation in SITUATIONS:
                    if not chosen(app.name, situation):
                        continue
                    run = task.replay(situation)
                    print(
                        f"{app.name} / {situation}: {run.status}, wrong {run.wrong} "
                        f"(pixels {run.differing}), needless {run.needless}, "
                        f"calls {run.model_calls}, replayed {run.replayed}, "
                        f"presses {run.presses}, file {run.file}, {run.seconds:.1f} s; "
                        f"{run.reason}",
                        flush=True,
                    )
                    runs.append(run)
    text = table(runs)
    print(text)
    if not args.no_write:
        from bench._common import machine, write_section

        write_section("drift", _section(text + _notes(runs), machine(), args.runs))
    return 0


def _notes(runs: list[Run]) -> str:
    """What each wrong action was, and what the replay did next."""
    scripts = {app.name: app.script for app in APPS}
    lines = []
    for r in runs:
        for n, pixels in zip(r.wrong, r.differing, strict=True):
            action = scripts[r.app][n - 1]["content"][0]["input"]
            lines.append(
                f"- {r.app}, {r.situation}: action {n} {action} ({pixels} px differ); "
                f"then: {r.status}, file {r.file}; {r.reason or 'no reason given'}"
            )
    if not lines:
        return ""
    return "\n\nThe wrong actions:\n\n" + "\n".join(lines)


def _section(text: str, where: str, runs: int) -> str:
    def run(*command: str) -> str:
        return subprocess.run(command, check=False, capture_output=True, text=True).stdout.strip()

    versions = run(
        "dpkg-query", "-W", "-f", "${Package} ${Version}; ", "mousepad", "xterm", "chromium"
    )
    return f"""## Drift on applications no test was built around (`bench/drift.py`)

{where} `uname -srm`: {run("uname", "-srm")}; Debian packages: {versions.rstrip("; ")}.

Each application's task is recorded under Xvfb (a scripted model through the real
`anthropic` client and the local stand-in): mousepad: click below the list, Return, type
"apples", ctrl+s; vi in xterm: click in the terminal (it takes the
keyboard focus), G, o, type "apples", Escape, type ":w" and Enter; the web page in Chromium
(`bench/weblist.py`: the list in a `<textarea>`, saved through a local server by ctrl+s):
as mousepad. The task is
recorded {runs} times (what a recording catches varies: mousepad's blinking caret is on or
off in its screenshots), and each recording is replayed once in each situation with
`strategy="execute"` and the default settings, each time on a fresh X server, application
and copy of the file.
*Extra line*: the file has a fourth line; *moved window*: the window is 150 px right and
120 px down; *another file open*: mousepad has another file in a first tab (the list's tab
in front), vi and the web page have another file in the list's place; *started late*: the
application starts
at the same moment as the replay. When the replay hands back, the scripted model stops.

**Wrong actions** (the dangerous failures): replayed actions that reached the application
on a screen that differed from the recording's screen just before the same action (a
screenshot taken as the action is sent, seen from the window's corner when it moved; more
than {CARET} differing pixels, so a blinking caret is not a difference). **Needless hand-backs** are counted apart: hand-backs while the
screen was as recorded at that point (they cost a model call, and act on nothing). *Keys
and buttons received*: presses the X server received (XRecord), modifiers included. *File*:
the saved file compared with the one the replay started on and with the recording's result.
*Seconds*: the whole `Agent.act`.

{text}
"""


if __name__ == "__main__":
    sys.exit(main())
