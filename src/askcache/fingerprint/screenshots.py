"""Screenshots in a message history: decoding them once, finding the latest one."""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from askcache.foundation.messages import ImageBlockParam, MessageParam
from askcache.foundation.screen.png import decode_png

__all__ = ["decode_screenshot", "find_recent_screenshot", "find_recent_screenshot_block"]


def decode_screenshot(data: str, where: str = "a screenshot") -> Image.Image:
    """Decode a base64 image once; later calls with the same string reuse the image, and a
    screenshot this process encoded to keep (the computer tool's) is not decoded at all
    (:func:`askcache.foundation.screen.png.decode_png`, which also holds it to askcache's pixel
    limit).

    The returned image is shared: crop or copy it, never draw on it.

    Raises:
        InvalidScreenshotError: not base64, or not a PNG or JPEG image (a
            :class:`~askcache.foundation.errors.ScreenshotTooLargeError` when it has more pixels
            than :data:`askcache.foundation.limits.MAX_IMAGE_PIXELS`).
    """
    return decode_png(data, where)


def find_recent_screenshot_block(
    messages: Sequence[MessageParam], from_index: int | None = None
) -> tuple[int, ImageBlockParam] | None:
    """The latest image inside a tool_result at or before ``from_index``, with its message index.

    ``from_index=None`` searches from the last message.
    """
    start = len(messages) - 1 if from_index is None else min(from_index, len(messages) - 1)
    for index in range(start, -1, -1):
        message = messages[index]
        if message.role != "user":
            continue
        for result in reversed(message.tool_results):
            if isinstance(result.content, str):
                continue
            for item in reversed(result.content):
                if isinstance(item, ImageBlockParam):
                    return index, item
    return None


def find_recent_screenshot(
    messages: Sequence[MessageParam], from_index: int | None = None
) -> Image.Image | None:
    """The latest screenshot (an image in a tool_result) at or before ``from_index``, decoded."""
    found = find_recent_screenshot_block(messages, from_index)
    if found is None:
        return None
    index, block = found
    return decode_screenshot(block.source.data, f"message {index}")
