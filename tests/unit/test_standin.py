"""The Messages API stand-in: real HTTP, the real client, the API's validation rules."""

from __future__ import annotations

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
