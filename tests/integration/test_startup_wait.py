"""Start-up wait on a real application: a replay started together with the application waits
for its window (up to ``settle_timeout``), and hands back naming that timeout when the window
never comes.

The application is launched by the desktop backend on the run's first screenshot, so the
replay's first look is always taken before the application exists: the replay can only finish
by waiting for it, however fast or slow the machine is; the run ledger keeps how long it
waited. Nothing here waits on a time margin: the replay's wait ends when the form is on screen
(its timeout is only a guard), and the form's state is read once it has answered every input
(:meth:`TkFormApp.settled`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bench.faults import GOAL, FaultyDesktop, record_form

from askcache import (
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    open_ledger,
)
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.ledger import steps_digest
from askcache.testing import MessagesApiStandIn, TkFormApp, VirtualDisplay, text_reply
from askcache.tools import ComputerTool

pytestmark = pytest.mark.integration

ADA = [{"name": "Ada Lovelace", "email": ""}]


class LaunchingDesktop(FaultyDesktop):
    """The real desktop backend (counting clicks) that launches the application on its first
    screenshot, in the background."""

    def __init__(self, display: str, launch: Callable[[], None] | None) -> None:
        super().__init__(display)
        self.launch = launch
        self.first_screen_empty: bool | None = None

    def screenshot(self) -> Any:
        image = super().screenshot()
        if self.first_screen_empty is None:
            self.first_screen_empty = image.getextrema() == ((0, 0), (0, 0), (0, 0))
            if self.launch is not None:
                self.launch()
        return image


def _settings(cache_dir: Path, timeout: float) -> CachingSettings:
    return CachingSettings(
        strategy="execute",
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(filename="form.json"),
        execution_settings=CacheExecutionSettings(settle_timeout=timeout),
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("startup")
    record_form(folder / "cache", folder)
    return folder / "cache"


def test_a_replay_started_with_the_application_waits_for_it(recorded: Path, tmp_path: Path) -> None:
    with VirtualDisplay(1280, 800) as screen:
        app = TkFormApp(screen.display, tmp_path / "state.json")
        starting = threading.Thread(target=app.start)
        backend = LaunchingDesktop(screen.display, starting.start)
        try:
            with MessagesApiStandIn(lambda request: text_reply("I stop.")) as api:
                tool = ComputerTool(backend, settle_delay=0.3)
                # the timeout only guards: the wait ends when the form is drawn
                result = Agent(api.client(), [tool], model="claude-test").act(
                    GOAL, _settings(recorded, timeout=120)
                )
            starting.join()  # the form is on screen once it has started
            saved = app.settled()["saved"]
        finally:
            if starting.ident is not None:
                starting.join()
            app.stop()
            backend.close()
    assert backend.first_screen_empty  # the first look came before the form existed
    replay = result.replay
    assert replay is not None
    assert (replay.status, result.model_calls, api.requests) == ("completed", 0, [])
    assert replay.steps[1].waited_seconds > 0  # the first click waited for the form
    assert saved == ADA
    # the ledger keeps that wait for the next replays of these steps on this screen
    storage = LocalCacheStorage(recorded)
    digest = steps_digest(load_cache_file(storage, "form.json").trajectory)
    past = open_ledger(storage).step_waits("form.json", profile=replay.profile, digest=digest)
    assert past.waits[1] == [round(replay.steps[1].waited_seconds, 3)]


def test_a_replay_whose_application_never_starts_hands_back_naming_the_timeout(
    recorded: Path,
) -> None:
    with VirtualDisplay(1280, 800) as screen:
        backend = LaunchingDesktop(screen.display, None)
        try:
            with MessagesApiStandIn(lambda request: text_reply("I stop.")) as api:
                tool = ComputerTool(backend, settle_delay=0.3)
                result = Agent(api.client(), [tool], model="claude-test").act(
                    GOAL, _settings(recorded, timeout=2)
                )
        finally:
            backend.close()
    replay = result.replay
    assert replay is not None
    assert (replay.status, replay.stopped_at_step) == ("handed_back", 1)
    assert "(settle_timeout 2 s) for the screen the replay's first step expects" in (
        replay.reason or ""
    )
    assert backend.clicks == 0
    assert result.model_calls == 1
    assert "settle_timeout" in str(api.requests[0]["messages"][-1])  # the model was told
