"""The async twin of :class:`~askcache.loop.loop_replay.LoopReplay`, for loops on
``anthropic.AsyncAnthropic`` and async tool runners (as Anthropic's reference loop is).

It wraps the same step object and drives the same replay: the replay's pauses between looks
are awaited (``asyncio.sleep``), so the event loop stays free, and the checks run in the
event loop's thread, between two awaits (each a few milliseconds of hashing). Only
:meth:`AsyncLoopReplay.done` (the run's writes: a heal, the ledger, the storage) runs on a
worker thread. Nothing is decided here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from typing import Any

from PIL import Image

from askcache.agent.act import ActResult
from askcache.foundation.messages import ToolResultBlockParam
from askcache.foundation.settings import CachingSettings
from askcache.loop.loop_replay import LoopReplay
from askcache.loop.run import LoopStatus, RunEnd
from askcache.storage.cache_storage import CacheStorage

__all__ = ["AsyncLoopReplay"]


class AsyncLoopReplay:
    """:class:`~askcache.loop.loop_replay.LoopReplay` for an async loop: ``async for action in
    replay.actions(messages)``, ``replay.tool_result(...)`` (it never waits), and
    ``await replay.done(messages)``. The arguments and errors are
    :class:`~askcache.loop.loop_replay.LoopReplay`'s; opening it reads the trajectory (a short,
    blocking read)."""

    def __init__(
        self,
        name: str,
        messages: list[Any],
        *,
        settings: CachingSettings | None = None,
        storage: CacheStorage | None = None,
        model: str | None = None,
        display_size: tuple[int, int] | None = None,
        screen_size: tuple[int, int] | None = None,
        tools: Collection[str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.replay = LoopReplay(
            name,
            messages,
            settings=settings,
            storage=storage,
            model=model,
            display_size=display_size,
            screen_size=screen_size,
            tools=tools,
            sleep=sleep,
        )
        """The step object underneath."""

    @property
    def status(self) -> LoopStatus:
        """See :attr:`LoopReplay.status <askcache.loop.loop_replay.LoopReplay.status>`."""
        return self.replay.status

    @property
    def finished(self) -> bool:
        """True when every step ran and the task is done."""
        return self.replay.finished

    @property
    def handed_back(self) -> bool:
        """True while the model has the turn after a hand-back."""
        return self.replay.handed_back

    @property
    def messages(self) -> list[Any]:
        """Your loop's list, with what askcache appended."""
        return self.replay.messages

    async def actions(self, messages: list[Any] | None = None) -> AsyncIterator[dict[str, Any]]:
        """See :meth:`LoopReplay.actions <askcache.loop.loop_replay.LoopReplay.actions>`."""
        while (action := await self.next_action(messages)) is not None:
            yield action

    async def next_action(self, messages: list[Any] | None = None) -> dict[str, Any] | None:
        """See :meth:`LoopReplay.next_action <askcache.loop.loop_replay.LoopReplay.next_action>`;
        the replay's pauses are awaited."""
        steps = self.replay.next_action_steps(messages)
        try:
            while True:
                await asyncio.sleep(next(steps))
        except StopIteration as end:
            action: dict[str, Any] | None = end.value
            return action

    def tool_result(self, result: Mapping[str, Any] | ToolResultBlockParam) -> None:
        """See :meth:`LoopReplay.tool_result <askcache.loop.loop_replay.LoopReplay.tool_result>`."""
        self.replay.tool_result(result)

    async def done(
        self,
        messages: list[Any] | None = None,
        *,
        status: RunEnd = "done",
        screen: Image.Image | None = None,
    ) -> ActResult:
        """See :meth:`LoopReplay.done <askcache.loop.loop_replay.LoopReplay.done>`."""
        return await asyncio.to_thread(self.replay.done, messages, status=status, screen=screen)

    def close(self) -> None:
        """See :meth:`LoopReplay.close <askcache.loop.loop_replay.LoopReplay.close>`."""
        self.replay.close()
