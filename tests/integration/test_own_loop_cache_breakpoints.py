"""The user's own loop with prompt caching in the reference loop's way, through re-joins and
hand-backs: no request carries more ``cache_control`` blocks than the API takes (four).

The loop marks its system prompt and, before each call, the latest three user turns, and
clears the fourth (the behaviour of the reference computer-use loop's prompt caching, which
assumes one new user turn per call). askcache appends several user turns between two calls;
the local stand-in refuses a request with more than four breakpoints as the API does (400),
so the real ``anthropic`` client would raise here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import pytest

from askcache import CacheExecutionSettings, CacheWritingSettings, CachingSettings
from askcache.loop import LoopReplay
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.testing.messages_api import Reply, tool_use_reply

from .test_own_loop import BETAS, TOOLS, run_tool

pytestmark = pytest.mark.integration

SYSTEM = [{"type": "text", "text": "You fill in forms.", "cache_control": {"type": "ephemeral"}}]


def inject_prompt_caching(messages: list[dict[str, Any]]) -> None:
    """The reference loop's breakpoints: the last block of each of the latest three user
    turns (with a list of blocks) is marked; the fourth latest is cleared, and older ones
    are left as they are (one new user turn per call is assumed)."""
    left = 3
    for message in reversed(messages):
        content = message["content"]
        if message["role"] != "user" or not isinstance(content, list):
            continue
        if left:
            left -= 1
            content[-1]["cache_control"] = {"type": "ephemeral"}
        else:
            content[-1].pop("cache_control", None)
            break


def sampling_loop(
    client: anthropic.Anthropic,
    app: SimulatedFormApp,
    messages: list[dict[str, Any]],
    replay: LoopReplay,
) -> None:
    """The reference loop's shape with prompt caching, and askcache's lines."""
    while True:
        for action in replay.actions(messages):
            replay.tool_result(run_tool(app, action))
        if replay.finished:
            return
        inject_prompt_caching(messages)
        response = client.beta.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=1024,
            system=SYSTEM,  # type: ignore[arg-type]
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


@dataclass
class NoticeAgain(SimulatedFormApp):
    """The form app; once armed, its notice comes back right after text is typed."""

    armed: bool = False

    def type_text(self, text: str) -> None:
        super().type_text(text)
        if self.armed:
            self.armed = False
            self.layout = "banner"


def _settings(cache_dir: Path, strategy: str) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(filename="login.json", parameters={"user": "bob"}),
        execution_settings=CacheExecutionSettings(
            parameter_values={"user": "bob"}, settle_quiet_period=0.2, settle_timeout=1
        ),
    )


def _breakpoints(request: dict[str, Any]) -> int:
    return json.dumps(request).count('"cache_control"')


def test_re_joins_and_hand_backs_never_send_more_than_four_breakpoints(tmp_path: Path) -> None:
    app = NoticeAgain()
    with MessagesApiStandIn(FormFillingScript(app, "bob")) as api:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Log in as bob"}]
        replay = LoopReplay("login.json", messages, settings=_settings(tmp_path, "record"))
        sampling_loop(api.client(), app, messages, replay)
        assert replay.done(messages).conversation.recorded_file == "login.json"

    # the notice covers the form: hand-back; the model dismisses it (Escape) and the replay
    # re-joins; the notice comes back after the replay types: a second hand-back, and the
    # model saves the form itself
    app = NoticeAgain(layout="banner", armed=True)
    model = FormFillingScript(app, "bob")

    def escape_first(request: dict[str, Any]) -> Reply:
        if app.armed:  # the first hand-back: the notice is dismissed
            return tool_use_reply("computer", {"action": "key", "text": "Escape"})
        return model(request)

    with MessagesApiStandIn(escape_first) as api:
        messages = [{"role": "user", "content": "Log in as bob"}]
        replay = LoopReplay("login.json", messages, settings=_settings(tmp_path, "execute"))
        sampling_loop(api.client(), app, messages, replay)
        result = replay.done(messages)
    assert api.rejected == []
    run = result.replay
    assert run is not None
    assert (run.handbacks, run.rejoins) == (2, 1)
    assert app.saved == [{"name": "bob", "email": ""}]
    assert len(api.requests) >= 2
    assert max(_breakpoints(request) for request in api.requests) <= 4
    # the loop's own marks still count: the system prompt and the latest user turns
    assert all(_breakpoints(request) >= 2 for request in api.requests)


@dataclass
class NoticeAfterEachAction(SimulatedFormApp):
    """The form app whose notice comes back after each click or typed text, ``notices``
    times in all."""

    notices: int = 0

    def _again(self) -> None:
        if self.notices > 0:
            self.notices -= 1
            self.layout = "banner"

    def click(self, point: Any, button: str, count: int, modifiers: str | None) -> None:
        super().click(point, button, count, modifiers)
        self._again()

    def type_text(self, text: str) -> None:
        super().type_text(text)
        self._again()


def test_many_re_joins_and_hand_backs_stay_within_four_breakpoints(tmp_path: Path) -> None:
    app = NoticeAfterEachAction()
    with MessagesApiStandIn(FormFillingScript(app, "bob")) as api:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Log in as bob"}]
        replay = LoopReplay("login.json", messages, settings=_settings(tmp_path, "record"))
        sampling_loop(api.client(), app, messages, replay)
        replay.done(messages)

    app = NoticeAfterEachAction(layout="banner", notices=2)
    model = FormFillingScript(app, "bob")

    def dismiss_notices(request: dict[str, Any]) -> Reply:
        if app.layout == "banner":
            return tool_use_reply("computer", {"action": "key", "text": "Escape"})
        return model(request)

    with MessagesApiStandIn(dismiss_notices) as api:
        messages = [{"role": "user", "content": "Log in as bob"}]
        replay = LoopReplay("login.json", messages, settings=_settings(tmp_path, "execute"))
        sampling_loop(api.client(), app, messages, replay)
        result = replay.done(messages)
    assert api.rejected == []
    run = result.replay
    assert run is not None
    assert run.handbacks >= 3
    assert run.rejoins >= 2
    assert app.saved == [{"name": "bob", "email": ""}]
    assert max(_breakpoints(request) for request in api.requests) <= 4
