"""askcache inside your own computer-use loop: record the messages your loop already has, and
replay a trajectory by asking askcache for each next action, which your own tool runner runs.

- :func:`record_messages`: a finished run's messages -> a trajectory.
- :class:`LoopReplay` (and :class:`AsyncLoopReplay` for ``AsyncAnthropic`` loops): replay
  ``name`` through your loop, hand back to your model when a check fails, heal after.

The engine underneath is the one :class:`~askcache.Agent` runs (:mod:`askcache.replay`,
:mod:`askcache.heal`); docs/own-loop.md shows the reference loop with askcache added.
"""

from askcache.loop.aio import AsyncLoopReplay
from askcache.loop.loop_replay import LoopReplay
from askcache.loop.record import record_messages
from askcache.loop.run import LoopStatus
from askcache.loop.usage_errors import (
    InvalidToolResultError,
    LoopUsageError,
    NotAScreenshotError,
    ReplayOverError,
    ToolResultOrderError,
    UnknownToolResultError,
)

__all__ = [
    "AsyncLoopReplay",
    "InvalidToolResultError",
    "LoopReplay",
    "LoopStatus",
    "LoopUsageError",
    "NotAScreenshotError",
    "ReplayOverError",
    "ToolResultOrderError",
    "UnknownToolResultError",
    "record_messages",
]
