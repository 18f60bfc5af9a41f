"""The replayed part of a conversation's history: only its latest screenshot kept.

Each replayed step's tool result carries the screenshot the computer tool took after it. The
replay reads it once (to check the step's effect) and looks at the screen itself for the
next step, and no model is asked while the replay runs: a replayed step's screenshot is of
use only until the next replayed result arrives. :class:`LatestReplayedScreenshot` then drops
it from the older result, whose text says so. The memory a replay keeps stays flat in its
number of steps, and a model taking over after a hand-back sees the latest screen, not
hundreds of old ones. The model's own screenshots are never dropped, and a run whose history
is recorded or healed afterwards keeps every screenshot (``keep_replayed_screenshots`` of
:class:`~askcache.replay.executor.CacheExecutor`).
"""

from __future__ import annotations

from askcache.foundation.messages import (
    ImageBlockParam,
    MessageParam,
    TextBlockParam,
    ToolResultBlockParam,
)

__all__ = ["SCREENSHOT_NOT_KEPT", "LatestReplayedScreenshot"]

SCREENSHOT_NOT_KEPT = (
    "(screenshot not kept: a replayed step, whose screen the replay checked itself; "
    "the latest screenshot is in a later result)"
)
"""What a replayed result says in place of the screenshot it dropped."""


def _has_image(result: ToolResultBlockParam) -> bool:
    return not isinstance(result.content, str) and any(
        isinstance(block, ImageBlockParam) for block in result.content
    )


def _drop_images(result: ToolResultBlockParam) -> None:
    assert not isinstance(result.content, str)
    kept = [block for block in result.content if not isinstance(block, ImageBlockParam)]
    result.content = [*kept, TextBlockParam(text=SCREENSHOT_NOT_KEPT)]


class LatestReplayedScreenshot:
    """Keeps the screenshot of the latest replayed result only (see the module docstring)."""

    def __init__(self) -> None:
        self._awaited: str | None = None
        self._shown: ToolResultBlockParam | None = None

    def emitted(self, call_id: str) -> None:
        """The replay emitted the call ``call_id``: its result comes next."""
        self._awaited = call_id

    def arrived(self, messages: list[MessageParam]) -> None:
        """Look at the result of the call emitted last, if it is the last message: when it
        carries a screenshot, the older replayed result's screenshot is dropped."""
        call_id, self._awaited = self._awaited, None
        if call_id is None or not messages:
            return
        result = next((r for r in messages[-1].tool_results if r.tool_use_id == call_id), None)
        if result is None or not _has_image(result):
            return
        if self._shown is not None:
            _drop_images(self._shown)
        self._shown = result
