"""A replay never acts on a changed screen and never calls a wrong outcome a success.

Through the public API: the real anthropic client over HTTP to the local stand-in, the
simulated form app as the screen. Each case is one the issue measured or one of its kin.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from askcache import (
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
    open_ledger,
)
from askcache.foundation.errors import CacheInvalidatedError
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    SimulatedFormApp,
    text_reply,
    tool_use_reply,
)

pytestmark = pytest.mark.integration


def _record(cache_dir: Path, app: SimulatedFormApp, name: str = "alice", **writing: Any) -> None:
    with MessagesApiStandIn(FormFillingScript(app, name)) as api:
        result = Agent(api.client(), [ComputerTool(app)]).act(
            f"Log in as {name}",
            CachingSettings(
                strategy="record",
                cache_dir=cache_dir,
                writing_settings=CacheWritingSettings(
                    filename="login.json", parameters={"user": name}, **writing
                ),
            ),
        )
    assert result.conversation.recorded_file == "login.json"


def _execute(
    cache_dir: Path,
    app: SimulatedFormApp,
    script: Any,
    user: str = "bob",
    heal: str | None = None,
    **execution: Any,
) -> Any:
    with MessagesApiStandIn(script) as api:
        return Agent(api.client(), [ComputerTool(app)]).act(
            f"Log in as {user}",
            CachingSettings(
                strategy="execute",
                cache_dir=cache_dir,
                heal=heal,
                writing_settings=CacheWritingSettings(filename="login.json"),
                execution_settings=CacheExecutionSettings(
                    parameter_values={"user": user}, **execution
                ),
            ),
        )


def _stop(request: dict[str, Any]) -> dict[str, Any]:
    return text_reply("I stop here.")


def test_quick_start_on_an_app_that_still_holds_alice_never_ends_completed(
    tmp_path: Path,
) -> None:
    app = SimulatedFormApp()
    _record(tmp_path, app)
    assert app.values["name"] == "alice"  # not reset: the field still holds the old value
    result = _execute(tmp_path, app, _stop)
    replay = result.replay
    assert replay is not None
    # before the click (the whole field is checked) or at the latest before typing (the area
    # the typing filled when recorded is not empty)
    assert replay.status == "handed_back"
    assert replay.stopped_at_step in (1, 2)
    assert re.search(r"whole target|looks different", replay.reason or "")
    assert {"name": "alicebob", "email": ""} not in app.saved
    assert app.values["name"] == "alice"


def test_a_fresh_app_replays_with_another_value_and_the_end_state_is_confirmed(
    tmp_path: Path,
) -> None:
    _record(tmp_path, SimulatedFormApp())
    app = SimulatedFormApp()
    result = _execute(tmp_path, app, _stop)
    assert result.model_calls == 0
    assert result.replay.status == "completed"
    assert result.replay.end_state is not None
    assert result.replay.end_state.matched
    assert app.saved == [{"name": "bob", "email": ""}]


def test_a_step_before_the_first_screenshot_is_fingerprinted_all_the_same(
    tmp_path: Path,
) -> None:
    app = SimulatedFormApp()
    script = [
        tool_use_reply("computer", {"action": "left_click", "coordinate": [360, 88]}),
        tool_use_reply("computer", {"action": "type", "text": "alice"}),
        tool_use_reply("computer", {"action": "left_click", "coordinate": [115, 230]}),
        text_reply("done"),
    ]
    with MessagesApiStandIn(script) as api:
        Agent(api.client(), [ComputerTool(app)]).act(
            "Log in",
            CachingSettings(
                strategy="record",
                cache_dir=tmp_path,
                writing_settings=CacheWritingSettings(filename="login.json"),
            ),
        )
    steps = load_cache_file(LocalCacheStorage(tmp_path), "login.json").trajectory
    assert [s.visual_representation is not None for s in steps] == [True, True, True]
    # on a changed app the very first click is stopped
    changed = SimulatedFormApp(layout="banner")
    with MessagesApiStandIn([text_reply("stop")]) as api:
        result = Agent(api.client(), [ComputerTool(changed)]).act(
            "Log in",
            CachingSettings(
                strategy="execute",
                cache_dir=tmp_path,
                writing_settings=CacheWritingSettings(filename="login.json"),
            ),
        )
    assert (result.replay.status, result.replay.stopped_at_step) == ("handed_back", 0)
    assert changed.events == []


class FrozenApp(SimulatedFormApp):
    """A form that stopped answering clicks on Save (a hung handler)."""

    def _save(self) -> None:
        return


def test_an_action_that_has_no_effect_hands_back_after_it(tmp_path: Path) -> None:
    _record(tmp_path, SimulatedFormApp())
    app = FrozenApp()
    result = _execute(tmp_path, app, _stop, settle_quiet_period=0.2, settle_timeout=1)
    replay = result.replay
    assert (replay.status, replay.stopped_at_step) == ("handed_back", 3)
    assert "the action had no effect" in (replay.reason or "")
    request = result.conversation.messages[-2].content
    assert "was executed but did not work as recorded" in json.dumps(
        [b.model_dump() for b in request] if isinstance(request, list) else request
    )


class RetitledApp(SimulatedFormApp):
    """Saves, but then shows an error in its title bar, far from every action."""

    def screenshot(self) -> Any:
        image = super().screenshot()
        if self.saved:
            from PIL import ImageDraw

            ImageDraw.Draw(image).rectangle((300, 0, 640, 36), fill=(255, 235, 235))
        return image


def test_an_end_state_that_differs_is_completed_unverified_or_handed_back(
    tmp_path: Path,
) -> None:
    _record(tmp_path, SimulatedFormApp())
    result = _execute(tmp_path, RetitledApp(), _stop)
    replay = result.replay
    assert replay.status == "completed_unverified"
    assert replay.end_state is not None
    assert not replay.end_state.matched
    assert result.model_calls == 0
    asked: list[str] = []

    def confirm(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(json.dumps(request["messages"][-1]))
        return text_reply("The title shows an error; I report it.")

    result = _execute(tmp_path, RetitledApp(), confirm, end_state="hand_back")
    assert result.replay.status == "completed_unverified"
    assert result.model_calls == 1
    assert "differ from the recording" in asked[0]


def test_the_replay_rejoins_once_the_model_has_put_the_screen_back(tmp_path: Path) -> None:
    _record(tmp_path, SimulatedFormApp())
    app = SimulatedFormApp(layout="banner")
    calls: list[int] = []

    def dismiss(request: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        return tool_use_reply("computer", {"action": "key", "text": "Escape"})

    result = _execute(tmp_path, app, dismiss)
    replay = result.replay
    assert replay.status == "completed"
    assert (replay.handbacks, replay.rejoins) == (1, 1)
    assert result.model_calls == 1  # one call to dismiss the notice; the replay did the rest
    assert app.saved == [{"name": "bob", "email": ""}]


def test_replays_go_to_the_ledger_and_a_file_that_keeps_failing_is_invalidated(
    tmp_path: Path,
) -> None:
    _record(tmp_path, SimulatedFormApp())
    storage = LocalCacheStorage(tmp_path)
    recorded = storage.read("login.json")
    for _ in range(3):  # invalidation writes the file: not in the read-only default (heal off)
        result = _execute(
            tmp_path, SimulatedFormApp(layout="swapped"), _stop, heal="propose", rejoin=False
        )
        assert result.replay.status == "handed_back"
    records = open_ledger(storage).records("login.json")
    assert [r.status for r in records] == ["handed_back"] * 3 + ["refused"]
    # the Name field is where it was: each replay fills it and stops at the Save click
    assert records[0].stopped_at_step == 3
    assert records[0].saved_model_calls >= 0
    invalid = load_cache_file(storage, "login.json")
    assert not invalid.metadata.is_valid
    assert "the last 3 replays handed back at step 3" in (
        invalid.metadata.invalidation_reason or ""
    )
    assert storage.read("login.json") != recorded  # invalidation is the one write
    with pytest.raises(CacheInvalidatedError, match="allow_invalidated"):
        _execute(tmp_path, SimulatedFormApp(), _stop)
    forced = _execute(tmp_path, SimulatedFormApp(), _stop, allow_invalidated=True)
    assert forced.replay.status == "completed"


def test_a_version_2_file_replays_and_its_counts_move_to_the_ledger(tmp_path: Path) -> None:
    _record(tmp_path, SimulatedFormApp())
    storage = LocalCacheStorage(tmp_path)
    data = json.loads(storage.read("login.json"))
    data["version"] = 2
    for step in data["trajectory"]:
        step.pop("effect", None)
    for key in ("screen_state", "end_state", "start_state", "legacy_stats"):
        data["metadata"].pop(key, None)
    data["metadata"].update(execution_attempts=4, successes=3, failures=[])
    storage.write("login.json", json.dumps(data).encode())
    before = storage.read("login.json")
    for _ in range(2):
        assert _execute(tmp_path, SimulatedFormApp(), _stop).replay.status == "completed"
    records = open_ledger(storage).records("login.json")
    imported = [r for r in records if r.event == "imported"]
    assert [(r.attempts, r.successes) for r in imported] == [(4, 3)]
    assert [r.status for r in records if r.event == "replay"] == ["completed", "completed"]
    assert storage.read("login.json") == before
