"""Replay: a cache file's steps, checked on the screen before and after each one.

- :mod:`.session`: :class:`ReplaySession`, one replay: the state machine that takes each
  step through the phases, one module each: :mod:`.observe`, :mod:`.wait`, :mod:`.check`
  (whether a step may run), :mod:`.act`, :mod:`.verify`, :mod:`.end_state`, and after a
  hand-back :mod:`.rejoin`; they share :mod:`.state` and return :mod:`.commands`;
- :mod:`.guard`: what a replay checks before its first action;
- :mod:`.executor`: :class:`CacheExecutor`, the speaker that routes between a session and
  the conversation;
- :mod:`.handback`: what the model is told when a replay stops or finishes;
- :mod:`.result`: :class:`ReplayResult`, :class:`StepRecord`, :class:`EndStateVerdict`;
- :mod:`.tools`: the tools that let the model list, execute and resume trajectories;
- :mod:`.dry_run`: what a replay would decide on given screens, without acting.
"""

from askcache.replay.dry_run import DryRunStep, dry_run
from askcache.replay.executor import CACHE_EXECUTOR, CacheExecutor
from askcache.replay.result import EndStateVerdict, ReplayResult, ReplayStatus, StepRecord
from askcache.replay.session import ReplaySession
from askcache.replay.tools import (
    ExecuteCachedTrajectory,
    ListCachedTrajectories,
    ResumeCachedTrajectory,
    describe_cache_file,
)

__all__ = [
    "CACHE_EXECUTOR",
    "CacheExecutor",
    "DryRunStep",
    "EndStateVerdict",
    "ExecuteCachedTrajectory",
    "ListCachedTrajectories",
    "ReplayResult",
    "ReplaySession",
    "ReplayStatus",
    "ResumeCachedTrajectory",
    "StepRecord",
    "describe_cache_file",
    "dry_run",
]
