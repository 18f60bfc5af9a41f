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
from askcache.settings import DEFAULT_HASH_SIZE

__all__ = [
    "FORMAT_VERSION",
    "MAX_FAILURES_KEPT",
    "CacheFile",
    "CacheMetadata",
    "CoordinateSpace",
    "DetailCheckConfig",
    "ExecutionFailure",
    "RecordingStats",
    "TargetCheckConfig",
    "ToneCheckConfig",
    "VisualValidationConfig",
    "dump_cache_file",
    "parse_cache_file",
]

FORMAT_VERSION = 3
"""The format version this askcache writes. Version 0 is the pre-versioned seed format;
version 2 added the detail hash (a reader of version 1 would skip that check); version 3 the
tone and whole-target checks and the detail hash's blur (a reader of version 2 would skip
them)."""

LEGACY_THRESHOLD = 10
"""The threshold of files that do not say theirs (the original design's default)."""

MAX_FAILURES_KEPT = 20
"""How many of the most recent replay failures ``metadata.failures`` keeps."""


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
    blur: float = Field(0.0, ge=0, le=4)
    """Radius of the Gaussian blur applied to the detail region (in grey) before hashing, so
    that re-rendered text (another anti-aliasing, a HiDPI screen scaled down) hashes alike;
    0: none (every file before version 3)."""


class ToneCheckConfig(_FileModel):
    """Brightness and contrast of the main and detail regions (:mod:`askcache.tone`).

    Perceptual hashes normalise both away, so a dialog's dimming backdrop or an element
    faded to show it is disabled does not change them; these two numbers do.
    """

    mean_tolerance: float = Field(gt=0, le=1)
    """Largest relative change of a region's mean grey level still counted as a match."""
    contrast_tolerance: float = Field(gt=0, le=1)
    """Largest relative change of a region's grey-level deviation still counted as a match."""


class TargetCheckConfig(_FileModel):
    """The whole element under the point, when it is larger than the main region
    (:mod:`askcache.target`): its box and where ink lies in it."""

    columns: int = Field(gt=0, le=256)
    """Columns of the ink map (one bit each)."""
    threshold: int = Field(ge=0)
    """Largest number of ink-map bits that may differ for a match."""


class VisualValidationConfig(_FileModel):
    """How the trajectory's visual representations were computed (stored once per file)."""

    method: Literal["phash", "ahash", "dhash", "whash"]
    """Perceptual hash method."""
    hash_size: int = DEFAULT_HASH_SIZE
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
    tone: ToneCheckConfig | None = None
    """The tone check's tolerances; ``None``: no tone check (all files before version 3)."""
    target: TargetCheckConfig | None = None
    """The whole-target check's set-up; ``None``: none (all files before version 3)."""


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
    """One replay that stopped before the end."""

    step_index: int
    """Index of the step that was not executed."""
    reason: str
    """Why the replay stopped."""
    at: datetime = Field(default_factory=_now)
    """When."""


class CacheMetadata(_FileModel):
    """What the trajectory is for, how it was recorded, and how its replays went."""

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
    recording: RecordingStats = Field(default_factory=RecordingStats)
    """Model calls, tokens and time of the recording."""
    execution_attempts: int = 0
    """Replays started."""
    successes: int = 0
    """Replays that ran every step."""
    failures: list[ExecutionFailure] = Field(default_factory=list)
    """The most recent replays that stopped early (at most ``MAX_FAILURES_KEPT``)."""
    last_executed_at: datetime | None = None
    """When a replay last started."""
    is_valid: bool = True
    """False once the trajectory is marked unusable; listings hide it unless asked."""
    invalidation_reason: str | None = None
    """Why it was marked invalid."""


class CacheFile(_FileModel):
    """A recorded trajectory and everything needed to replay it."""

    version: int = FORMAT_VERSION
    """Format version of this file."""
    metadata: CacheMetadata
    """About the trajectory."""
    trajectory: list[ToolUseBlockParam]
    """The recorded tool calls, in order, with their visual representations."""
    cache_parameters: dict[str, str] = Field(default_factory=dict)
    """Parameter name -> description; steps and goal refer to them as ``{{name}}``."""

    def record_attempt(self) -> None:
        """Count a replay that starts now."""
        self.metadata.execution_attempts += 1
        self.metadata.last_executed_at = _now()

    def record_success(self) -> None:
        """Count a replay that ran every step."""
        self.metadata.successes += 1

    def record_failure(self, step_index: int, reason: str) -> None:
        """Remember a replay that stopped before ``step_index``."""
        failures = [*self.metadata.failures, ExecutionFailure(step_index=step_index, reason=reason)]
        self.metadata.failures = failures[-MAX_FAILURES_KEPT:]

    def invalidate(self, reason: str) -> None:
        """Mark the trajectory unusable; it is then hidden from the model's listing."""
        self.metadata.is_valid = False
        self.metadata.invalidation_reason = reason


def _migrate_v0(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (the seed's format) had no version and no hash_size; 8 was fixed."""
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        visual = metadata.get("visual_validation")
        if isinstance(visual, dict):
            visual.setdefault("hash_size", DEFAULT_HASH_SIZE)
    return {**data, "version": 1}


def _migrate_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 had no detail hash; its files read unchanged as version 2 without one."""
    return {**data, "version": 2}


def _migrate_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 had no tone, target or blur; its files read unchanged as version 3 without
    them, so their steps are checked exactly as recorded."""
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
