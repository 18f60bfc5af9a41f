"""Old import paths: a public name that moved keeps working from where it was, with a
:class:`DeprecationWarning` that names its new module, until askcache 0.2.

:data:`MOVED` maps each old module to its public names' new modules. An old module that is no
longer a file is served by a finder (:func:`install`, run by ``askcache/__init__.py``); a module
path that is now a package forwards its old names with a module ``__getattr__``
(:func:`forward`). Nothing here imports the rest of askcache until an old name is used.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "REMOVED_IN", "forward", "install"]

REMOVED_IN = "0.2"
"""The release in which the old paths stop working."""

MOVED: dict[str, dict[str, str]] = {
    "askcache": {
        "Action": "askcache.actions",
        "ActionKind": "askcache.actions",
        "AgentSpeaker": "askcache.conversation.speakers",
        "CacheExistsError": "askcache.errors",
        "CacheFileCorruptError": "askcache.errors",
        "CacheFileLimitError": "askcache.errors",
        "CacheFileRefusedError": "askcache.errors",
        "CacheInvalidatedError": "askcache.errors",
        "CacheManager": "askcache.record.recording",
        "CacheMetadata": "askcache.cachefile.format",
        "CacheNotFoundError": "askcache.errors",
        "CacheOverwriteRefusedError": "askcache.errors",
        "CacheParameterError": "askcache.errors",
        "CachePathError": "askcache.errors",
        "CacheSignatureError": "askcache.errors",
        "CacheStorageError": "askcache.errors",
        "CacheStrategy": "askcache.settings",
        "Conversation": "askcache.conversation.loop",
        "ConversationResult": "askcache.conversation.loop",
        "DetailCheckConfig": "askcache.cachefile.format",
        "EndStateVerdict": "askcache.replay.result",
        "HealOutcome": "askcache.heal.trajectory",
        "InvalidHashError": "askcache.errors",
        "InvalidScreenshotError": "askcache.errors",
        "InvalidSettingsError": "askcache.errors",
        "KeptWrite": "askcache.storage.outbox",
        "MessageParam": "askcache.messages",
        "MissingApiKeyError": "askcache.errors",
        "Outbox": "askcache.storage.outbox",
        "OutboxError": "askcache.errors",
        "RejoinDecision": "askcache.storage.ledger",
        "RemoteStorageError": "askcache.errors",
        "ReplaySession": "askcache.replay.session",
        "Speaker": "askcache.conversation.loop",
        "SpeakerResult": "askcache.conversation.loop",
        "StorageUnwritableError": "askcache.errors",
        "SyncReport": "askcache.agent.sync",
        "ToolResultBlockParam": "askcache.messages",
        "ToolUseBlockParam": "askcache.messages",
        "TrajectoryVariant": "askcache.cachefile.format",
        "UnsupportedCacheVersionError": "askcache.errors",
        "VisualMethod": "askcache.settings",
        "VisualValidationConfig": "askcache.cachefile.format",
        "parse_action": "askcache.actions",
        "sync_outbox": "askcache.agent.sync",
        "upgrade_cache_file": "askcache.cachefile.format",
    },
    "askcache.agent": {
        "ActResult": "askcache.agent.act",
        "Agent": "askcache.agent.act",
        "DEFAULT_MODEL": "askcache.conversation.speakers",
        "VisionAgent": "askcache.agent.act",
    },
    "askcache.cache_file": {
        "CacheFile": "askcache.cachefile.format",
        "CacheMetadata": "askcache.cachefile.format",
        "CoordinateSpace": "askcache.cachefile.format",
        "DetailCheckConfig": "askcache.cachefile.format",
        "ExecutionFailure": "askcache.cachefile.format",
        "FORMAT_VERSION": "askcache.cachefile.format",
        "FileSignature": "askcache.cachefile.format",
        "LegacyReplayStats": "askcache.cachefile.format",
        "RecordingStats": "askcache.cachefile.format",
        "TargetCheckConfig": "askcache.cachefile.format",
        "ToneCheckConfig": "askcache.cachefile.format",
        "TrajectoryVariant": "askcache.cachefile.format",
        "VisualValidationConfig": "askcache.cachefile.format",
        "dump_cache_file": "askcache.cachefile.format",
        "parse_cache_file": "askcache.cachefile.parse",
        "signed_content": "askcache.cachefile.format",
        "upgrade_cache_file": "askcache.cachefile.format",
    },
    "askcache.cli": {
        "main": "askcache.cli.app",
    },
    "askcache.commands": {
        "EXIT_ERROR": "askcache.cli.commands.common",
        "EXIT_FINDINGS": "askcache.cli.commands.common",
        "EXIT_INTERNAL": "askcache.cli.commands.common",
        "EXIT_INTERRUPTED": "askcache.cli.commands.common",
        "EXIT_OK": "askcache.cli.commands.common",
        "EXIT_PIPE": "askcache.cli.commands.common",
        "EXIT_USAGE": "askcache.cli.commands.common",
    },
    "askcache.commands.common": {
        "CacheFolderMissingError": "askcache.cli.commands.common",
        "DEFAULT_CACHE_DIR": "askcache.cli.commands.common",
        "EXIT_ERROR": "askcache.cli.commands.common",
        "EXIT_FINDINGS": "askcache.cli.commands.common",
        "EXIT_INTERNAL": "askcache.cli.commands.common",
        "EXIT_INTERRUPTED": "askcache.cli.commands.common",
        "EXIT_OK": "askcache.cli.commands.common",
        "EXIT_PIPE": "askcache.cli.commands.common",
        "EXIT_USAGE": "askcache.cli.commands.common",
        "add_cache_dir": "askcache.cli.commands.common",
        "emit_json": "askcache.cli.commands.common",
        "location": "askcache.cli.commands.common",
        "open_storage": "askcache.cli.commands.common",
        "redacted_output": "askcache.cli.commands.common",
        "resolve_name": "askcache.cli.commands.common",
    },
    "askcache.commands.lint": {
        "add_lint_command": "askcache.cli.commands.lint",
        "run_lint": "askcache.cli.commands.lint",
    },
    "askcache.commands.listing": {
        "add_list_command": "askcache.cli.commands.listing",
        "run_list": "askcache.cli.commands.listing",
    },
    "askcache.commands.replay": {
        "add_replay_command": "askcache.cli.commands.replay",
        "read_screen": "askcache.cli.commands.replay",
    },
    "askcache.commands.report": {
        "DEFAULT_RUNS": "askcache.cli.commands.report",
        "add_report_command": "askcache.cli.commands.report",
        "build_report": "askcache.cli.commands.report",
        "run_report": "askcache.cli.commands.report",
        "screens_in": "askcache.cli.commands.report",
    },
    "askcache.commands.show": {
        "add_show_command": "askcache.cli.commands.show",
        "describe_validation": "askcache.cli.commands.show",
        "run_show": "askcache.cli.commands.show",
    },
    "askcache.commands.signing": {
        "add_signing_commands": "askcache.cli.commands.signing",
    },
    "askcache.commands.stats": {
        "TrajectoryStats": "askcache.cli.commands.stats",
        "add_stats_command": "askcache.cli.commands.stats",
        "run_stats": "askcache.cli.commands.stats",
        "stats_line": "askcache.cli.commands.stats",
        "summarize": "askcache.cli.commands.stats",
    },
    "askcache.commands.sync": {
        "add_sync_command": "askcache.cli.commands.sync",
        "run_sync": "askcache.cli.commands.sync",
    },
    "askcache.commands.tune": {
        "add_tune_command": "askcache.cli.commands.tune",
        "read_run_folder": "askcache.cli.commands.tune",
    },
    "askcache.conversation": {
        "Conversation": "askcache.conversation.loop",
        "ConversationResult": "askcache.conversation.loop",
    },
    "askcache.demo": {
        "DemoOutcome": "askcache.cli.demo",
        "format_summary": "askcache.cli.demo",
        "run_demo": "askcache.cli.demo",
    },
    "askcache.elsewhere": {
        "BLOCK": "askcache.screen.elsewhere",
        "CHANGE_LEVEL": "askcache.screen.elsewhere",
        "ChangeElsewhere": "askcache.screen.elsewhere",
        "ELEMENT_RADIUS": "askcache.screen.elsewhere",
        "HASH_SIZE": "askcache.screen.elsewhere",
        "MATCH_THRESHOLD": "askcache.screen.elsewhere",
        "MAX_PLACES": "askcache.screen.elsewhere",
        "changed_blocks": "askcache.screen.elsewhere",
        "changes_elsewhere": "askcache.screen.elsewhere",
        "check_elsewhere": "askcache.screen.elsewhere",
        "prune": "askcache.screen.elsewhere",
    },
    "askcache.file_checks": {
        "CHECKED_ACTIONS": "askcache.cachefile.checks",
        "INPUT_KEYS": "askcache.cachefile.checks",
        "TOOL_NAME": "askcache.cachefile.checks",
        "UncheckedStep": "askcache.cachefile.checks",
        "check_cache_file": "askcache.cachefile.checks",
        "hash_hex_length": "askcache.cachefile.checks",
        "unchecked_steps": "askcache.cachefile.checks",
    },
    "askcache.hashing": {
        "Box": "askcache.geometry",
        "check_hash_size": "askcache.screen.hashing",
        "compute_hash": "askcache.screen.hashing",
        "crop_region": "askcache.screen.hashing",
        "hamming_distance": "askcache.screen.hashing",
        "phash_coefficients": "askcache.screen.hashing",
        "region_box": "askcache.screen.hashing",
        "region_distance": "askcache.screen.hashing",
        "shifted_boxes": "askcache.screen.hashing",
        "weak_bits": "askcache.screen.hashing",
    },
    "askcache.heal": {
        "HealOutcome": "askcache.heal.trajectory",
        "MAX_VARIANTS_PER_STEP": "askcache.heal.trajectory",
        "PreparedHeal": "askcache.heal.trajectory",
        "apply_heal": "askcache.heal.trajectory",
        "heal_trajectory": "askcache.heal.trajectory",
        "keep_typed_text_safe": "askcache.heal.trajectory",
        "prepare_heal": "askcache.heal.trajectory",
        "redact_mode": "askcache.heal.trajectory",
        "verify_run": "askcache.heal.trajectory",
    },
    "askcache.heal_cli": {
        "add_heal_commands": "askcache.cli.commands.heal",
        "diff_lines": "askcache.cli.commands.heal",
    },
    "askcache.ledger": {
        "LEDGER_FOLDER": "askcache.storage.ledger",
        "RunEvent": "askcache.storage.ledger",
        "RunLedger": "askcache.storage.ledger",
        "RunRecord": "askcache.storage.ledger",
        "RunStatus": "askcache.storage.ledger",
    },
    "askcache.lint": {
        "LintProblem": "askcache.cli.lint",
        "lint_cache_file": "askcache.cli.lint",
        "lint_stored": "askcache.cli.lint",
    },
    "askcache.masks": {
        "LeftOutRun": "askcache.record.mask_learning",
        "MASK_BIT_FRACTION": "askcache.fingerprint.masks",
        "MASK_MARGIN": "askcache.fingerprint.masks",
        "MASK_TONE_FACTOR": "askcache.fingerprint.masks",
        "MaskLearning": "askcache.record.mask_learning",
        "StepMask": "askcache.fingerprint.masks",
        "learn_mask_report": "askcache.record.mask_learning",
        "learn_masks": "askcache.record.mask_learning",
        "learn_masks_from_screens": "askcache.record.mask_learning",
        "mask_bound": "askcache.fingerprint.masks",
        "run_screens": "askcache.record.mask_learning",
        "save_run_screens": "askcache.record.mask_learning",
    },
    "askcache.outbox": {
        "KeptWrite": "askcache.storage.outbox",
        "Outbox": "askcache.storage.outbox",
        "OutboxItem": "askcache.storage.outbox",
        "default_outbox_dir": "askcache.storage.outbox",
    },
    "askcache.prices": {
        "ModelPrice": "askcache.cli.prices",
        "PRICES": "askcache.cli.prices",
        "PRICES_AS_OF": "askcache.cli.prices",
        "parse_price": "askcache.cli.prices",
        "price_for": "askcache.cli.prices",
    },
    "askcache.recording": {
        "CACHING_TOOL_NAMES": "askcache.record.recording",
        "CacheManager": "askcache.record.recording",
        "RecordedStep": "askcache.record.recording",
        "default_filename": "askcache.record.recording",
        "final_screenshot": "askcache.record.recording",
        "steps_with_screens": "askcache.record.recording",
    },
    "askcache.rejoin": {
        "FailedCheck": "askcache.storage.ledger",
        "RESUME_TOOL_NAME": "askcache.replay.rejoin",
        "RejoinCondition": "askcache.storage.ledger",
        "RejoinDecision": "askcache.storage.ledger",
        "STOP_WORDS": "askcache.replay.rejoin",
        "model_acted": "askcache.replay.rejoin",
        "model_stops": "askcache.replay.rejoin",
    },
    "askcache.remote_storage": {
        "FsspecCacheStorage": "askcache.storage.remote",
        "default_local_copy_dir": "askcache.storage.remote",
        "is_url": "askcache.storage.remote",
        "storage_for": "askcache.storage.remote",
    },
    "askcache.replay.session": {
        "CAPTURE_ATTEMPTS": "askcache.replay.state",
        "OTHER_DENSITY_SCALE": "askcache.replay.state",
    },
    "askcache.replay_guard": {
        "DEFAULT_OFFERED_TOOLS": "askcache.replay.guard",
        "check_replayable": "askcache.replay.guard",
    },
    "askcache.report": {
        "Figure": "askcache.cli.report",
        "MARK_COLOUR": "askcache.cli.report",
        "ReplaySection": "askcache.cli.report",
        "StepRow": "askcache.cli.report",
        "TrajectoryReport": "askcache.cli.report",
        "effect_figure": "askcache.cli.report",
        "end_state_figure": "askcache.cli.report",
        "mark_point": "askcache.cli.report",
        "model_actions": "askcache.cli.report",
        "recorded_regions": "askcache.cli.report",
        "recorded_views": "askcache.cli.report",
        "rejoin_lines": "askcache.cli.report",
        "savings_text": "askcache.cli.report",
        "steps_table": "askcache.cli.report",
        "view_figures": "askcache.cli.report",
        "write_html_report": "askcache.cli.report",
        "write_page": "askcache.cli.report",
        "write_trajectory_report": "askcache.cli.report",
    },
    "askcache.run_record": {
        "heal_after": "askcache.agent.run_record",
        "record_runs": "askcache.agent.run_record",
        "run_record": "askcache.agent.run_record",
    },
    "askcache.savings": {
        "saving_words": "askcache.cli.savings",
    },
    "askcache.screen_state": {
        "DEFAULT_BLOCK": "askcache.screen.state",
        "DEFAULT_CHANGE_LEVEL": "askcache.screen.state",
        "DEFAULT_EFFECT_RADIUS": "askcache.screen.state",
        "DEFAULT_MATCH_LEVEL": "askcache.screen.state",
        "DEFAULT_MATCH_MEAN": "askcache.screen.state",
        "DEFAULT_TILE": "askcache.screen.state",
        "EndState": "askcache.screen.state",
        "ScreenStateConfig": "askcache.screen.state",
        "StepEffect": "askcache.screen.state",
        "Thumbnail": "askcache.screen.state",
        "TileComparison": "askcache.screen.state",
        "compare_tiles": "askcache.screen.state",
        "effect_of": "askcache.screen.state",
    },
    "askcache.screenshots": {
        "decode_screenshot": "askcache.fingerprint.screenshots",
        "find_recent_screenshot": "askcache.fingerprint.screenshots",
        "find_recent_screenshot_block": "askcache.fingerprint.screenshots",
    },
    "askcache.signing": {
        "SIGNING_KEY_ENV": "askcache.cachefile.signing",
        "SigningKeys": "askcache.cachefile.signing",
        "VERIFY_KEYS_ENV": "askcache.cachefile.signing",
        "check_signature": "askcache.cachefile.signing",
        "parse_verified": "askcache.cachefile.signing",
        "sign_cache_file": "askcache.cachefile.signing",
        "signature_for": "askcache.cachefile.signing",
        "verify_cache_file": "askcache.cachefile.signing",
    },
    "askcache.speakers": {
        "AGENT_SPEAKER": "askcache.conversation.speakers",
        "AgentSpeaker": "askcache.conversation.speakers",
        "DEFAULT_MODEL": "askcache.conversation.speakers",
        "Speaker": "askcache.conversation.loop",
        "SpeakerResult": "askcache.conversation.loop",
        "SpeakerStatus": "askcache.conversation.loop",
        "keep_recent_screenshots": "askcache.conversation.speakers",
    },
    "askcache.step_view": {
        "SCREEN_VIEW_WIDTH": "askcache.replay.step_view",
        "StepView": "askcache.replay.step_view",
    },
    "askcache.storage": {
        "CacheStorage": "askcache.storage.base",
        "LocalCacheStorage": "askcache.storage.base",
        "STALE_TEMP_SECONDS": "askcache.storage.base",
        "load_cache_file": "askcache.storage.base",
        "read_cache_file": "askcache.storage.base",
        "save_cache_file": "askcache.storage.base",
    },
    "askcache.storage_lock": {
        "LOCK_LEASE_SECONDS": "askcache.storage.lock",
        "LockOwner": "askcache.storage.lock",
        "StorageLock": "askcache.storage.lock",
        "process_start_time": "askcache.storage.lock",
    },
    "askcache.sync": {
        "PendingHeal": "askcache.agent.sync",
        "PendingLedgerEntry": "askcache.agent.sync",
        "RunWriter": "askcache.agent.sync",
        "SyncReport": "askcache.agent.sync",
        "is_outage": "askcache.agent.sync",
        "sync_outbox": "askcache.agent.sync",
    },
    "askcache.target": {
        "TargetFingerprint": "askcache.screen.target",
        "estimate_target": "askcache.screen.target",
        "ink_distance": "askcache.screen.target",
        "ink_map": "askcache.screen.target",
        "target_fingerprint": "askcache.screen.target",
    },
    "askcache.tone": {
        "Tone": "askcache.screen.tone",
        "decode_tones": "askcache.screen.tone",
        "encode_tones": "askcache.screen.tone",
        "tone_change": "askcache.screen.tone",
        "tone_of": "askcache.screen.tone",
    },
    "askcache.versions": {
        "COMMIT_POINTS": "askcache.storage.versions",
        "CommitJournal": "askcache.storage.versions",
        "CommitPoint": "askcache.storage.versions",
        "JOURNAL_NAME": "askcache.storage.versions",
        "TrajectoryVersions": "askcache.storage.versions",
        "VERSIONS_FOLDER": "askcache.storage.versions",
    },
    "askcache.visual": {
        "Box": "askcache.geometry",
        "StepFingerprint": "askcache.fingerprint.step",
        "VisualCheck": "askcache.fingerprint.step",
        "check_step_representation": "askcache.fingerprint.step",
        "compute_hash": "askcache.screen.hashing",
        "compute_step_representation": "askcache.fingerprint.step",
        "crop_region": "askcache.screen.hashing",
        "decode_screenshot": "askcache.fingerprint.screenshots",
        "find_recent_screenshot": "askcache.fingerprint.screenshots",
        "find_recent_screenshot_block": "askcache.fingerprint.screenshots",
        "hamming_distance": "askcache.screen.hashing",
        "region_box": "askcache.screen.hashing",
        "region_distance": "askcache.screen.hashing",
        "shifted_boxes": "askcache.screen.hashing",
        "validation_config": "askcache.fingerprint.step",
    },
}
"""Old module -> {public name: the module that holds it now}."""

_OLD_PACKAGES = frozenset({"askcache.commands"})
"""Old modules that were packages (their submodules are old paths too)."""


def forward(old_module: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``old_module``'s moved names, each with a warning;
    and, for a package, its submodules not imported yet (``askcache.storage.ledger`` after
    ``import askcache``), imported on first use."""
    moved = MOVED.get(old_module, {})

    def forwarded(name: str) -> Any:
        new_module = moved.get(name)
        if new_module is None:
            submodule = f"{old_module}.{name}"
            if not name.startswith("__"):
                try:
                    return importlib.import_module(submodule)
                except ModuleNotFoundError as exc:
                    if exc.name not in (submodule, old_module):  # a dependency is missing
                        raise
            raise AttributeError(f"module {old_module!r} has no attribute {name!r}")
        warnings.warn(
            f"{old_module}.{name} moved to {new_module}.{name}: import it from there "
            f"(the old path stops working in askcache {REMOVED_IN})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new_module), name)

    return forwarded


class _OldModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module path as a module of forwarded names."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED or fullname == "askcache":
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname in _OLD_PACKAGES)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        module.__doc__ = (
            f"Deprecated: the names of {module.__name__} moved (see askcache._moved.MOVED)."
        )
        vars(module)["__getattr__"] = forward(module.__name__)


def install() -> None:
    """Serve the old module paths (once; after every real module, which always wins)."""
    if not any(isinstance(finder, _OldModules) for finder in sys.meta_path):
        sys.meta_path.append(_OldModules())
