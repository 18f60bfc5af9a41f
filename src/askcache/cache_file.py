"""The cache file format: versioned JSON with ``metadata``, ``trajectory``, ``cache_parameters``.

Reading goes through :func:`parse_cache_file`, which migrates older versions, rejects newer
ones, and turns every parse or validation problem into a
:class:`~askcache.errors.CacheFileCorruptError` naming the file and the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from askcache.errors import CacheFileCorruptError, UnsupportedCacheVersionError
from askcache.messages import ToolUseBlockParam, Usage
from askcache.screen_state import EndState, ScreenStateConfig

__all__ = [
    "FORMAT_VERSION",
    "CacheFile",
    "CacheMetadata",
    "CoordinateSpace",
    "DetailCheckConfig",
    "ExecutionFailure",
    "LegacyReplayStats",
    "RecordingStats",
    "TrajectoryVariant",
    "VisualValidationConfig",
    "dump_cache_file",
    "parse_cache_file",
]

FORMAT_VERSION = 3
"""The format version this askcache writes. Version 0 is the pre-versioned seed format;
version 2 added the detail hash (a reader of version 1 would skip that check); version 3
added each step's effect and the end state, and moved replay counts out of the file into
the run ledger (:mod:`askcache.ledger`)."""

LEGACY_HASH_SIZE = 8
"""The hash side of files that do not say theirs (8x8: the original design's)."""

LEGACY_THRESHOLD = 10
"""The threshold of files that do not say theirs (the original design's default)."""


def _now() -> datetime:
    return datetime.now(UTC)


class _FileModel(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, use_attribute_docstrings=True)


class DetailCheckConfig(_FileModel):
    """The second, finer hash of a smaller region centred on the same point.

    The main region's coarse hash sees layout (something moved, a dialog, another screen);
    this one sees what is written on the element itself (8 -> 3, Save -> Open), which a
    coarse hash of a 100 px region cannot. Same method and shift tolerance as the main one.
    """

    hash_size: int = Field(gt=0)
    """Hash side; ``hash_size**2`` bits."""
    region_size: int = Field(gt=0)
    """Side of the square detail region around the action point, in screenshot pixels."""
    threshold: int = Field(ge=0)
    """Largest Hamming distance of the detail hash still counted as a match, as recorded."""


class VisualValidationConfig(_FileModel):
    """How the trajectory's visual representations were computed (stored once per file)."""

    method: Literal["phash", "ahash", "dhash", "whash"]
    """Perceptual hash method."""
    hash_size: int = LEGACY_HASH_SIZE
    """Hash side; ``hash_size**2`` bits. Files from before this field used 8."""
    region_size: int
    """Side of the square region around the action point, in screenshot pixels."""
    threshold: int = LEGACY_THRESHOLD
    """Largest Hamming distance still counted as a match, as recorded."""
    shift_tolerance: int = Field(0, ge=0, le=8)
    """Pixels the current region may be moved each way at replay; files from before this
    field were checked at the exact position (0)."""
    detail: DetailCheckConfig | None = None
    """The detail hash's set-up; ``None``: steps store the main hash only (all files before
    version 2)."""


class CoordinateSpace(_FileModel):
    """Size of the screenshots the trajectory's coordinates refer to."""

    width: int = Field(gt=0)
    """Width in pixels."""
    height: int = Field(gt=0)
    """Height in pixels."""

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"


class RecordingStats(_FileModel):
    """What the recording cost: what a successful replay saves."""

    model_calls: int = 0
    """Model calls the recorded run made."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens of those calls."""
    duration_seconds: float | None = None
    """Wall time from the start of the recording to the written file."""
    model: str | None = None
    """Model name used for the recording, when known."""


class ExecutionFailure(_FileModel):
    """One replay that stopped before the end (kept by files of versions 0 to 2)."""

    step_index: int
    """Index of the step that was not executed."""
    reason: str
    """Why the replay stopped."""
    at: datetime = Field(default_factory=_now)
    """When."""


class LegacyReplayStats(_FileModel):
    """Replay counts a file of version 0 to 2 kept inside itself. Replays are now counted in
    the run ledger; on a file's first replay these are copied there once."""

    execution_attempts: int = 0
    """Replays started."""
    successes: int = 0
    """Replays that ran every step."""
    failures: list[ExecutionFailure] = Field(default_factory=list)
    """The most recent replays that stopped early."""
    last_executed_at: datetime | None = None
    """When a replay last started."""


class CacheMetadata(_FileModel):
    """What the trajectory is for and how it was recorded. (How its replays went is in the
    run ledger, :mod:`askcache.ledger`: this file changes only when it is recorded or
    invalidated.)"""

    goal: str
    """The task, with ``{{name}}`` placeholders for cache parameters."""
    created_at: datetime = Field(default_factory=_now)
    """When the recording was written."""
    coordinate_space: CoordinateSpace | None = Field(
        None, validation_alias=AliasChoices("coordinate_space", "screen_size")
    )
    """Screenshot size the coordinates refer to; ``None`` when no screenshot was seen."""
    visual_validation: VisualValidationConfig | None = None
    """Present only when visual validation was recorded."""
    screen_state: ScreenStateConfig | None = None
    """How steps' effects and the end state were recorded; ``None``: neither was (files
    before version 3, or ``record_screen_state=False``)."""
    end_state: EndState | None = None
    """The screen at the end of the recorded run; ``None`` when not recorded."""
    recording: RecordingStats = Field(default_factory=RecordingStats)
    """Model calls, tokens and time of the recording."""
    is_valid: bool = True
    """False once the trajectory is marked unusable; listings hide it and ``execute``
    refuses it unless forced."""
    invalidation_reason: str | None = None
    """Why it was marked invalid."""
    legacy_stats: LegacyReplayStats | None = None
    """Replay counts of a file written before version 3 (see :class:`LegacyReplayStats`)."""


class TrajectoryVariant(_FileModel):
    """Another way through the trajectory from one step on, for a screen that alternates
    between known states (a banner shown on some runs, a dialog that comes and goes).

    At that step the replay checks the trajectory's own step first; when it does not match,
    it checks each variant's first acting step and, when one matches, runs the variant's
    steps in place of the next ``replaces`` steps. Written by healing (the way the
    trajectory went before a heal becomes a variant of the healed one)."""

    steps: list[ToolUseBlockParam]
    """The steps, with their fingerprints and effects, as in ``trajectory``."""
    replaces: int = Field(ge=0)
    """How many steps of the trajectory, from the variant's step on, it replaces."""
    end_state: EndState | None = None
    """The final screen when the variant runs to the end (``replaces`` reaches it);
    ``None``: the file's end state applies."""


class CacheFile(_FileModel):
    """A recorded trajectory and everything needed to replay it."""

    version: int = FORMAT_VERSION
    """Format version of this file."""
    metadata: CacheMetadata
    """About the trajectory."""
    trajectory: list[ToolUseBlockParam]
    """The recorded tool calls, in order, with their visual representations and effects."""
    cache_parameters: dict[str, str] = Field(default_factory=dict)
    """Parameter name -> description; steps and goal refer to them as ``{{name}}``."""
    variants: dict[int, list[TrajectoryVariant]] = Field(default_factory=dict)
    """Step index -> other ways through the trajectory from that step (at most
    ``askcache.heal.MAX_VARIANTS_PER_STEP`` each). A reader that does not know variants
    replays the trajectory alone (and hands back where a variant would have matched)."""

    def invalidate(self, reason: str) -> None:
        """Mark the trajectory unusable; it is then hidden from the model's listing and
        ``execute`` refuses it unless forced."""
        self.metadata.is_valid = False
        self.metadata.invalidation_reason = reason


def _migrate_v0(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (the seed's format) had no version and no hash_size; 8 was fixed."""
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        visual = metadata.get("visual_validation")
        if isinstance(visual, dict):
            visual.setdefault("hash_size", LEGACY_HASH_SIZE)
    return {**data, "version": 1}


def _migrate_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 had no detail hash; its files read unchanged as version 2 without one."""
    return {**data, "version": 2}


_LEGACY_STATS = ("execution_attempts", "successes", "failures", "last_executed_at")


def _migrate_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 kept replay counts in ``metadata``; they move to ``metadata.legacy_stats``
    (and from there to the run ledger on the first replay). No effects, no end state."""
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        metadata = dict(metadata)
        legacy = {key: metadata.pop(key) for key in _LEGACY_STATS if key in metadata}
        if legacy:
            metadata["legacy_stats"] = legacy
        data = {**data, "metadata": metadata}
    return {**data, "version": 3}


_MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: _migrate_v0,
    1: _migrate_v1,
    2: _migrate_v2,
}


def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def parse_cache_file(raw: bytes | str, name: str) -> CacheFile:
    """Parse, migrate and validate the text of a cache file.

    Raises:
        CacheFileCorruptError: not JSON, truncated, or a field is missing or wrong.
        UnsupportedCacheVersionError: written by a newer format version.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text)
    except UnicodeDecodeError as exc:
        raise CacheFileCorruptError(name, f"not UTF-8 text ({exc.reason})") from exc
    except json.JSONDecodeError as exc:
        detail = f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        if text.lstrip().startswith("{") and not text.rstrip().endswith("}"):
            detail += "; the file looks truncated"
        raise CacheFileCorruptError(name, detail) from exc
    if not isinstance(data, dict):
        raise CacheFileCorruptError(name, f"top level is {type(data).__name__}, expected object")
    version = data.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise CacheFileCorruptError(name, f"version: expected a whole number, got {version!r}")
    if version > FORMAT_VERSION:
        raise UnsupportedCacheVersionError(name, version, FORMAT_VERSION)
    while version < FORMAT_VERSION:
        data = _MIGRATIONS[version](data)
        version += 1
    try:
        return CacheFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{_field_path(err['loc'])}: {err['msg']}" for err in exc.errors()[:5])
        more = exc.error_count() - 5
        raise CacheFileCorruptError(
            name, problems + (f" (and {more} more)" if more > 0 else "")
        ) from exc


def dump_cache_file(cache_file: CacheFile) -> bytes:
    """The file's JSON text, as written to storage (cache-only fields kept)."""
    return cache_file.model_dump_json(indent=2).encode("utf-8") + b"\n"
