"""askcache: record a computer-use agent's run once, replay it with no model calls.

Before every replayed click or keystroke the screen around the action point is compared
with the recording (a perceptual hash of a region); when it differs, control goes back to
the model.

This module holds what the README and docs write (``from askcache import Agent, ...``);
everything else is imported from the module that holds it (docs/architecture.md lists them).
Each name here is imported the first time it is used.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from askcache.agent.act import ActResult, Agent, VisionAgent
    from askcache.cachefile.format import CacheFile
    from askcache.cachefile.parse import parse_cache_file
    from askcache.cachefile.signing import SigningKeys, sign_cache_file, verify_cache_file
    from askcache.foundation.errors import AskCacheError
    from askcache.foundation.settings import (
        CacheExecutionSettings,
        CacheWritingSettings,
        CachingSettings,
        HealMode,
    )
    from askcache.loop import AsyncLoopReplay, LoopReplay, record_messages
    from askcache.replay.executor import CacheExecutor
    from askcache.replay.guard import check_replayable
    from askcache.replay.result import ReplayResult
    from askcache.storage.cache_storage import (
        CacheStorage,
        LocalCacheStorage,
        load_cache_file,
        save_cache_file,
    )
    from askcache.storage.ledger import RunLedger, RunRecord, open_ledger
    from askcache.storage.remote import storage_for
    from askcache.storage.versions import TrajectoryVersions
    from askcache.tools.computer import ComputerTool
    from askcache.tools.tool import Tool, ToolCollection, ToolOutput

_PUBLIC: dict[str, str] = {
    "ActResult": "askcache.agent.act",
    "Agent": "askcache.agent.act",
    "VisionAgent": "askcache.agent.act",
    "CacheFile": "askcache.cachefile.format",
    "parse_cache_file": "askcache.cachefile.parse",
    "SigningKeys": "askcache.cachefile.signing",
    "sign_cache_file": "askcache.cachefile.signing",
    "verify_cache_file": "askcache.cachefile.signing",
    "AskCacheError": "askcache.foundation.errors",
    "AsyncLoopReplay": "askcache.loop",
    "LoopReplay": "askcache.loop",
    "record_messages": "askcache.loop",
    "CacheExecutor": "askcache.replay.executor",
    "check_replayable": "askcache.replay.guard",
    "ReplayResult": "askcache.replay.result",
    "CacheExecutionSettings": "askcache.foundation.settings",
    "CacheWritingSettings": "askcache.foundation.settings",
    "CachingSettings": "askcache.foundation.settings",
    "HealMode": "askcache.foundation.settings",
    "CacheStorage": "askcache.storage.cache_storage",
    "LocalCacheStorage": "askcache.storage.cache_storage",
    "load_cache_file": "askcache.storage.cache_storage",
    "save_cache_file": "askcache.storage.cache_storage",
    "RunLedger": "askcache.storage.ledger",
    "RunRecord": "askcache.storage.ledger",
    "open_ledger": "askcache.storage.ledger",
    "storage_for": "askcache.storage.remote",
    "TrajectoryVersions": "askcache.storage.versions",
    "Tool": "askcache.tools.tool",
    "ToolCollection": "askcache.tools.tool",
    "ToolOutput": "askcache.tools.tool",
    "ComputerTool": "askcache.tools.computer",
}
"""Each public name and the module it lives in: imported the first time it is used, so
``import askcache`` (and the ``askcache`` command, whose ``stats`` and ``list`` need none of
the imaging or the Anthropic client) starts without loading what it does not use."""

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


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (:data:`_PUBLIC`)."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later uses find it directly
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
