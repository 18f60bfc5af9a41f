"""Settings objects: frozen, validated on construction, unknown fields rejected.

A wrong value or an unknown field raises :class:`~askcache.errors.InvalidSettingsError`
naming the field, listing the valid ones and suggesting the closest::

    >>> CacheWritingSettings(filenme="login.json")
    InvalidSettingsError: invalid CacheWritingSettings:
      - filenme: unknown field (did you mean 'filename'?); valid fields of ...: filename, ...
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from askcache.actions import DEFAULT_VALIDATED_ACTIONS, KNOWN_ACTIONS
from askcache.errors import InvalidSettingsError

__all__ = [
    "DEFAULT_DETAIL_BLUR",
    "DEFAULT_DETAIL_HASH_SIZE",
    "DEFAULT_DETAIL_REGION_SIZE",
    "DEFAULT_DETAIL_THRESHOLD",
    "DEFAULT_HASH_SIZE",
    "DEFAULT_REGION_SIZE",
    "DEFAULT_SHIFT_TOLERANCE",
    "DEFAULT_TARGET_COLUMNS",
    "DEFAULT_TARGET_THRESHOLD",
    "DEFAULT_THRESHOLD",
    "DEFAULT_TONE_CONTRAST_TOLERANCE",
    "DEFAULT_TONE_MEAN_TOLERANCE",
    "CacheExecutionSettings",
    "CacheStrategy",
    "CacheWritingSettings",
    "CachingSettings",
    "VisualMethod",
]

DEFAULT_REGION_SIZE = 100
"""Side of the square region hashed around an action point, in screenshot pixels."""
DEFAULT_THRESHOLD = 2
"""Largest Hamming distance (in bits) at which a region still counts as unchanged. Chosen
from bench/accuracy.py together with a 1 px shift tolerance (docs/benchmarks.md)."""
DEFAULT_SHIFT_TOLERANCE = 1
"""Pixels the current region may be moved each way to find its best match (1 px scrolls)."""
DEFAULT_HASH_SIZE = 8
"""Hash side: 8 gives an 8x8 = 64-bit hash."""
DEFAULT_DETAIL_REGION_SIZE = 48
"""Side of the smaller region whose finer hash sees the element's own label (8 -> 3)."""
DEFAULT_DETAIL_HASH_SIZE = 16
"""Side of the detail hash: 16x16 = 256 bits."""
DEFAULT_DETAIL_THRESHOLD = 22
"""Largest distance of the (blurred) detail hash still counted as unchanged. Chosen on the
tuning split of bench/accuracy.py (docs/benchmarks.md): re-rendered text reaches 8-50,
relabelled keys 18 and up."""

DEFAULT_DETAIL_BLUR = 1.0
"""Blur radius of the detail region before hashing (chosen on the tuning split of
bench/accuracy.py)."""
DEFAULT_TONE_MEAN_TOLERANCE = 0.06
"""Relative change of a region's mean grey level still counted as unchanged: 3 % brightness
changes and JPEG re-encodes reach 3.5 %, a dimming backdrop 50 % (bench/accuracy.py)."""
DEFAULT_TONE_CONTRAST_TOLERANCE = 0.15
"""Relative change of a region's contrast still counted as unchanged: 3 % brightness and JPEG
reach 6.7 %, an element faded to opacity 0.4 11-61 % (bench/accuracy.py)."""
DEFAULT_TARGET_COLUMNS = 16
"""Columns of a wide target's ink map (one bit each)."""
DEFAULT_TARGET_THRESHOLD = 0
"""Ink-map columns of a wide target that may change while a step still matches."""

_PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CacheStrategy(StrEnum):
    """What askcache does with cache files during :meth:`Agent.act`."""

    RECORD = "record"
    """Let the model solve the task and write its trajectory to a cache file when it is done."""
    EXECUTE = "execute"
    """Replay a cache file. With ``writing_settings.filename`` the replay starts at once and
    makes no model call unless validation fails; without it the model is offered the caching
    tools to list and execute trajectories."""
    AUTO = "auto"
    """Replay the named cache file when it exists and is valid, otherwise record it."""
    OFF = "off"
    """No caching: the model solves the task and nothing is read or written."""


class VisualMethod(StrEnum):
    """Perceptual hash used to fingerprint the screen around an action point."""

    PHASH = "phash"
    """DCT-based perceptual hash: robust to small shifts and re-encoding."""
    AHASH = "ahash"
    """Average hash: each bit says brighter or darker than the mean."""
    DHASH = "dhash"
    """Difference hash: each bit compares horizontally adjacent pixels (edges)."""
    WHASH = "whash"
    """Wavelet (Haar) hash; its hash size must be a power of two."""
    NONE = "none"
    """No visual validation is recorded."""


def _field_model(annotation: Any) -> type[SettingsModel] | None:
    """The settings class inside an annotation such as ``CacheWritingSettings | None``."""
    if isinstance(annotation, type) and issubclass(annotation, SettingsModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            found = _field_model(arg)
            if found is not None:
                return found
    return None


def _describe(error: ValidationError, model: type[SettingsModel]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for item in error.errors():
        loc = [str(part) for part in item["loc"]]
        path = ".".join(loc) or model.__name__
        nested = (item.get("ctx") or {}).get("error")
        if isinstance(nested, InvalidSettingsError):  # a nested settings object's own check
            problems.extend((f"{path}.{sub}", text) for sub, text in nested.problems)
            continue
        owner: type[SettingsModel] | None = model
        for part in loc[:-1]:
            field = owner.model_fields.get(part) if owner else None
            owner = _field_model(field.annotation) if field else None
        if item["type"] == "extra_forbidden" and owner is not None:
            valid = sorted(owner.model_fields)
            close = difflib.get_close_matches(loc[-1], valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(
                (path, f"unknown field{hint}; valid fields of {owner.__name__}: {', '.join(valid)}")
            )
        else:
            message = item["msg"].removeprefix("Value error, ")
            problems.append((path, f"{message} (got {item.get('input')!r})"))
    return problems


class SettingsModel(BaseModel):
    """Base of the settings classes: frozen, strict about fields, errors as askcache errors."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", use_attribute_docstrings=True, validate_default=True
    )

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidSettingsError(type(self).__name__, _describe(exc, type(self))) from exc


class CacheWritingSettings(SettingsModel):
    """How a recording is written to a cache file."""

    filename: str | None = None
    """Cache file name, relative to ``cache_dir`` (``.json`` is appended if missing). ``None``:
    a name is made from the goal and the time when recording, and the model chooses among
    the cached trajectories when executing."""
    visual_verification_method: VisualMethod = VisualMethod.PHASH
    """Perceptual hash stored for validated steps; ``none`` records no visual validation."""
    visual_validation_region_size: int = Field(DEFAULT_REGION_SIZE, ge=16, le=4096)
    """Side, in screenshot pixels, of the square region around the action point that is
    hashed. The region is clipped at the screen edges."""
    visual_validation_threshold: int = Field(DEFAULT_THRESHOLD, ge=0)
    """Largest Hamming distance (bits) at which a replayed step still counts as matching.
    Stored in the file; a replay may override it. Must be below ``hash_size**2``."""
    hash_size: int = Field(DEFAULT_HASH_SIZE, ge=4, le=32)
    """Side of the hash: ``hash_size**2`` bits. Even; a power of two for ``whash``."""
    visual_validation_shift_tolerance: int = Field(DEFAULT_SHIFT_TOLERANCE, ge=0, le=8)
    """At replay, the current region is also hashed moved by up to this many pixels each way,
    and the smallest distance counts: a 1 px scroll then does not hand back. 0: exact position."""
    visual_validation_detail_region_size: int | None = Field(
        DEFAULT_DETAIL_REGION_SIZE, ge=8, le=4096
    )
    """Side of a second, smaller region at the same point, hashed finely so that a changed
    label on the element itself (8 -> 3, Save -> Open) hands back; the main region's coarse
    hash misses those. ``None``: no detail hash (replays on a rescaled screen then hand back
    less often, together with ``visual_validation_tone=False``; but such label changes go
    unnoticed)."""
    visual_validation_detail_hash_size: int = Field(DEFAULT_DETAIL_HASH_SIZE, ge=4, le=32)
    """Side of the detail hash: ``visual_validation_detail_hash_size**2`` bits."""
    visual_validation_detail_threshold: int = Field(DEFAULT_DETAIL_THRESHOLD, ge=0)
    """Largest Hamming distance of the detail hash at which a step still matches. Stored in
    the file; a replay may override it."""
    visual_validation_detail_blur: float = Field(DEFAULT_DETAIL_BLUR, ge=0, le=4)
    """Radius of the Gaussian blur applied to the detail region before hashing, so that text
    re-rendered with other anti-aliasing (a HiDPI screen scaled down, another font
    rasteriser) hashes alike while another label does not. 0: no blur (the format-2 check)."""
    visual_validation_tone: bool = True
    """Also store the brightness and contrast of the main and detail regions (two numbers
    each, not pixels) and hand back when either moves beyond its tolerance: a dialog's dimming
    backdrop, an element faded to show it is disabled. Hashes alone cannot see these."""
    visual_validation_tone_mean_tolerance: float = Field(DEFAULT_TONE_MEAN_TOLERANCE, gt=0, le=1)
    """Largest relative change of a region's mean grey level that still matches (3 %
    brightness changes and JPEG re-encodes stay well below the default)."""
    visual_validation_tone_contrast_tolerance: float = Field(
        DEFAULT_TONE_CONTRAST_TOLERANCE, gt=0, le=1
    )
    """Largest relative change of a region's contrast (grey-level deviation) that still
    matches."""
    visual_validation_target: bool = True
    """When the element under the point is larger than the main region (a wide text field),
    also store its box and one bit per column saying where ink lies in it, and hand back when
    that changes (text left over at the field's far end). No pixels are stored."""
    visual_validation_target_columns: int = Field(DEFAULT_TARGET_COLUMNS, ge=1, le=256)
    """Columns of the whole target's ink map."""
    visual_validation_target_threshold: int = Field(DEFAULT_TARGET_THRESHOLD, ge=0)
    """Ink-map columns that may change while the step still matches."""
    validated_actions: frozenset[str] = DEFAULT_VALIDATED_ACTIONS
    """Actions whose region is hashed: by default the click family, ``type`` and ``key``."""
    parameters: dict[str, str] = Field(default_factory=dict)
    """Cache parameters: name -> the value used in this recording. Every occurrence of the
    value in the goal and in step inputs is stored as ``{{name}}``, to be filled in at replay."""

    @field_validator("filename")
    @classmethod
    def _check_filename(cls, value: str | None) -> str | None:
        if value is None:
            return None
        path = PurePosixPath(value.replace("\\", "/"))
        if not value.strip() or path.is_absolute() or ".." in path.parts:
            raise ValueError("must be a relative path inside cache_dir, without '..'")
        return value if value.endswith(".json") else f"{value}.json"

    @field_validator("validated_actions")
    @classmethod
    def _check_actions(cls, value: frozenset[str]) -> frozenset[str]:
        unknown = sorted(value - KNOWN_ACTIONS)
        if unknown:
            raise ValueError(
                f"unknown actions {', '.join(unknown)}; known: {', '.join(sorted(KNOWN_ACTIONS))}"
            )
        return value

    @field_validator("parameters")
    @classmethod
    def _check_parameters(cls, value: dict[str, str]) -> dict[str, str]:
        for name, sample in value.items():
            if not _PARAMETER_NAME.match(name):
                raise ValueError(f"parameter name {name!r} must be an identifier")
            if not sample:
                raise ValueError(f"parameter {name!r} has an empty value")
        return value

    @model_validator(mode="after")
    def _check_hash(self) -> CacheWritingSettings:
        hashes = [("hash_size", self.hash_size, "visual_validation_threshold")]
        if self.visual_validation_detail_region_size is not None:
            hashes.append(
                (
                    "visual_validation_detail_hash_size",
                    self.visual_validation_detail_hash_size,
                    "visual_validation_detail_threshold",
                )
            )
        for size_field, size, threshold_field in hashes:
            threshold = getattr(self, threshold_field)
            if size % 2:
                raise ValueError(f"{size_field} must be even (got {size})")
            if self.visual_verification_method == VisualMethod.WHASH and size & (size - 1):
                raise ValueError(f"whash needs a power-of-two {size_field} (got {size})")
            if threshold >= size**2:
                raise ValueError(
                    f"{threshold_field} {threshold} would accept any screen: "
                    f"a {size}x{size} hash has {size**2} bits"
                )
        return self


class CacheExecutionSettings(SettingsModel):
    """How a cache file is replayed."""

    delay_time_between_action: float = Field(0.5, ge=0, le=60)
    """Seconds to wait before each replayed step after the first, so the UI can respond."""
    visual_validation_threshold: int | None = Field(None, ge=0)
    """Overrides the threshold stored in the file; ``None`` uses the file's."""
    visual_validation_detail_threshold: int | None = Field(None, ge=0)
    """Overrides the detail hash's threshold stored in the file; ``None`` uses the file's."""
    skip_visual_validation: bool = False
    """Replay without checking the screen. Every step then counts as unvalidated."""
    parameter_values: dict[str, str] = Field(default_factory=dict)
    """Values for the trajectory's ``{{name}}`` parameters, when the replay starts at once."""
    wait_for_settle: bool = False
    """Before checking a step, watch its region until it stops changing for
    ``settle_quiet_period`` seconds (at most ``settle_timeout``). Needs a screen to watch
    (the agent's computer tool). Fast on a fast UI, safe on a slow one; pair it with a small
    ``delay_time_between_action``."""
    settle_timeout: float = Field(5.0, gt=0, le=120)
    """Longest wait for the region to settle, in seconds; the last image is checked then."""
    settle_quiet_period: float = Field(0.3, ge=0, le=10)
    """How long the region must stay unchanged to count as settled, in seconds."""


class CachingSettings(SettingsModel):
    """Everything about caching for one :meth:`Agent.act` call."""

    strategy: CacheStrategy = CacheStrategy.AUTO
    """What to do: ``record``, ``execute``, ``auto`` or ``off`` (see :class:`CacheStrategy`)."""
    cache_dir: Path = Path(".askcache")
    """Folder holding the cache files (created when the first file is written)."""
    writing_settings: CacheWritingSettings = Field(default_factory=CacheWritingSettings)
    """How recordings are written."""
    execution_settings: CacheExecutionSettings = Field(default_factory=CacheExecutionSettings)
    """How replays run."""
