"""Test helpers: real histories made by executing real tool calls on the simulated app."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PIL import Image

from askcache.cachefile.format import CacheFile
from askcache.fingerprint.step import decode_screenshot
from askcache.foundation.actions import ToolShape, make_tool_use
from askcache.foundation.messages import ImageBlockParam, MessageParam, ToolUseBlockParam
from askcache.foundation.settings import CacheWritingSettings
from askcache.record.recording import CacheManager
from askcache.storage.cache_storage import CacheStorage, load_cache_file
from askcache.testing import SimulatedFormApp
from askcache.tools import ComputerTool, ToolCollection

GOAL = "Type Ada Lovelace into Name and press Save"


def computer_call(action: str, shape: ToolShape = "tool", **arguments: Any) -> ToolUseBlockParam:
    """A model-style computer call with a fresh id, in either tool shape."""
    return make_tool_use(action, shape, **arguments)


def run_history(
    app: SimulatedFormApp,
    calls: Iterable[ToolUseBlockParam | list[ToolUseBlockParam]],
    *,
    goal: str = GOAL,
    tools: ToolCollection | None = None,
) -> list[MessageParam]:
    """Execute each call (or group of calls in one assistant message) for real on ``app``."""
    tools = tools or ToolCollection([ComputerTool(app)])
    messages = [MessageParam(role="user", content=goal)]
    for group in calls:
        blocks = group if isinstance(group, list) else [group]
        messages.append(MessageParam(role="assistant", content=list(blocks)))
        messages.append(
            MessageParam(role="user", content=[tools.run(block)[0] for block in blocks])
        )
    return messages


def form_calls(app: SimulatedFormApp, name: str = "Ada Lovelace") -> list[ToolUseBlockParam]:
    """The four steps that fill the form's Name field and save it."""
    return [
        computer_call("screenshot"),
        computer_call("left_click", coordinate=list(app.widget("name").center)),
        computer_call("type", text=name),
        computer_call("left_click", coordinate=list(app.widget("save").center)),
    ]


def record_form(
    storage: CacheStorage,
    name: str = "form.json",
    *,
    display_size: tuple[int, int] | None = None,
    **writing: Any,
) -> CacheFile:
    """Record the form-filling run on a fresh app into ``storage`` and load the file back;
    ``display_size``: the display's size as the computer tool would report it."""
    app = SimulatedFormApp()
    manager = CacheManager(
        storage, CacheWritingSettings(filename=name, **writing), display_size=display_size
    )
    manager.start_recording(GOAL)
    manager.finish_recording(run_history(app, form_calls(app)))
    return load_cache_file(storage, name)


def screenshot_in(message: MessageParam) -> Image.Image:
    """The screenshot carried by the first tool result of ``message``."""
    content = message.tool_results[0].content
    assert isinstance(content, list)
    image = content[1]
    assert isinstance(image, ImageBlockParam)
    return decode_screenshot(image.source.data)
