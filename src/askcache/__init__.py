"""askcache: record a computer-use agent's run once, replay it with no model calls.

Before every replayed click or keystroke the screen around the action point is compared
with the recording (a perceptual hash of a region); when it differs, control goes back to
the model.
"""

from askcache.actions import Action, ActionKind, parse_action
from askcache.agent import ActResult, Agent, VisionAgent
from askcache.cache_file import (
    CacheFile,
    CacheMetadata,
    DetailCheckConfig,
    TrajectoryVariant,
    VisualValidationConfig,
    parse_cache_file,
    upgrade_cache_file,
)
from askcache.conversation import Conversation, ConversationResult
from askcache.errors import (
    AskCacheError,
    CacheExistsError,
    CacheFileCorruptError,
    CacheFileLimitError,
    CacheFileRefusedError,
    CacheInvalidatedError,
    CacheNotFoundError,
    CacheOverwriteRefusedError,
    CacheParameterError,
    CachePathError,
    CacheSignatureError,
    CacheStorageError,
    InvalidHashError,
    InvalidScreenshotError,
    InvalidSettingsError,
    MissingApiKeyError,
    OutboxError,
    RemoteStorageError,
    StorageUnwritableError,
    UnsupportedCacheVersionError,
)
from askcache.heal import HealOutcome
from askcache.ledger import RunLedger, RunRecord
from askcache.messages import MessageParam, ToolResultBlockParam, ToolUseBlockParam
from askcache.outbox import KeptWrite, Outbox
from askcache.recording import CacheManager
from askcache.rejoin import RejoinDecision
from askcache.replay import CacheExecutor, EndStateVerdict, ReplayResult, ReplaySession
from askcache.replay_guard import check_replayable
from askcache.settings import (
    CacheExecutionSettings,
    CacheStrategy,
    CacheWritingSettings,
    CachingSettings,
    HealMode,
    VisualMethod,
)
from askcache.signing import SigningKeys, sign_cache_file, verify_cache_file
from askcache.speakers import AgentSpeaker, Speaker, SpeakerResult
from askcache.storage import CacheStorage, LocalCacheStorage, load_cache_file, save_cache_file
from askcache.sync import SyncReport, sync_outbox
from askcache.tools import ComputerTool, Tool, ToolCollection, ToolOutput
from askcache.versions import TrajectoryVersions

__version__ = "0.1.0"

__all__ = [
    "ActResult",
    "Action",
    "ActionKind",
    "Agent",
    "AgentSpeaker",
    "AskCacheError",
    "CacheExecutionSettings",
    "CacheExecutor",
    "CacheExistsError",
    "CacheFile",
    "CacheFileCorruptError",
    "CacheFileLimitError",
    "CacheFileRefusedError",
    "CacheInvalidatedError",
    "CacheManager",
    "CacheMetadata",
    "CacheNotFoundError",
    "CacheOverwriteRefusedError",
    "CacheParameterError",
    "CachePathError",
    "CacheSignatureError",
    "CacheStorage",
    "CacheStorageError",
    "CacheStrategy",
    "CacheWritingSettings",
    "CachingSettings",
    "ComputerTool",
    "Conversation",
    "ConversationResult",
    "DetailCheckConfig",
    "EndStateVerdict",
    "HealMode",
    "HealOutcome",
    "InvalidHashError",
    "InvalidScreenshotError",
    "InvalidSettingsError",
    "KeptWrite",
    "LocalCacheStorage",
    "MessageParam",
    "MissingApiKeyError",
    "Outbox",
    "OutboxError",
    "RejoinDecision",
    "RemoteStorageError",
    "ReplayResult",
    "ReplaySession",
    "RunLedger",
    "RunRecord",
    "SigningKeys",
    "Speaker",
    "SpeakerResult",
    "StorageUnwritableError",
    "SyncReport",
    "Tool",
    "ToolCollection",
    "ToolOutput",
    "ToolResultBlockParam",
    "ToolUseBlockParam",
    "TrajectoryVariant",
    "TrajectoryVersions",
    "UnsupportedCacheVersionError",
    "VisionAgent",
    "VisualMethod",
    "VisualValidationConfig",
    "__version__",
    "check_replayable",
    "load_cache_file",
    "parse_action",
    "parse_cache_file",
    "save_cache_file",
    "sign_cache_file",
    "sync_outbox",
    "upgrade_cache_file",
    "verify_cache_file",
]
