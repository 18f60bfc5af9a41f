"""A secret given only at replay time reaches the screen, never the model.

A trajectory recorded with a secret parameter stores ``{{secret:user}}``; its replay is given
the value (``parameter_values``) and types it. Right after that a notice appears over the form,
so the replay hands back and the model finishes the task. Every request the real
``anthropic`` client sent to the local stand-in over HTTP is read: none holds the value, and
the replayed ``type`` call is there with the placeholder. Both ways a replay runs: an
``Agent`` and the user's own loop (a loop in the reference loop's shape).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import pytest

from askcache import Agent, CacheExecutionSettings, CacheWritingSettings, CachingSettings
from askcache.loop import LoopReplay
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.tools.computer import ComputerTool

from .test_own_loop import BETAS, TOOLS, run_tool

pytestmark = pytest.mark.integration

RECORDED = "alice-Rec0rded-pw"
GIVEN = "bob-G1ven-at-replay"
"""The value given only to the replay: the model must never see it."""
GOAL = "Fill in the Name field and save the contact"


@dataclass
class NoticeAfterTyping(SimulatedFormApp):
    """The form app; once armed, a notice pushes the form down right after text is typed."""

    armed: bool = False

    def type_text(self, text: str) -> None:
        super().type_text(text)
        if self.armed:
            self.armed = False
            self.layout = "banner"


def sampling_loop(
    client: anthropic.Anthropic,
    app: SimulatedFormApp,
    messages: list[dict[str, Any]],
    replay: LoopReplay,
) -> None:
    """The reference loop's shape, with askcache's lines: the user's own loop."""
    while True:
        for action in replay.actions(messages):
            replay.tool_result(run_tool(app, action))
        if replay.finished:
            return
        response = client.beta.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=1024,
            messages=messages,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            betas=BETAS,
        )
        content = [block.model_dump(exclude_none=True) for block in response.content]
        messages.append({"role": "assistant", "content": content})
        results = [run_tool(app, block) for block in content if block["type"] == "tool_use"]
        if not results:
            return
        messages.append({"role": "user", "content": results})


def _settings(cache_dir: Path, strategy: str, value: str) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(
            filename="form.json", secret_parameters={"user": value}
        ),
        execution_settings=CacheExecutionSettings(
            parameter_values={"user": value},
            delay_time_between_action=0,
            settle_quiet_period=0.2,
            settle_timeout=1,
        ),
    )


def _type_calls(request: dict[str, Any]) -> list[str]:
    return [
        block["input"]["text"]
        for message in request["messages"]
        if message["role"] == "assistant"
        for block in message["content"]
        if block.get("type") == "tool_use" and block["input"].get("action") == "type"
    ]


def _check_requests(api: MessagesApiStandIn) -> None:
    assert api.rejected == []
    assert api.requests, "the replay handed back: the model was asked"
    for request in api.requests:
        assert GIVEN not in json.dumps(request)
    # the model sees that the replay typed the secret, by its placeholder
    assert _type_calls(api.requests[0]) == ["{{secret:user}}"]


def _check_files(cache_dir: Path) -> None:
    assert "{{secret:user}}" in LocalCacheStorage(cache_dir).read("form.json").decode()
    for path in cache_dir.rglob("*"):
        if path.is_file():
            assert GIVEN.encode() not in path.read_bytes(), path


def _agent(api: MessagesApiStandIn, app: SimulatedFormApp) -> Agent:
    return Agent(api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None)  # type: ignore[arg-type]


def test_an_agent_never_sends_the_model_a_secret_given_at_replay(tmp_path: Path) -> None:
    app = NoticeAfterTyping()
    with MessagesApiStandIn(FormFillingScript(app, RECORDED)) as api:
        recorded = _agent(api, app).act(GOAL, _settings(tmp_path, "record", RECORDED))
    assert recorded.conversation.recorded_file == "form.json"

    app = NoticeAfterTyping(armed=True)
    with MessagesApiStandIn(FormFillingScript(app, GIVEN)) as api:
        result = _agent(api, app).act(GOAL, _settings(tmp_path, "execute", GIVEN))
        _check_requests(api)
    assert result.replay is not None
    assert result.replay.handbacks == 1
    assert app.saved == [{"name": GIVEN, "email": ""}]  # the screen got the value
    _check_files(tmp_path)


def test_the_own_loop_never_sends_the_model_a_secret_given_at_replay(tmp_path: Path) -> None:
    def run(app: SimulatedFormApp, strategy: str, value: str) -> tuple[Any, MessagesApiStandIn]:
        with MessagesApiStandIn(FormFillingScript(app, value)) as api:
            messages: list[dict[str, Any]] = [{"role": "user", "content": GOAL}]
            replay = LoopReplay(
                "form.json", messages, settings=_settings(tmp_path, strategy, value)
            )
            sampling_loop(api.client(), app, messages, replay)
            result = replay.done(messages)
            # the loop's own list, as the model got it (its last message is the model's answer)
            assert GIVEN not in json.dumps(messages[:-1])
        return result, api

    recorded, _ = run(NoticeAfterTyping(), "record", RECORDED)
    assert recorded.conversation.recorded_file == "form.json"
    app = NoticeAfterTyping(armed=True)
    result, api = run(app, "execute", GIVEN)
    _check_requests(api)
    assert result.replay is not None
    assert result.replay.handbacks == 1
    assert app.saved == [{"name": GIVEN, "email": ""}]
    _check_files(tmp_path)
