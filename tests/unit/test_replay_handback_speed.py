"""A changed screen hands back at the speed of the screen: where the step's window is listed
and stays unchanged for ``settle_window_still`` while its check fails, the replay hands back
then, not after ``settle_timeout``; while the window is missing it is waited for (an
application started late). The clock is the replay's own: only its pauses move it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from PIL import Image

from askcache import CacheExecutionSettings
from askcache.cachefile.format import CacheFile
from askcache.conversation.turns import Conversation
from askcache.foundation.screen.windows import WindowFrame
from askcache.replay import CacheExecutor
from askcache.replay.result import ReplayResult
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import FolderLedger, RunLedger, RunRecord, steps_digest
from askcache.testing import SimulatedFormApp, WindowedFormApp
from askcache.tools import ComputerTool, ToolCollection
from tests.helpers import GOAL
from tests.unit.test_replay import FinishingSpeaker
from tests.unit.test_replay_still import _record_windowed, _replay

SETTINGS = CacheExecutionSettings()


class LateWindow(WindowedFormApp):
    """The form's window appears only after ``late`` looks: until then the desktop is empty
    and no window is listed."""

    def __init__(self, late: int, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.late = late
        self.looks = 0

    def windows(self) -> list[WindowFrame]:
        return super().windows() if self.looks > self.late else list(self.others)

    def screenshot(self) -> Image.Image:
        self.looks += 1
        if self.looks <= self.late:
            return Image.new("RGB", self.screen, self.background)
        return super().screenshot()


class BlankWindow(WindowedFormApp):
    """The form's window is listed from the start, but blank (mapped, not drawn) for the
    first ``late`` looks."""

    def __init__(self, late: int, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.late = late
        self.looks = 0

    def screenshot(self) -> Image.Image:
        self.looks += 1
        image = super().screenshot()
        if self.looks <= self.late:
            width, height = self.app.width, self.app.height
            image.paste((255, 255, 255), (*self.at, self.at[0] + width, self.at[1] + height))
        return image


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> CacheFile:
    return _record_windowed(Path(tmp_path_factory.mktemp("cache")))


def _changed() -> WindowedFormApp:
    app = SimulatedFormApp()
    app.set_layout("banner")  # a notice pushes the form down: every step's region differs
    return WindowedFormApp(app=app)


def test_a_changed_screen_whose_window_is_listed_hands_back_once_the_window_is_still(
    recorded: CacheFile,
) -> None:
    screen = _changed()
    result = _replay(recorded, screen, windows=screen.windows)
    # step 0 is a screenshot; step 1, the first click, is refused
    assert (result.status, result.stopped_at_step, result.steps_run) == ("handed_back", 1, 1)
    assert screen.app.saved == []
    waited = result.steps[-1].waited_seconds
    # the still window, not the settle timeout: unchanged for settle_window_still (one look
    # more at most: the looks are a poll pause apart)
    assert SETTINGS.settle_window_still <= waited < SETTINGS.settle_window_still + 0.05
    assert "the application has answered and shows another screen" in (result.reason or "")


def test_the_still_window_can_be_set(recorded: CacheFile) -> None:
    screen = _changed()
    result = _replay(recorded, screen, windows=screen.windows, settle_window_still=2.0)
    assert result.status == "handed_back"
    assert 2.0 <= result.steps[-1].waited_seconds < 2.05


def test_without_a_window_list_the_first_step_still_waits_the_settle_timeout(
    recorded: CacheFile,
) -> None:
    # nothing tells an application that has not started from one that shows another screen
    screen = _changed()
    result = _replay(recorded, screen, windows=None, settle_timeout=2.0)
    assert result.status == "handed_back"
    assert result.steps[-1].waited_seconds >= 2.0
    assert "settle_timeout" in (result.reason or "")


def test_a_window_that_is_not_listed_is_waited_for_up_to_the_settle_timeout(
    recorded: CacheFile,
) -> None:
    # the form is drawn but another window is listed in its place: the step's window is
    # missing, so the replay waits for it as for an application started late
    other = WindowFrame(x=0, y=0, width=300, height=200, wm_class="Other", title="Other")
    screen = _changed()
    screen.wm_class, screen.title = "Elsewhere", "Not the form"
    result = _replay(recorded, screen, windows=lambda: [other], settle_timeout=2.0)
    assert result.status == "handed_back"
    assert result.steps[-1].waited_seconds >= 2.0


def test_an_application_started_late_is_waited_for_and_replayed(recorded: CacheFile) -> None:
    # for 2 seconds of looks the desktop is empty and the window is not listed; then the
    # form appears as recorded: no hand-back, every step runs
    screen = LateWindow(late=120)
    result = _replay(recorded, screen, windows=screen.windows)
    assert (result.status, result.handbacks) == ("completed", 0)
    assert screen.app.saved == [{"name": "Ada Lovelace", "email": ""}]
    assert result.steps[1].waited_seconds > 1.0  # the first click waited for the window


def _replay_with_ledger(
    cache_file: CacheFile, screen: WindowedFormApp, ledger: RunLedger
) -> ReplayResult:
    """:func:`_replay`, the executor reading past waits from ``ledger``."""
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    tool = ComputerTool(screen)
    executor = CacheExecutor(
        screen=tool.capture,
        windows=screen.windows,
        sleep=sleep,
        clock=lambda: now[0],
        ledger=ledger,
    )
    executor.activate_cache_execution(
        cache_file, "form.json", execution_settings=CacheExecutionSettings(end_state="off")
    )
    Conversation(
        [executor, FinishingSpeaker()], ToolCollection([tool]), first_speaker=executor.name
    ).run(GOAL)
    assert executor.result is not None
    return executor.result


def test_once_five_runs_are_known_the_steps_past_waits_bound_the_still_window(
    recorded: CacheFile, tmp_path: Path
) -> None:
    # five earlier runs of the same steps on this screen each passed the first click after
    # 40 ms: its budget is their 99th percentile plus half of it, at least 0.25 s, so the
    # changed screen hands back after 0.25 s unchanged instead of settle_window_still
    ledger = FolderLedger(LocalCacheStorage(tmp_path))
    digest = steps_digest(recorded.trajectory)
    for minute in range(5):
        ledger.append(
            RunRecord(
                trajectory="form.json",
                event="replay",
                status="completed",
                started_at=datetime(2026, 11, 1, 9, minute, tzinfo=UTC),
                steps_digest=digest,
                step_waits={1: 0.04},
            )
        )
    result = _replay_with_ledger(recorded, _changed(), ledger)
    assert (result.status, result.stopped_at_step) == ("handed_back", 1)
    assert 0.25 <= result.steps[-1].waited_seconds < 0.3
    # four runs are not enough: settle_window_still decides
    fewer = FolderLedger(LocalCacheStorage(tmp_path / "fewer"))
    for record in ledger.records("form.json")[:4]:
        fewer.append(record)
    result = _replay_with_ledger(recorded, _changed(), fewer)
    assert SETTINGS.settle_window_still <= result.steps[-1].waited_seconds


def test_a_window_listed_but_not_drawn_yet_is_waited_for(recorded: CacheFile) -> None:
    # the window is mapped (listed) but blank for about 2 seconds of looks, far longer than
    # settle_window_still: a blank window shows nothing yet, so the replay waits for it
    screen = BlankWindow(late=120)
    result = _replay(recorded, screen, windows=screen.windows)
    assert (result.status, result.handbacks) == ("completed", 0)
    assert result.steps[1].waited_seconds > 1.0


def test_a_window_that_appears_during_the_wait_is_not_cut_short(recorded: CacheFile) -> None:
    # the window appears after a second of looks, drawn but showing another screen: it
    # belongs to an application that is starting, so the first step waits as before (the
    # settle timeout) rather than for settle_window_still
    app = SimulatedFormApp()
    app.set_layout("banner")
    screen = LateWindow(late=60, app=app)
    result = _replay(recorded, screen, windows=screen.windows, settle_timeout=3.0)
    assert result.status == "handed_back"
    assert result.steps[-1].waited_seconds >= 3.0
