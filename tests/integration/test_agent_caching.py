"""End to end: the real anthropic client, over HTTP, to the local Messages API stand-in.

Record a run, replay it with zero model calls, replay it on a changed screen and watch the
hand-back and the agent finishing; the same in the computer toolset shape; auto strategy;
the model choosing a trajectory through the caching tools; parameters.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path

import anthropic.types as sdk
import pytest

from askcache import (
    ActResult,
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
    open_ledger,
)
from askcache.foundation.messages import ImageBlockParam
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.ledger import StepWaits, steps_digest
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    SimulatedFormApp,
    text_reply,
    tool_use_reply,
)

pytestmark = pytest.mark.integration

GOAL = "Type Ada Lovelace into the Name field and press Save"
SDK_BLOCKS = {
    "text": sdk.TextBlockParam,
    "image": sdk.ImageBlockParam,
    "tool_use": sdk.ToolUseBlockParam,
    "tool_result": sdk.ToolResultBlockParam,
}


def _settings(
    cache_dir: Path, strategy: str, filename: str | None = "form.json", **execution: object
) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(filename=filename),
        execution_settings=CacheExecutionSettings(delay_time_between_action=0, **execution),  # type: ignore[arg-type]
    )


def _agent(
    api: MessagesApiStandIn, app: SimulatedFormApp, version: str = "computer_20250124"
) -> Agent:
    return Agent(
        api.client(),
        [ComputerTool(app, version=version)],
        model="claude-test",
        sleep=lambda s: None,
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("version", ["computer_20250124", "computer_toolset_20260801"])
def test_record_replay_and_hand_back(tmp_path: Path, version: str) -> None:
    shape = "toolset" if version.startswith("computer_toolset") else "tool"
    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace", shape=shape)  # type: ignore[arg-type]
    with MessagesApiStandIn(script) as api:
        recorded = _agent(api, app, version).act(GOAL, _settings(tmp_path, "record"))
        assert recorded.status == "done"
        assert recorded.model_calls == 5 == len(api.requests)
        assert app.saved == [{"name": "Ada Lovelace", "email": ""}]
        assert recorded.conversation.recorded_file == "form.json"
        assert api.rejected == []
        for request in api.requests:  # what went over the wire is what the SDK types allow
            for message in request["messages"]:
                for block in message["content"] if isinstance(message["content"], list) else []:
                    assert set(block) <= set(typing.get_type_hints(SDK_BLOCKS[block["type"]]))

        cache_file = load_cache_file(LocalCacheStorage(tmp_path), "form.json")
        assert [s.visual_representation is not None for s in cache_file.trajectory] == [
            False,
            True,
            True,
            True,
        ]
        assert cache_file.metadata.recording.model_calls == 5
        assert cache_file.metadata.recording.model == "claude-test"
        assert cache_file.metadata.recording.usage.input_tokens > 0

        replay_app = SimulatedFormApp()
        script.app = replay_app
        replayed = _agent(api, replay_app, version).act(GOAL, _settings(tmp_path, "execute"))
        assert replayed.status == "done"
        assert replayed.model_calls == 0
        assert len(api.requests) == 5  # no request during the replay
        assert replay_app.saved == [{"name": "Ada Lovelace", "email": ""}]
        assert replayed.replay is not None
        assert (replayed.replay.status, replayed.replay.validated) == ("completed", 3)

        changed = SimulatedFormApp(layout="banner")
        script.app = changed
        recovered = _agent(api, changed, version).act(GOAL, _settings(tmp_path, "execute"))
        assert recovered.replay is not None
        assert (recovered.replay.status, recovered.replay.stopped_at_step) == ("handed_back", 1)
        assert recovered.status == "done"
        assert recovered.model_calls == 5  # screenshot, click field, type, click Save, finish
        assert changed.saved == [{"name": "Ada Lovelace", "email": ""}]
        handback = json.dumps(api.requests[5]["messages"][-1])
        assert "stopped at step 1 of 4" in handback
        assert "distance" in handback
        assert "resume_cached_trajectory" in handback  # a tool the Agent offers
        assert api.rejected == []
        ledger = open_ledger(LocalCacheStorage(tmp_path))
        runs = ledger.records("form.json")
        assert [(r.status, r.model_calls) for r in runs] == [("completed", 0), ("handed_back", 5)]
        # each step's wait, for the next replays of these steps on this screen
        checked = {s.step_index: round(s.waited_seconds, 3) for s in replayed.replay.steps[1:]}
        assert list(checked) == [1, 2, 3]
        assert runs[0].step_waits == checked
        assert runs[1].step_waits == {}  # handed back at its first checked step
        profile = replayed.replay.profile
        assert recovered.replay.profile == profile
        waits = ledger.step_waits(
            "form.json", profile=profile, digest=steps_digest(cache_file.trajectory)
        )
        assert waits == StepWaits(runs=2, waits={i: [w] for i, w in checked.items()})


def test_auto_records_first_then_replays(tmp_path: Path) -> None:
    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace")
    with MessagesApiStandIn(script) as api:
        first = _agent(api, app).act(GOAL, _settings(tmp_path, "auto"))
        assert (first.strategy, first.model_calls) == ("record", 5)
        second_app = SimulatedFormApp()
        script.app = second_app
        second = _agent(api, second_app).act(GOAL, _settings(tmp_path, "auto"))
        assert (second.strategy, second.model_calls) == ("execute", 0)
        assert second_app.saved == [{"name": "Ada Lovelace", "email": ""}]


def test_corrupt_file_is_not_overwritten_by_auto(tmp_path: Path) -> None:
    (tmp_path / "form.json").write_text('{"version": 1, "metadata": ')
    with MessagesApiStandIn([]) as api, pytest.raises(Exception, match="truncated"):
        _agent(api, SimulatedFormApp()).act(GOAL, _settings(tmp_path, "auto"))
    assert (tmp_path / "form.json").read_text() == '{"version": 1, "metadata": '


def test_model_lists_and_executes_a_trajectory_with_parameters(tmp_path: Path) -> None:
    app = SimulatedFormApp()
    recording = CachingSettings(
        strategy="record",
        cache_dir=tmp_path,
        writing_settings=CacheWritingSettings(
            filename="contact.json", parameters={"person": "Ada Lovelace"}
        ),
    )
    with MessagesApiStandIn(FormFillingScript(app, "Ada Lovelace")) as api:
        _agent(api, app).act("Save the contact Ada Lovelace", recording)
    assert (
        load_cache_file(LocalCacheStorage(tmp_path), "contact.json").metadata.goal
        == "Save the contact {{person}}"
    )

    other = SimulatedFormApp()
    script = [
        tool_use_reply("list_cached_trajectories", {}),
        tool_use_reply(
            "execute_cached_trajectory",
            {"trajectory_file": "contact.json", "parameter_values": {"person": "Grace Hopper"}},
        ),
        text_reply("The contact Grace Hopper is saved."),
    ]
    with MessagesApiStandIn(script) as api:
        result = _agent(api, other).act(
            "Save the contact Grace Hopper", _settings(tmp_path, "execute", filename=None)
        )
        assert result.status == "done"
        assert result.model_calls == 3
        assert other.saved == [{"name": "Grace Hopper", "email": ""}]
        listing = json.dumps(api.requests[1]["messages"][-1])
        assert "contact.json" in listing
        assert "parameters: person" in listing
        assert "finished: all 4 steps were executed" in json.dumps(api.requests[2]["messages"][-1])
        tool_names = {tool.get("name") for tool in api.requests[0]["tools"]}
        assert {"computer", "list_cached_trajectories", "execute_cached_trajectory"} <= tool_names


def test_execute_with_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with (
        MessagesApiStandIn([]) as api,
        pytest.raises(FileNotFoundError, match=r"'form\.json' not found"),
    ):
        _agent(api, SimulatedFormApp()).act(GOAL, _settings(tmp_path, "execute"))


def _screenshots(result: ActResult) -> int:
    return sum(
        isinstance(block, ImageBlockParam)
        for message in result.conversation.messages
        for tool_result in message.tool_results
        if not isinstance(tool_result.content, str)
        for block in tool_result.content
    )


def test_a_read_only_replay_keeps_one_screenshot_and_one_that_may_heal_keeps_all(
    tmp_path: Path,
) -> None:
    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace")
    with MessagesApiStandIn(script) as api:
        _agent(api, app).act(GOAL, _settings(tmp_path, "record"))
        runs = {}
        for strategy in ("execute", "auto"):  # heal off under execute, auto under auto
            replay_app = SimulatedFormApp()
            script.app = replay_app
            runs[strategy] = _agent(api, replay_app).act(GOAL, _settings(tmp_path, strategy))
            assert replay_app.saved == [{"name": "Ada Lovelace", "email": ""}]
    execute, auto = runs["execute"], runs["auto"]
    assert execute.replay is not None
    assert auto.replay is not None
    assert execute.replay.status == auto.replay.status == "completed"
    assert (execute.model_calls, auto.model_calls) == (0, 0)
    assert _screenshots(execute) == 1
    assert _screenshots(auto) == len(auto.conversation.messages) // 2 == 4
    assert execute.views == auto.views == {}  # no report asked for
