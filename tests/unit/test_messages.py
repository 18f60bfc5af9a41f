"""Message models: parsing by type tag, the API serializer, conversion from the SDK."""

from __future__ import annotations

import json
import typing

import anthropic.types as sdk
import pytest

from askcache.foundation.errors import AskCacheError
from askcache.foundation.messages import (
    ImageBlockParam,
    MessageParam,
    TextBlockParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
    Usage,
    message_from_sdk,
    messages_for_api,
)
from askcache.testing import SimulatedFormApp
from tests.helpers import form_calls, run_history

SDK_BLOCKS = {
    "text": sdk.TextBlockParam,
    "image": sdk.ImageBlockParam,
    "tool_use": sdk.ToolUseBlockParam,
    "tool_result": sdk.ToolResultBlockParam,
}


def _cached_history() -> list[MessageParam]:
    app = SimulatedFormApp()
    messages = run_history(app, form_calls(app))
    for message in messages:
        for block in message.tool_uses:
            block.visual_representation = "ffff0000ffff0000"
            block.visual_detail = "0f" * 32
        if message.role == "assistant":
            message.stop_reason = "tool_use"
            message.usage = Usage(input_tokens=10, output_tokens=5)
    return messages


def test_blocks_are_discriminated_by_type() -> None:
    message = MessageParam.model_validate(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hi"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "AA=="},
                        },
                    ],
                },
            ],
        }
    )
    assert isinstance(message.blocks[0], TextBlockParam)
    result = message.blocks[1]
    assert isinstance(result, ToolResultBlockParam)
    assert isinstance(result.content, list)
    assert isinstance(result.content[0], ImageBlockParam)


def test_unknown_block_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="does not match any of the expected tags"):
        MessageParam.model_validate({"role": "user", "content": [{"type": "video", "x": 1}]})


def test_cache_dump_keeps_cache_only_fields() -> None:
    messages = _cached_history()
    dumped = messages[1].model_dump(mode="json")
    assert dumped["usage"]["input_tokens"] == 10
    assert dumped["content"][0]["visual_representation"] == "ffff0000ffff0000"


def test_api_dump_drops_every_cache_only_field() -> None:
    for message in messages_for_api(_cached_history()):
        assert set(message) <= {"role", "content"}
        if isinstance(message["content"], list):
            for block in message["content"]:
                assert "visual_representation" not in block
                assert "visual_detail" not in block


def test_api_dump_keys_are_keys_of_the_sdk_request_types() -> None:
    for message in messages_for_api(_cached_history()):
        assert set(message) <= set(typing.get_type_hints(sdk.MessageParam.__args__[0]))  # type: ignore[attr-defined]
        blocks = message["content"] if isinstance(message["content"], list) else []
        for block in blocks:
            assert set(block) <= set(typing.get_type_hints(SDK_BLOCKS[block["type"]]))
            for item in block.get("content") or []:
                if isinstance(item, dict):
                    assert set(item) <= set(typing.get_type_hints(SDK_BLOCKS[item["type"]]))


def test_api_dump_via_model_dump_context_is_the_same_mechanism() -> None:
    block = ToolUseBlockParam(
        id="t", name="computer", input={}, visual_representation="00", visual_detail="11"
    )
    for_api = block.model_dump(mode="json", context={"for_api": True})
    assert "visual_representation" not in for_api
    assert "visual_detail" not in for_api
    assert block.model_dump(mode="json")["visual_representation"] == "00"
    assert block.model_dump(mode="json")["visual_detail"] == "11"


def test_message_from_sdk_response_keeps_stop_reason_and_usage() -> None:
    response = sdk.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": "Clicking Save."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "left_click",
                    "input": {"coordinate": [10, 20]},
                    "toolset_name": "computer",
                },
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1200, "output_tokens": 40, "cache_read_input_tokens": None},
        }
    )
    message = message_from_sdk(response)
    assert message.stop_reason == "tool_use"
    assert message.usage == Usage(input_tokens=1200, output_tokens=40)
    call = message.tool_uses[0]
    assert (call.name, call.toolset_name, call.input) == (
        "left_click",
        "computer",
        {"coordinate": [10, 20]},
    )


def test_message_from_sdk_rejects_unhandled_blocks_clearly() -> None:
    response = sdk.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    with pytest.raises(AskCacheError, match="server_tool_use"):
        message_from_sdk(response)


def test_usage_adds_up() -> None:
    total = Usage(input_tokens=1, output_tokens=2) + Usage(
        input_tokens=3, cache_read_input_tokens=4
    )
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (4, 2, 10)


def test_only_the_most_recent_screenshots_are_sent() -> None:
    from askcache.conversation.speakers import OMITTED_SCREENSHOT, keep_recent_screenshots

    history = _cached_history()  # four tool results, each with a screenshot
    trimmed = keep_recent_screenshots(history, 2)
    sent = messages_for_api(trimmed)
    kinds = [
        item["type"]
        for message in sent
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
        for item in block["content"]
    ]
    assert kinds == ["text", "text", "text", "text", "text", "image", "text", "image"]
    assert OMITTED_SCREENSHOT in json.dumps(sent)
    assert (
        sum(
            1
            for m in history
            for r in m.tool_results
            for i in r.content
            if isinstance(i, ImageBlockParam)
        )
        == 4
    )  # type: ignore[union-attr]
    assert keep_recent_screenshots(history, None) is history
    assert keep_recent_screenshots(history, 10) == history
