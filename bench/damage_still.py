"""When is the screen still after an action? The X server's drawing reports against today's
two looks, on real applications under Xvfb.

    python bench/damage_still.py [--trials N] [--only NAME ...] [--write]

For each application and action (the Tk form: click a field, type a letter; vi in xterm,
mousepad (GTK 3), a page in Chromium: type a letter, every other action erasing it; mousepad:
type letters at the end of a line longer than its window, which scrolls the view each time),
``--trials`` times each (default 30):

- **drawing** (no screenshots): the X server's drawing reports in the application's window
  (:class:`~askcache.foundation.screen.damage.ScreenDamage`, polled every millisecond for 400 ms after
  the action): when the first and last drawing came, the longest pause between two drawings of
  one answer, and how often that pause is a frame period or longer (where "no drawing for one
  frame" would be taken for "finished" while the application was still drawing);
- **damage**: the protocol a replayed step would follow with the reports: a mark, a look
  (a screenshot); when the look passes the step's check, wait until one frame period
  (:data:`~askcache.foundation.screen.damage.FRAME_PERIOD`) after the mark and act if nothing was drawn in
  the window since, else look again;
- **damage, early**: the same, asking every 2 ms during the frame period and looking again
  as soon as something is drawn (not at the period's end);
- **two looks**: today's sampled still period: a look that passes, then one
  ``settle_still_period`` (25 ms) later that passes too and shows the same window.

Looks start 2.5 ms after the action and double up to every 20 ms, as the replay's do. The
step's check is stood in for two ways: *changed* passes once the window differs from the
screen before the action by more than a caret (a check that tells the new screen from the old
one), *any* passes at once (a check that cannot tell them apart: the worst case, the quiet
period alone must catch a late frame). The time is from the action's return to the decision
to act; **final** counts the trials where the look acted on shows the window as it is once
the application is done (0.6 s later, and no drawing for 0.1 s), a blinking caret (a
difference at most 3 px wide) aside. A look acted on that is not final is a frame still
being drawn: the wrong actions the still period exists to prevent.

Carets do not blink (X resources for Tk and xterm, GTK's setting for mousepad and Chromium):
a blink is drawing, which would blur when an answer ends; in a replay it only costs a look
when it falls within the frame period after a look.

Prints the tables with the machine and its load; ``--write`` also writes them to the
"damage still" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageChops

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, write_section

from askcache import CacheExecutionSettings
from askcache.foundation.geometry import Box
from askcache.foundation.screen.damage import FRAME_PERIOD, DamageMark, ScreenDamage
from askcache.testing import TkFormApp, VirtualDisplay
from askcache.testing._process import stop_process
from askcache.tools.desktop import DesktopBackend

SCREEN = (1280, 800)
TIMEOUT = 3.0
"""Seconds a trial may wait for its decision before it counts as timed out."""
SETTLE = 0.6
"""Seconds after a decision before the final frame is taken."""
TIMELINE = 0.4
"""Seconds the drawing reports are followed after an action."""
FIRST_PAUSE, LAST_PAUSE = 0.0025, 0.02
EARLY_POLL = 0.002
"""Seconds between the questions of the *damage, early* way."""
STILL = CacheExecutionSettings().settle_still_period
CARET = 3
"""Widest difference (px) taken for a blinking caret."""
LINES = "\n".join(f"line {n}: the quick brown fox" for n in range(1, 9)) + "\n"


Action = Callable[[int], None]
"""One action on the application, given the trial's number."""
Starter = Callable[[ExitStack, str, DesktopBackend, Path], Action]


@dataclass
class Subject:
    """One application and one action on it."""

    name: str
    start: Starter
    """Starts the application; returns the action (given the trial's number)."""
    window: str
    """Its window's class (the box checked)."""


@dataclass
class Trial:
    seconds: float | None
    """From the action's return to the decision (``None``: timed out)."""
    final: bool
    looks: int


@dataclass
class Timeline:
    first: float | None
    last: float | None
    gap: float
    """Longest pause between two drawings of the answer (seconds)."""


@dataclass
class Result:
    subject: str
    timelines: list[Timeline] = field(default_factory=list)
    trials: dict[tuple[str, str], list[Trial]] = field(default_factory=dict)


def _pauses() -> Iterator[float]:
    pause = FIRST_PAUSE
    while True:
        yield pause
        pause = min(pause * 2, LAST_PAUSE)


def _wide_difference(a: Image.Image, b: Image.Image) -> bool:
    """True when ``a`` and ``b`` differ by more than a caret (a difference > 3 px wide)."""
    found = ImageChops.difference(a, b).getbbox()
    return found is not None and found[2] - found[0] > CARET


def _quiet(damage: ScreenDamage, box: Box, seconds: float, bound: float = 5.0) -> None:
    """Wait until nothing was drawn in ``box`` for ``seconds`` (at most ``bound``)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        mark = damage.mark()
        time.sleep(seconds)
        if not damage.damaged_since(mark, box):
            return


def _by_damage(
    backend: DesktopBackend,
    damage: ScreenDamage,
    box: Box,
    check: Callable[[Image.Image], bool],
    *,
    early: bool,
) -> tuple[float | None, Image.Image, int]:
    started, pauses, looks = time.monotonic(), _pauses(), 0
    while True:
        mark = damage.mark()
        image = backend.screenshot().crop(box)
        looks += 1
        if check(image):
            if _undamaged(damage, mark, box, early=early):
                return time.monotonic() - started, image, looks
            continue
        if time.monotonic() - started > TIMEOUT:
            return None, image, looks
        time.sleep(next(pauses))


def _undamaged(damage: ScreenDamage, mark: DamageMark, box: Box, *, early: bool) -> bool:
    """Whether nothing is drawn in ``box`` until a frame period after ``mark``: asked once at
    the end of the period, or (``early``) every 2 ms, to look again as soon as something is."""
    while True:
        wait = mark.at + FRAME_PERIOD - time.monotonic()
        if wait <= 0:
            return not damage.damaged_since(mark, box)
        time.sleep(min(wait, EARLY_POLL) if early else wait)
        if early and damage.damaged_since(mark, box):
            return False


def _by_two_looks(
    backend: DesktopBackend, box: Box, check: Callable[[Image.Image], bool]
) -> tuple[float | None, Image.Image, int]:
    started, pauses, looks = time.monotonic(), _pauses(), 0
    passed: Image.Image | None = None
    while True:
        image = backend.screenshot().crop(box)
        looks += 1
        if check(image):
            if passed is not None and image.tobytes() == passed.tobytes():
                return time.monotonic() - started, image, looks
            passed = image
            pause = STILL
        else:
            passed, pause = None, next(pauses)
        if time.monotonic() - started > TIMEOUT:
            return None, image, looks
        time.sleep(pause)


def _timeline(damage: ScreenDamage, box: Box, act: Callable[[], None]) -> Timeline:
    times: list[float] = []
    mark = damage.mark()
    act()
    started = time.monotonic()
    while time.monotonic() - started < TIMELINE:
        time.sleep(0.001)
        if damage.damaged_since(mark, box):
            times.append(time.monotonic() - started)
        mark = damage.mark()
    if not times:
        return Timeline(None, None, 0.0)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return Timeline(times[0], times[-1], max(gaps, default=0.0))


def _no_blinking(backend: DesktopBackend, folder: Path) -> None:
    """Carets that do not blink: Tk's and Xt's (X resources on the root window) and GTK's,
    also read by Chromium (``gtk-3.0/settings.ini`` under the applications'
    ``XDG_CONFIG_HOME``)."""
    from Xlib import X, Xatom

    from askcache.foundation.screen.xserver import connect

    connection = connect(backend.display)
    try:
        root = connection.screen().root
        resources = b"*insertOffTime: 0\n*cursorBlink: false\n"
        atom = connection.intern_atom("RESOURCE_MANAGER")
        root.change_property(atom, Xatom.STRING, 8, resources, X.PropModeReplace)
        connection.sync()
    finally:
        connection.close()
    settings = folder / "config" / "gtk-3.0" / "settings.ini"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("[Settings]\ngtk-cursor-blink = false\n")


def _box(backend: DesktopBackend, window: str) -> Box:
    frames = [w for w in backend.windows() if (w.wm_class or "").lower() == window.lower()]
    if not frames:
        return (0, 0, *SCREEN)
    frame = max(frames, key=lambda w: w.width * w.height)
    return (
        max(0, frame.x),
        max(0, frame.y),
        min(SCREEN[0], frame.x + frame.width),
        min(SCREEN[1], frame.y + frame.height),
    )


def _tk(kind: str) -> Starter:
    def start(stack: ExitStack, display: str, backend: DesktopBackend, folder: Path) -> Action:
        app = stack.enter_context(TkFormApp(display, folder / "state.json"))
        backend.click(app.center("name"), "left", 1, None)
        app.current()
        if kind == "click":
            fields = [app.center("email"), app.center("name")]
            return lambda n: backend.click(fields[n % 2], "left", 1, None)
        return lambda n: backend.type_text("x") if n % 2 == 0 else backend.key("BackSpace", 1)

    return start


def _program(
    command: Callable[[Path], list[str]],
    env: dict[str, str],
    click: tuple[int, int],
    keys: list[str],
    *,
    text: str = LINES,
    erase: bool = True,
) -> Starter:
    """Start a program on a document of ``text``, click at ``click`` and press ``keys``; each
    action types a letter, or (``erase``) every other one erases the letter typed before."""

    def start(stack: ExitStack, display: str, backend: DesktopBackend, folder: Path) -> Action:
        document = folder / "list.txt"
        document.write_text(text)
        process = subprocess.Popen(
            command(document),
            env={
                **os.environ,
                "DISPLAY": display,
                "XDG_CONFIG_HOME": str(folder / "config"),
                **env,
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

        def stop() -> None:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            stop_process(process)

        stack.callback(stop)
        damage = backend.screen_damage()
        assert damage is not None
        deadline = time.monotonic() + 60
        while backend.screenshot().convert("L").getextrema()[1] == 0 or not backend.windows():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command(document)[0]} drew nothing")
            time.sleep(0.1)
        _quiet(damage, (0, 0, *SCREEN), 1.0, bound=30)
        backend.click(click, "left", 1, None)
        for key in keys:
            backend.key(key, 1)
        letters = "abcdefghijklmnopqrstuvwxyz"
        # typing reaches the text once a letter is drawn (a page still loading drops it)
        for _ in range(20):
            _quiet(damage, (0, 0, *SCREEN), 0.3)
            mark = damage.mark()
            backend.type_text("-")
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline and not damage.damaged_since(mark):
                time.sleep(0.01)
            if damage.damaged_since(mark):
                break
            backend.click(click, "left", 1, None)
        else:
            raise RuntimeError(f"{command(document)[0]} does not show what is typed")

        def act(n: int) -> None:
            if erase and n % 2:
                backend.key("BackSpace", 1)
            else:
                backend.type_text(letters[n % len(letters)])

        return act

    return start


CHROMIUM = [
    sys.executable,
    str(Path(__file__).resolve().parent / "weblist.py"),
]
SUBJECTS = [
    Subject("Tk form: click a field", _tk("click"), "Tk"),
    Subject("Tk form: type a letter", _tk("type"), "Tk"),
    Subject(
        "vi in xterm: type a letter",
        _program(
            lambda f: ["xterm", "-geometry", "80x24+0+0", "-e", "vi", str(f)],
            {},
            (240, 150),
            ["G", "o"],
        ),
        "XTerm",
    ),
    Subject(
        "mousepad: type a letter",
        _program(
            lambda f: ["dbus-run-session", "--", "mousepad", str(f)],
            {"GSETTINGS_BACKEND": "memory", "NO_AT_BRIDGE": "1"},
            (200, 250),
            ["Return"],
        ),
        "Mousepad",
    ),
    Subject(
        "mousepad: type at the end of a long line (the view scrolls)",
        _program(
            lambda f: ["dbus-run-session", "--", "mousepad", str(f)],
            {"GSETTINGS_BACKEND": "memory", "NO_AT_BRIDGE": "1"},
            (200, 100),
            ["ctrl+End"],
            text=" ".join(f"word{n}" for n in range(40)),
            erase=False,
        ),
        "Mousepad",
    ),
    Subject(
        "Chromium page: type a letter",
        _program(lambda f: [*CHROMIUM, str(f)], {}, (200, 250), ["Return"]),
        "Chromium",
    ),
]


def run(subject: Subject, trials: int) -> Result:
    result = Result(subject.name)
    with (
        tempfile.TemporaryDirectory() as folder,
        VirtualDisplay(*SCREEN) as screen,
        ExitStack() as stack,
    ):
        backend = DesktopBackend(screen.display)
        stack.callback(backend.close)
        _no_blinking(backend, Path(folder))
        act = subject.start(stack, screen.display, backend, Path(folder))
        damage = backend.screen_damage()
        assert damage is not None
        box = _box(backend, subject.window)
        print(f"  window box {box}; windows {backend.windows()}", file=sys.stderr)
        number = 0
        for _ in range(trials):
            _quiet(damage, box, 0.1)
            result.timelines.append(_timeline(damage, box, lambda n=number: act(n)))
            number += 1
        for _ in range(trials):
            for check_name in ("changed", "any"):
                for way in ("damage", "damage, early", "two looks"):
                    _quiet(damage, box, 0.1)
                    before = backend.screenshot().crop(box)

                    def check(
                        image: Image.Image, before: Image.Image = before, name: str = check_name
                    ) -> bool:
                        return name == "any" or _wide_difference(image, before)

                    act(number)
                    number += 1
                    if way.startswith("damage"):
                        early = way.endswith("early")
                        seconds, seen, looks = _by_damage(backend, damage, box, check, early=early)
                    else:
                        seconds, seen, looks = _by_two_looks(backend, box, check)
                    time.sleep(SETTLE)
                    _quiet(damage, box, 0.1)
                    final = backend.screenshot().crop(box)
                    trial = Trial(seconds, not _wide_difference(seen, final), looks)
                    result.trials.setdefault((way, check_name), []).append(trial)
    return result


def _ms(values: list[float], q: float | None = None) -> str:
    if not values:
        return "-"
    if q is None:
        return f"{statistics.median(values) * 1000:.0f}"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000:.0f}"


def tables(results: list[Result]) -> str:
    lines = [
        "Drawing reported in the window after the action (polled every 1 ms for 400 ms, no "
        "screenshots): ms, median / 95th percentile / max.",
        "",
        "| application, action | trials | first drawing | last drawing | longest pause "
        "within the answer | answers with a pause >= one frame |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for result in results:
        seen = [t for t in result.timelines if t.first is not None]
        firsts = [t.first for t in seen if t.first is not None]
        lasts = [t.last for t in seen if t.last is not None]
        gaps = [t.gap for t in seen]
        long = sum(g >= FRAME_PERIOD for g in gaps)
        lines.append(
            f"| {result.subject} | {len(result.timelines)} ({len(seen)} drew) | "
            f"{_ms(firsts)} / {_ms(firsts, 0.95)} / {_ms(firsts, 1)} | "
            f"{_ms(lasts)} / {_ms(lasts, 0.95)} / {_ms(lasts, 1)} | "
            f"{_ms(gaps)} / {_ms(gaps, 0.95)} / {_ms(gaps, 1)} | {long} |"
        )
    lines += [
        "",
        "Time from the action to the decision to act, ms (median / 90th percentile / max); "
        "looks per decision (median); decisions whose look shows the final window.",
        "",
        "| application, action | check | way | trials | ms | looks | final | timed out |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for result in results:
        for (way, check_name), trials in sorted(result.trials.items(), key=lambda i: i[0][::-1]):
            done = [t.seconds for t in trials if t.seconds is not None]
            final = sum(t.final for t in trials if t.seconds is not None)
            looks = statistics.median(t.looks for t in trials)
            lines.append(
                f"| {result.subject} | {check_name} | {way} | {len(trials)} | "
                f"{_ms(done)} / {_ms(done, 0.9)} / {_ms(done, 1)} | {looks:g} | "
                f"{final}/{len(done)} | {len(trials) - len(done)} |"
            )
    return "\n".join(lines)


READING = """\
After each action, on the application's window under Xvfb (no window manager, carets that do
not blink): *damage* takes a mark and a look, and acts once nothing was drawn in the window
for one frame period (17 ms) after the mark (*early*: asking every 2 ms, looking again as
soon as something is drawn); *two looks* is today's `settle_still_period`: a look that passes,
and one 25 ms later that passes and is the same. The check is stood in for: *changed* passes
once the window differs from before the action by more than a caret, *any* at once (a check
that cannot tell old from new: the quiet period alone must catch a late frame). **final**: the
look acted on shows the window as it is once the application is done (a look that is not is a
frame still being drawn). The replay does not use the drawing reports yet: these are the
times and risks of the two criteria, not of a replayed step (which also encodes and checks
each look: there, the frame period after the mark has mostly passed by the time the check
has)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--only", nargs="*", default=[], help="words of the subjects to run")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args(argv)
    chosen = [
        s for s in SUBJECTS if not args.only or any(w.lower() in s.name.lower() for w in args.only)
    ]
    load_before = os.getloadavg()
    results = []
    for subject in chosen:
        print(f"{subject.name} ...", file=sys.stderr, flush=True)
        results.append(run(subject, args.trials))
    load_after = os.getloadavg()
    body = "\n\n".join(
        [
            "## When the screen is still: drawing reports against two looks",
            f"`python bench/damage_still.py --trials {args.trials}`. {machine()} "
            "Load average before the run {:.2f} / {:.2f} / {:.2f}, after {:.2f} / {:.2f} / "
            "{:.2f}.".format(*load_before, *load_after),
            READING,
            tables(results),
        ]
    )
    print(body)
    if args.write:
        write_section("damage_still", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
