"""What a replay keeps: no image of a step without a report, the latest replayed screenshot
only (when nothing is rebuilt from the history), screenshots read back without decoding."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image, ImageChops

from askcache.conversation.turns import Conversation
from askcache.foundation.messages import ImageBlockParam, MessageParam, TextBlockParam
from askcache.foundation.screen.png import decode_png, encode_png, forget_images
from askcache.foundation.settings import CacheExecutionSettings
from askcache.replay import CacheExecutor
from askcache.replay.screenshot_trim import SCREENSHOT_NOT_KEPT
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import SimulatedFormApp
from askcache.tools import ComputerTool, ToolCollection
from tests.helpers import GOAL, record_form
from tests.unit.test_replay import ChangesAfterTheFirstClick, FinishingSpeaker


def _images(messages: list[MessageParam]) -> list[tuple[int, str]]:
    """(message index, tool_use_id) of every screenshot in the history."""
    return [
        (index, result.tool_use_id)
        for index, message in enumerate(messages)
        for result in message.tool_results
        if not isinstance(result.content, str)
        for block in result.content
        if isinstance(block, ImageBlockParam)
    ]


def _notes(messages: list[MessageParam]) -> int:
    return sum(
        1
        for message in messages
        for result in message.tool_results
        if not isinstance(result.content, str)
        for block in result.content
        if isinstance(block, TextBlockParam) and block.text == SCREENSHOT_NOT_KEPT
    )


def _replay(
    storage: LocalCacheStorage, app: SimulatedFormApp, *, keep: bool
) -> tuple[CacheExecutor, list[MessageParam]]:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    tool = ComputerTool(app)
    executor = CacheExecutor(
        screen=tool.capture, keep_replayed_screenshots=keep, sleep=sleep, clock=lambda: now[0]
    )
    executor.activate_cache_execution(
        load_cache_file(storage, "form.json"),
        "form.json",
        execution_settings=CacheExecutionSettings(settle_quiet_period=0.5),
    )
    outcome = Conversation(
        [executor, FinishingSpeaker()], ToolCollection([tool]), first_speaker=executor.name
    ).run(GOAL)
    return executor, outcome.messages


def test_a_replay_keeps_only_its_latest_screenshot_and_no_image_of_a_step(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
    app = SimulatedFormApp()
    executor, messages = _replay(storage, app, keep=False)
    assert executor.result is not None
    assert executor.result.status == "completed"
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]
    replayed = [
        call.id for message in messages if message.role == "assistant" for call in message.tool_uses
    ]
    assert len(replayed) == 4
    assert [call_id for _, call_id in _images(messages)] == [replayed[-1]]
    assert _notes(messages) == 3  # each older result says why its screenshot is gone
    assert executor.views == {}


def test_at_a_hand_back_the_history_shows_the_latest_screen_of_the_replay(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
    app = ChangesAfterTheFirstClick()
    executor, messages = _replay(storage, app, keep=False)
    assert executor.result is not None
    assert (executor.result.status, executor.result.stopped_at_step) == ("handed_back", 2)
    found = _images(messages)
    assert len(found) == 1
    index, _ = found[0]
    # the result of the first click (step 1), the last step the replay ran
    clicked = messages[index - 1].tool_uses[0]
    assert clicked.input["action"] == "left_click"
    assert messages[-1].role == "user"
    assert "stopped at step 2" in str(messages[-1].content)


def test_by_default_every_replayed_screenshot_stays_for_a_recording_or_a_heal(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
    _, messages = _replay(storage, SimulatedFormApp(), keep=True)
    assert len(_images(messages)) == 4
    assert _notes(messages) == 0


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L"])
def test_a_screenshot_encoded_to_keep_reads_back_as_its_own_pixels_without_decoding(
    mode: str,
) -> None:
    forget_images()
    image = SimulatedFormApp().screenshot().convert(mode)
    data = encode_png(image, keep=True)
    assert decode_png(data) is image
    decoded = Image.open(io.BytesIO(base64.b64decode(data)))
    assert decoded.mode == image.mode
    assert ImageChops.difference(decoded.convert("RGBA"), image.convert("RGBA")).getbbox() is None
    other = encode_png(image)  # not kept: decoding it gives another image, the same pixels
    forget_images()
    assert decode_png(other) is not image
    assert (
        ImageChops.difference(decode_png(other).convert("RGBA"), image.convert("RGBA")).getbbox()
        is None
    )
