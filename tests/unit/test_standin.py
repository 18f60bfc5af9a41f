"""The Messages API stand-in: real HTTP, the real client, the API's validation rules."""

from __future__ import annotations

import re

import anthropic
import pytest

from askcache.testing import (
    MessagesApiStandIn,
    RequestRejectedError,
    text_reply,
    tool_use_reply,
    validate_request,
)

IMAGE = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
}


def _body(*messages: dict[str, object], **extra: object) -> dict[str, object]:
    return {"model": "m", "max_tokens": 10, "messages": list(messages), **extra}


def test_real_client_gets_scripted_replies_and_requests_are_kept() -> None:
    with MessagesApiStandIn(
        [tool_use_reply("computer", {"action": "screenshot"}), text_reply("done", input_tokens=7)]
    ) as api:
        client = api.client()
        first = client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "go"}]
        )
        assert first.stop_reason == "tool_use"
        assert first.content[0].type == "tool_use"
        call = first.content[0]
        second = client.messages.create(
            model="m",
            max_tokens=10,
            messages=[
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": call.id,
                            "name": "computer",
                            "input": {"action": "screenshot"},
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": call.id, "content": [IMAGE]}
                    ],
                },
            ],
        )
        assert (second.stop_reason, second.usage.input_tokens) == ("end_turn", 7)
        assert len(api.requests) == 2
        assert api.remaining == 0
        with pytest.raises(anthropic.InternalServerError, match="no reply left"):
            client.messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "again"}]
            )


def test_cache_only_fields_are_rejected_over_http() -> None:
    with MessagesApiStandIn([text_reply("never")]) as api:
        with pytest.raises(
            anthropic.BadRequestError, match="visual_representation: Extra inputs are not permitted"
        ):
            api.client().messages.create(
                model="m",
                max_tokens=10,
                messages=[
                    {"role": "user", "content": "go"},
                    {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "t1",
                                "name": "computer",
                                "input": {},
                                "visual_representation": "00",
                            }
                        ],
                    },  # type: ignore[typeddict-unknown-key]
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
                ],
            )
        assert api.requests == []
        assert api.remaining == 1


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (_body({"role": "user", "content": "hi", "usage": {}}), "messages.0.usage"),
        (_body({"role": "assistant", "content": "hi"}), "first message must use the user role"),
        (
            _body(
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "c", "input": {}}],
                },
                {"role": "user", "content": "no result"},
            ),
            "without tool_result",
        ),
        (
            _body({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz"}]}),
            "unexpected tool_use_id",
        ),
        (
            _body(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "@@"},
                        }
                    ],
                }
            ),
            "invalid base64",
        ),
        (_body({"role": "user", "content": "a"}, stop_reason="x"), "stop_reason: Extra inputs"),
        (
            _body(
                {"role": "user", "content": "a"},
                tools=[
                    {
                        "type": "computer_20250124",
                        "name": "computer",
                        "display_width_px": 1,
                        "display_height_px": 1,
                    }
                ],
            ),
            "requires the 'computer-use-2025-01-24' beta",
        ),
    ],
)
def test_validation_rules(body: dict[str, object], fragment: str) -> None:
    with pytest.raises(RequestRejectedError, match=fragment):
        validate_request(body)


def test_consecutive_user_turns_are_merged_like_the_api() -> None:
    validate_request(
        _body(
            {"role": "user", "content": "a"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "c", "input": {}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
            {"role": "user", "content": "replay stopped"},
        )
    )


def test_a_policy_answers_every_request() -> None:
    seen: list[int] = []

    def policy(request: dict[str, object]) -> dict[str, object]:
        seen.append(len(request["messages"]))  # type: ignore[arg-type]
        return text_reply("ok")

    with MessagesApiStandIn(policy) as api:
        for _ in range(3):
            api.client().messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
    assert seen == [1, 1, 1]


CACHED = {"type": "ephemeral"}
COMPUTER = {
    "type": "computer_20251124",
    "name": "computer",
    "display_width_px": 640,
    "display_height_px": 400,
}


def _cached_turns(count: int) -> list[dict[str, object]]:
    """``count`` user turns whose text carries ``cache_control``, with answers between."""
    turns: list[dict[str, object]] = []
    for i in range(count):
        if i:
            turns.append({"role": "assistant", "content": f"answer {i}"})
        turns.append(
            {
                "role": "user",
                "content": [{"type": "text", "text": f"q{i}", "cache_control": CACHED}],
            }
        )
    return turns


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            _body(
                *_cached_turns(3), system=[{"type": "text", "text": "s", "cache_control": CACHED}]
            ),
            "",
        ),
        (_body(*_cached_turns(4), tools=[COMPUTER]), ""),
        (
            _body(
                *_cached_turns(3),
                system=[{"type": "text", "text": "s", "cache_control": CACHED}],
                tools=[{**COMPUTER, "cache_control": CACHED}],
            ),
            "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        ),
        (
            _body(
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "c", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t",
                            "content": [
                                {"type": "text", "text": "a", "cache_control": CACHED},
                                {"type": "text", "text": "b", "cache_control": CACHED},
                            ],
                        },
                        {"type": "text", "text": "c", "cache_control": CACHED},
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "d", "cache_control": CACHED}],
                },
                system=[{"type": "text", "text": "s", "cache_control": CACHED}],
            ),
            "Found 5",
        ),
        (
            _body(
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "c", "input": {}}],
                },
                {"role": "user", "content": "the replay stopped"},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
            ),
            "Did not find 1 tool_result block",
        ),
        (_body(*_cached_turns(1), tools=[{**COMPUTER, "display": 1}]), "tools.0.display: Extra"),
        (_body(*_cached_turns(1), tools=[{"type": "teleport_20990101"}]), "unknown tool type"),
        (
            _body(*_cached_turns(1), system=[{"type": "text", "text": "s", "lang": "en"}]),
            "system.0.lang: Extra",
        ),
        (
            _body(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "a",
                            "cache_control": {"type": "ephemeral", "x": 1},
                        }
                    ],
                }
            ),
            "messages.0.content.0.cache_control.x: Extra",
        ),
    ],
)
def test_the_api_rules_on_cache_breakpoints_tools_and_results(
    body: dict[str, object], fragment: str
) -> None:
    if not fragment:
        validate_request(body, betas=["computer-use-2025-11-24"])  # the API takes it
        return
    with pytest.raises(RequestRejectedError, match=re.escape(fragment)):
        validate_request(body, betas=["computer-use-2025-11-24"])


def test_five_cache_breakpoints_get_the_apis_400_over_http() -> None:
    with (
        MessagesApiStandIn([text_reply("never")]) as api,
        pytest.raises(anthropic.BadRequestError) as raised,
    ):
        api.client().messages.create(
            model="m",
            max_tokens=10,
            messages=_cached_turns(5),  # type: ignore[arg-type]
        )
    assert raised.value.status_code == 400
    assert raised.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        },
    }
    assert api.requests == []
