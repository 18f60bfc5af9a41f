"""A tool result the user's loop hands in: parsed, its screenshot decoded and checked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PIL import Image

from askcache.fingerprint.screenshots import decode_screenshot
from askcache.foundation.messages import ImageBlockParam, ToolResultBlockParam
from askcache.loop.usage_errors import InvalidToolResultError, NotAScreenshotError, one_line

__all__ = ["as_given", "parse_result", "screenshot_of", "text_of"]


def parse_result(result: Mapping[str, Any] | ToolResultBlockParam) -> ToolResultBlockParam:
    if isinstance(result, ToolResultBlockParam):
        return result
    try:
        return ToolResultBlockParam.model_validate(dict(result))
    except (ValueError, TypeError) as exc:
        raise InvalidToolResultError(f"not a tool_result block: {one_line(exc)}") from exc


def as_given(result: Mapping[str, Any] | ToolResultBlockParam) -> Any:
    block = result if isinstance(result, ToolResultBlockParam) else dict(result)
    return {"role": "user", "content": [block]}


def screenshot_of(block: ToolResultBlockParam) -> Image.Image | None:
    """The result's last image, decoded (``None``: it has none).

    Raises:
        NotAScreenshotError: an image that is not one.
    """
    if isinstance(block.content, str):
        return None
    images = [item for item in block.content if isinstance(item, ImageBlockParam)]
    if not images:
        return None
    where = f"the tool result for {block.tool_use_id!r}"
    try:
        for image in images[:-1]:
            decode_screenshot(image.source.data, where)
        return decode_screenshot(images[-1].source.data, where)
    except ValueError as exc:
        raise NotAScreenshotError(block.tool_use_id, str(exc)) from exc


def text_of(block: ToolResultBlockParam) -> str:
    if isinstance(block.content, str):
        return block.content or "no text"
    texts = [getattr(item, "text", "") for item in block.content]
    return " ".join(t for t in texts if t) or "no text"
