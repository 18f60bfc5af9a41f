"""Recording: turn a finished conversation into a cache file.

:class:`CacheManager` reads the message history once, in execution order. For each tool call
it knows the screenshot that was the latest *before* the call ran (the result of the call
before it, even inside one assistant message holding several calls), hashes the region
around the call's point for validated actions, and writes the file through a storage.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime

from askcache.actions import action_anchors, parse_action
from askcache.cache_file import CacheFile, CacheMetadata, CoordinateSpace, RecordingStats
from askcache.messages import ImageBlockParam, MessageParam, ToolUseBlockParam, Usage
from askcache.parameters import parameterize
from askcache.settings import CacheWritingSettings
from askcache.storage import CacheStorage, save_cache_file
from askcache.visual import compute_step_representation, decode_screenshot, validation_config

__all__ = ["CACHING_TOOL_NAMES", "CacheManager", "default_filename", "steps_with_screens"]

logger = logging.getLogger(__name__)

CACHING_TOOL_NAMES = frozenset({"list_cached_trajectories", "execute_cached_trajectory"})
"""The caching tools' own calls, which are never recorded."""


def default_filename(goal: str, when: datetime | None = None) -> str:
    """A name from the goal's first words and the time: ``fill-form-20261122-101500.json``."""
    slug = re.sub(r"[^a-z0-9]+", "-", goal.lower()).strip("-")[:40].strip("-") or "trajectory"
    stamp = (when or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return f"{slug}-{stamp}.json"


def _last_image(message: MessageParam, tool_use_id: str | None = None) -> ImageBlockParam | None:
    found = None
    for result in message.tool_results:
        if tool_use_id is not None and result.tool_use_id != tool_use_id:
            continue
        if isinstance(result.content, list):
            for item in result.content:
                if isinstance(item, ImageBlockParam):
                    found = item
    return found


def steps_with_screens(
    messages: Sequence[MessageParam], skip_tools: Collection[str] = CACHING_TOOL_NAMES
) -> list[tuple[ToolUseBlockParam, ImageBlockParam | None]]:
    """Each recorded tool call with the latest screenshot from before it ran.

    Calls to ``skip_tools`` are left out.
    """
    steps: list[tuple[ToolUseBlockParam, ImageBlockParam | None]] = []
    latest: ImageBlockParam | None = None
    for index, message in enumerate(messages):
        if message.role == "user":
            latest = _last_image(message) or latest
            continue
        answer = messages[index + 1] if index + 1 < len(messages) else None
        for call in message.tool_uses:
            if call.toolset_name is None and call.name in skip_tools:
                continue
            steps.append((call, latest))
            if answer is not None and answer.role == "user":
                latest = _last_image(answer, call.id) or latest
    return steps


class CacheManager:
    """Records a conversation's tool calls into a cache file.

    Call :meth:`start_recording` when the task starts and :meth:`finish_recording` with the
    whole history when it is done (the :class:`~askcache.conversation.Conversation` does both).
    """

    def __init__(
        self,
        storage: CacheStorage,
        settings: CacheWritingSettings | None = None,
        *,
        model: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.storage = storage
        self.settings = settings or CacheWritingSettings()
        self.model = model
        self._clock = clock
        self._goal: str | None = None
        self._started: float | None = None

    def start_recording(self, goal: str) -> None:
        """Remember the goal and the start time."""
        self._goal = goal
        self._started = self._clock()

    def build_cache_file(self, messages: Sequence[MessageParam]) -> CacheFile:
        """The cache file for ``messages``, without writing it."""
        goal = self._goal
        if goal is None:
            first = messages[0] if messages else None
            goal = first.content if first and isinstance(first.content, str) else ""
        config = validation_config(self.settings)
        pairs = steps_with_screens(messages)
        trajectory: list[ToolUseBlockParam] = []
        space: CoordinateSpace | None = None
        anchors = action_anchors(call for call, _ in pairs)
        for (call, screen), anchor in zip(pairs, anchors, strict=True):
            fingerprint = None
            image = (
                decode_screenshot(
                    screen.source.data, f"the screenshot before step {len(trajectory)}"
                )
                if screen is not None
                else None
            )
            if image is not None and space is None:
                space = CoordinateSpace(width=image.width, height=image.height)
            action = parse_action(call)
            if (
                config is not None
                and action is not None
                and action.name in self.settings.validated_actions
            ):
                if image is None:
                    logger.warning(
                        "step %d (%s): no screenshot before it; not validated",
                        len(trajectory),
                        action.name,
                    )
                else:
                    fingerprint = compute_step_representation(image, call, config, pointer=anchor)
            trajectory.append(
                ToolUseBlockParam(
                    id=call.id,
                    name=call.name,
                    input=parameterize(call.input, self.settings.parameters),
                    toolset_name=call.toolset_name,
                    visual_representation=fingerprint.region if fingerprint else None,
                    visual_detail=fingerprint.detail if fingerprint else None,
                    visual_tone=fingerprint.tone if fingerprint else None,
                    visual_target=fingerprint.target if fingerprint else None,
                )
            )
        calls = [m.usage for m in messages if m.usage is not None]
        stats = RecordingStats(
            model_calls=len(calls),
            usage=sum(calls, Usage()),
            duration_seconds=None if self._started is None else self._clock() - self._started,
            model=self.model,
        )
        metadata = CacheMetadata(
            goal=parameterize(goal, self.settings.parameters),
            coordinate_space=space,
            visual_validation=config,
            recording=stats,
        )
        return CacheFile(
            metadata=metadata,
            trajectory=trajectory,
            cache_parameters=dict.fromkeys(self.settings.parameters, ""),
        )

    def finish_recording(self, messages: Sequence[MessageParam]) -> str:
        """Build the cache file from ``messages``, write it, and return its name."""
        cache_file = self.build_cache_file(messages)
        name = self.settings.filename or default_filename(self._goal or "trajectory")
        save_cache_file(self.storage, name, cache_file)
        logger.info(
            "recorded %d steps to %s", len(cache_file.trajectory), self.storage.describe(name)
        )
        return name
