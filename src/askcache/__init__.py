"""askcache: record a computer-use agent's run once, replay it with no model calls.

Before every replayed click or keystroke the screen around the action point is compared
with the recording (a perceptual hash of a region); when it differs, control goes back to
the model.

This module holds what the README and docs write (``from askcache import Agent, ...``);
everything else is reached from its subpackage (docs/architecture.md lists them). Names that
moved still work from their old import path, with a :class:`DeprecationWarning`, until 0.2.
"""

from askcache import _moved
from askcache.agent.act import ActResult, Agent, VisionAgent
from askcache.cachefile.format import CacheFile
from askcache.cachefile.parse import parse_cache_file
from askcache.cachefile.signing import SigningKeys, sign_cache_file, verify_cache_file
from askcache.errors import AskCacheError
from askcache.loop import AsyncLoopReplay, LoopReplay, record_messages
from askcache.replay.executor import CacheExecutor
from askcache.replay.guard import check_replayable
from askcache.replay.result import ReplayResult
from askcache.settings import (
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    HealMode,
)
from askcache.storage.base import CacheStorage, LocalCacheStorage, load_cache_file, save_cache_file
from askcache.storage.ledger import RunLedger, RunRecord, open_ledger
from askcache.storage.remote import storage_for
from askcache.storage.versions import TrajectoryVersions
from askcache.tools.base import Tool, ToolCollection, ToolOutput
from askcache.tools.computer import ComputerTool

__version__ = "0.1.0"

__all__ = [
    "ActResult",
    "Agent",
    "AskCacheError",
    "AsyncLoopReplay",
    "CacheExecutionSettings",
    "CacheExecutor",
    "CacheFile",
    "CacheStorage",
    "CacheWritingSettings",
    "CachingSettings",
    "ComputerTool",
    "HealMode",
    "LocalCacheStorage",
    "LoopReplay",
    "ReplayResult",
    "RunLedger",
    "RunRecord",
    "SigningKeys",
    "Tool",
    "ToolCollection",
    "ToolOutput",
    "TrajectoryVersions",
    "VisionAgent",
    "__version__",
    "check_replayable",
    "load_cache_file",
    "open_ledger",
    "parse_cache_file",
    "record_messages",
    "save_cache_file",
    "sign_cache_file",
    "storage_for",
    "verify_cache_file",
]

_moved.install()
__getattr__ = _moved.forward(__name__)
