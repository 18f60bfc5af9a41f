"""The still screen: a step whose check passes acts only once a later look, the step's
``settle_still_period`` after the first look it passed on, passes too and shows the same
screen near the step's window (:class:`askcache.replay.watching.Watch`)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from askcache import Agent, CacheExecutionSettings, CacheWritingSettings, CachingSettings
from askcache.conversation.turns import Conversation
from askcache.foundation.geometry import Point
from askcache.replay import CacheExecutor
from askcache.replay.result import ReplayResult
from askcache.replay.screens import FIRST_POLL_SECONDS, POLL_SECONDS, Screen, screen_of
from askcache.replay.watching import Watch
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    SimulatedFormApp,
    WindowedFormApp,
)
from askcache.tools import ComputerTool, ToolCollection
from tests.helpers import GOAL, record_form
from tests.unit.test_replay import FinishingSpeaker, LateTypingApp

STILL = CacheExecutionSettings().settle_still_period


class StillDrawing(SimulatedFormApp):
    """A form that goes on drawing after each action: a block (``box``, by default in its
    bottom-right corner, away from every step's point) changes shade for ``frames`` looks
    (for ever with ``None``), then is gone. Notes each look and each action in order."""

    def __init__(
        self, frames: int | None, box: tuple[int, int, int, int] = (560, 330, 620, 380)
    ) -> None:
        super().__init__()
        self.frames = frames
        self.box = box
        self.left: int | None = 0
        self.order: list[str] = []

    def _acted(self, name: str) -> None:
        self.order.append(name)
        self.left = self.frames

    def click(self, point: Point | None, button: str, count: int, modifiers: str | None) -> None:
        self._acted("click")
        super().click(point, button, count, modifiers)

    def type_text(self, text: str) -> None:
        self._acted("type")
        super().type_text(text)

    def screenshot(self) -> Image.Image:
        image = super().screenshot()
        drawing = self.left is None or self.left > 0
        shade = 40 + (sum(1 for e in self.order if e.startswith("look")) * 70) % 200
        if drawing:
            image.paste((shade, shade, shade), self.box)
            if self.left is not None:
                self.left -= 1
        self.order.append(f"look {shade if drawing else 'done'}")
        return image


def _replay(
    cache_file: Any,
    screen: Any,
    *,
    windows: Callable[[], Any] | None = None,
    slept: Callable[[float], None] | None = None,
    **settings: Any,
) -> ReplayResult:
    """Replay ``cache_file`` on ``screen`` with a clock only the replay's pauses move (each
    told to ``slept`` first); the end state is not compared unless ``settings`` say so."""
    now = [0.0]

    def sleep(seconds: float) -> None:
        if slept is not None:
            slept(seconds)
        now[0] += seconds

    tool = ComputerTool(screen)
    executor = CacheExecutor(
        screen=tool.capture, windows=windows, sleep=sleep, clock=lambda: now[0]
    )
    executor.activate_cache_execution(
        cache_file,
        "form.json",
        execution_settings=CacheExecutionSettings(**{"end_state": "off", **settings}),
    )
    Conversation(
        [executor, FinishingSpeaker()], ToolCollection([tool]), first_speaker=executor.name
    ).run(GOAL)
    assert executor.result is not None
    return executor.result


def _acted_on_still_screens(order: list[str]) -> bool:
    """Every action but the first came right after two looks at the finished screen."""
    actions = [i for i, event in enumerate(order) if not event.startswith("look")]
    return all(order[i - 2] == order[i - 1] == "look done" for i in actions[1:])


def test_a_step_waits_until_the_screen_its_check_passed_on_stops_changing(
    storage: LocalCacheStorage,
) -> None:
    # After each action the form goes on drawing for 3 looks. Every later action runs only
    # once two looks in a row showed the same screen; acting on the first look that passes
    # (settle_still_period=0) acts while the form is still drawing.
    cache_file = record_form(storage)
    app = StillDrawing(frames=3)
    result = _replay(cache_file, app)
    assert (result.status, result.handbacks) == ("completed", 0)
    assert app.order.count("click") + app.order.count("type") == 3
    assert _acted_on_still_screens(app.order), app.order

    app = StillDrawing(frames=3)
    result = _replay(cache_file, app, settle_still_period=0)
    assert (result.status, result.handbacks) == ("completed", 0)
    assert not _acted_on_still_screens(app.order), app.order


def test_a_screen_that_never_stops_changing_is_acted_on_after_the_quiet_period(
    storage: LocalCacheStorage,
) -> None:
    # An animation away from the steps never stops: each step whose checks pass acts after
    # settle_quiet_period, not after settle_timeout, and the replay never hands back.
    cache_file = record_form(storage)
    result = _replay(
        cache_file, StillDrawing(frames=None), settle_quiet_period=0.5, settle_timeout=10
    )
    assert (result.status, result.handbacks) == ("completed", 0)
    acted = [step for step in result.steps if step.action in ("left_click", "type")]
    assert len(acted) == 3
    # (a float clock's sums round: 0.499999... is the quiet period's look)
    assert all(0.5 - 1e-6 <= step.waited_seconds < 1.0 for step in acted[1:])


def _record_windowed(cache: Path) -> Any:
    screen = WindowedFormApp(at=(0, 0))
    script = FormFillingScript(screen.app, "Ada Lovelace", to_model=screen.to_screen)
    with MessagesApiStandIn(script) as api:
        agent = Agent(api.client(), [ComputerTool(screen)], model="claude-test")
        settings = CachingSettings(
            strategy="record",
            cache_dir=cache,
            writing_settings=CacheWritingSettings(filename="form.json"),
        )
        assert agent.act(GOAL, settings).status == "done"
    return load_cache_file(LocalCacheStorage(cache), "form.json")


@pytest.mark.parametrize(
    ("at", "box"),
    [
        ((380, 360), (560, 330, 620, 380)),  # the window moved: watched where it is now
        ((10, 10), (560, 378, 620, 400)),  # drawn on the window's bottom edge, off the tile grid
    ],
    ids=["moved window", "window's edge"],
)
def test_the_still_screen_is_judged_where_the_steps_window_is(
    tmp_path: Path, at: Point, box: tuple[int, int, int, int]
) -> None:
    # The form, recorded at the screen's corner, is replayed elsewhere (its window found
    # there), and goes on drawing inside its frame after each action: every action waits
    # for the drawing to end there, not where the window was recorded, and tiles the frame
    # only partly covers are watched too.
    cache_file = _record_windowed(tmp_path / "cache")
    app = StillDrawing(frames=3, box=box)
    screen = WindowedFormApp(app=app, at=at)
    result = _replay(cache_file, screen, windows=screen.windows)
    assert (result.status, result.handbacks) == ("completed", 0)
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]
    assert _acted_on_still_screens(app.order), app.order


class _Looks:
    """A screen for a :class:`Watch` alone: the same image at every look, counted, with a
    clock that only the watch's pauses move."""

    def __init__(self, storage: LocalCacheStorage, **settings: Any) -> None:
        self.file = record_form(storage)
        self.settings = CacheExecutionSettings(**settings)
        self.image = SimulatedFormApp().screenshot()
        self.now = 0.0
        self.looks = 0
        self.pauses: list[float] = []

    def watch(self, passes_from: float) -> tuple[float, float]:
        """Watch until a check that passes from ``passes_from`` seconds on counts: the time
        of the look it counted on, and the time it first passed."""
        first: list[float] = []

        def evaluate(seen: Screen) -> float:
            if self.now >= passes_from and not first:
                first.append(self.now)
            return self.now

        watching = Watch.begin(
            screen_of(None, self.image),
            self.now,
            evaluate,
            lambda at: at >= passes_from,
            watchable=True,
            timeout=self.settings.settle_timeout,
            quiet_period=self.settings.settle_quiet_period,
            config=self.file.metadata.screen_state,
            still=lambda at: STILL,
        )
        while isinstance(watching, Watch):
            self.pauses.append(watching.look_at - self.now)
            self.now = watching.look_at
            self.looks += 1
            watching = watching.saw(screen_of(None, self.image), self.now)
        return watching.outcome, first[0]


def test_a_check_that_begins_to_pass_on_an_unchanged_screen_still_waits_for_one_more_look(
    storage: LocalCacheStorage,
) -> None:
    # The screen's thumbnail never changes, but the check passes only from 50 ms on (what
    # changed is too fine for a thumbnail): the step acts on a look the still period after
    # the first look it passed on, not on that first look.
    looks = _Looks(storage)
    counted, first = looks.watch(passes_from=0.05)
    assert counted == pytest.approx(first + STILL)


def test_a_check_that_first_passes_as_the_timeout_runs_out_still_waits_for_one_more_look(
    storage: LocalCacheStorage,
) -> None:
    looks = _Looks(storage, settle_timeout=0.1, settle_quiet_period=0.5)
    counted, first = looks.watch(passes_from=0.099)
    assert first >= 0.099
    assert counted == pytest.approx(first + STILL)


def test_with_no_quiet_period_a_passing_check_still_gets_its_still_look(
    storage: LocalCacheStorage,
) -> None:
    looks = _Looks(storage, settle_quiet_period=0)
    counted, first = looks.watch(passes_from=0.0)
    assert first == 0.0
    assert counted == pytest.approx(STILL)
    assert looks.looks == 1  # the first screen, then one look the still period later
    assert looks.pauses == [pytest.approx(STILL)]


def test_a_delay_between_actions_makes_the_next_step_look_at_the_screen_again(
    storage: LocalCacheStorage,
) -> None:
    # The form draws the typed name 4 looks late, so the replay sees it on a look of its
    # own; with a fixed delay between actions, the Save click is not checked on that look
    # (taken before the delay) but on one taken after it.
    cache_file = record_form(storage)
    app = LateTypingApp(late=4)
    sleeps: list[tuple[int, float]] = []
    result = _replay(
        cache_file,
        app,
        slept=lambda seconds: sleeps.append((len(app.order), seconds)),
        delay_time_between_action=0.5,
        settle_still_period=0,
    )
    assert result.status == "completed"
    drawn = app.order.index("look name='Ada Lovelace'")
    delay = next(at for at, seconds in sleeps if seconds == 0.5 and at > drawn)
    assert app.order[delay : delay + 2] == ["look name='Ada Lovelace'", "click"]


def test_the_next_step_acts_once_the_screen_that_showed_the_effect_stays_still(
    storage: LocalCacheStorage,
) -> None:
    # The form draws the typed name 4 looks after the keys: the replay's wait for that
    # effect sees it on its own capture; the Save click that follows is checked on that
    # very capture, and clicked after one more look, settle_still_period later, shows the
    # same screen (a frame still being drawn would have changed by then).
    cache_file = record_form(storage)
    app = LateTypingApp(late=4)
    pauses: list[tuple[int, float]] = []  # (looks and actions so far, seconds)
    result = _replay(
        cache_file,
        app,
        slept=lambda seconds: pauses.append((len(app.order), seconds)),
        end_state="report",
    )
    assert (result.status, result.handbacks) == ("completed", 0)
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]
    order = app.order
    typed = order.index("type")
    drawn = order.index("look name='Ada Lovelace'")
    assert order[typed + 1 : drawn] == ["look name=''"] * (drawn - typed - 1)
    assert drawn - typed > 2  # the effect was waited for: the result and more looks
    assert result.steps[2].effect == "seen"
    # one look to see the screen stay still, then the click: no look in between
    assert order[drawn + 1 : drawn + 3] == ["look name='Ada Lovelace'", "click"]
    assert [seconds for at, seconds in pauses if at == drawn + 1] == [pytest.approx(STILL)]
    # the wait for the effect looked again soon, then less often: each pause twice the last
    waits = [seconds for at, seconds in pauses if typed < at <= drawn]
    assert len(waits) == drawn - typed - 1  # a pause before each look but the result's
    # (the driver sleeps until an instant: the sums of a float clock round)
    assert waits[0] == pytest.approx(FIRST_POLL_SECONDS)
    assert all(b == pytest.approx(min(2 * a, POLL_SECONDS)) for a, b in pairwise(waits))
