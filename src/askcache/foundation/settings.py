"""Settings objects: frozen, validated on construction, unknown fields rejected.

A wrong value or an unknown field raises :class:`~askcache.foundation.errors.InvalidSettingsError`
naming the field, listing the valid ones and suggesting the closest::

    >>> CacheWritingSettings(filenme="login.json")
    InvalidSettingsError: invalid CacheWritingSettings: filenme: unknown field; did you mean
    'filename'? (valid fields of CacheWritingSettings: filename, ...)
"""

from __future__ import annotations

import difflib
import re
import types
import typing
import unicodedata
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from askcache.foundation import limits
from askcache.foundation.actions import ACTION_ALIASES, DEFAULT_VALIDATED_ACTIONS, KNOWN_ACTIONS
from askcache.foundation.errors import InvalidSettingsError
from askcache.foundation.parameters import PARAMETER_NAME, parameter_value_problem
from askcache.foundation.retention import DEFAULT_LEDGER_RETENTION_DAYS

__all__ = [
    "DEFAULT_DETAIL_BLUR",
    "DEFAULT_DETAIL_HASH_SIZE",
    "DEFAULT_DETAIL_NOISE_FLOOR",
    "DEFAULT_DETAIL_REGION_SIZE",
    "DEFAULT_DETAIL_THRESHOLD",
    "DEFAULT_HASH_SIZE",
    "DEFAULT_LEDGER_RETENTION_DAYS",
    "DEFAULT_NOISE_FLOOR",
    "DEFAULT_OTHER_DENSITY_BLUR",
    "DEFAULT_OTHER_DENSITY_NOISE_FLOOR",
    "DEFAULT_OTHER_DENSITY_REGION_SIZE",
    "DEFAULT_OTHER_DENSITY_THRESHOLD",
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
    "HealMode",
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
DEFAULT_DETAIL_THRESHOLD = 14
"""Largest distance of the detail hash, counting only the bits not forgiven by its noise
floor, still counted as unchanged. Chosen with the floors and the blur below on the tuning
split of bench/accuracy.py (docs/benchmarks.md): the set-up catching every change there with
the fewest false hand-backs; on the held-out split it also caught every change, and it
catches every digit relabel of tests/unit/test_visual.py's small keypad."""
DEFAULT_NOISE_FLOOR = 100.0
"""The main hash's noise floor: a differing bit whose DCT coefficient lies within 100 of the
median on the recorded and on the current screen is not counted (JPEG noise and 3 %
brightness changes decide those bits)."""
DEFAULT_DETAIL_NOISE_FLOOR = 250.0
"""The detail hash's noise floor (as the main hash's)."""

DEFAULT_DETAIL_BLUR = 1.0
"""Blur radius of the detail region before hashing (chosen with the floors above)."""
DEFAULT_TONE_MEAN_TOLERANCE = 0.06
"""Relative change of a region's mean grey level still counted as unchanged: 3 % brightness
changes and JPEG re-encodes reach 3.5 %, a dimming backdrop 50 % (bench/accuracy.py)."""
DEFAULT_TONE_CONTRAST_TOLERANCE = 0.15
"""Relative change of a region's contrast still counted as unchanged: 3 % brightness and JPEG
reach 6.7 %, an element faded to opacity 0.4 11-61 % (bench/accuracy.py)."""
DEFAULT_OTHER_DENSITY_THRESHOLD = 8
"""Threshold of the hash checked instead of the detail hash on a screen drawn at another
pixel density."""
DEFAULT_OTHER_DENSITY_REGION_SIZE = 64
"""Side of that hash's square region (chosen with its threshold, blur and floor:
bench/accuracy.py)."""
DEFAULT_OTHER_DENSITY_BLUR = 2.0
"""Blur radius of that hash (chosen with its threshold and floor: bench/accuracy.py)."""
DEFAULT_OTHER_DENSITY_NOISE_FLOOR = 500.0
"""Noise floor of that hash."""
DEFAULT_TARGET_COLUMNS = 16
"""Columns of a wide target's ink map (one bit each)."""
DEFAULT_TARGET_THRESHOLD = 0
"""Ink-map columns of a wide target that may change while a step still matches."""

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_LEDGER_URL = re.compile(r"^(sqlite:///.+|(postgresql|postgres)://.+)$")

MAX_NAME_COMPONENT_BYTES = 255
"""Longest part of a cache file name between slashes, in UTF-8 bytes (the usual file system
limit), ``.json`` included."""
MAX_NAME_CHARS = 1024
"""Longest cache file name, folders included."""

_SENSITIVE_FIELDS = frozenset({"parameters", "secret_parameters", "parameter_values", "ledger"})
"""Fields whose values an error message never shows."""


def check_cache_name(value: str) -> str:
    """A cache file name made safe to use, ``.json`` appended if missing.

    Raises:
        ValueError: the name is empty, absolute, climbs with ``..``, holds a control
            character (NUL included), has a hidden part (``.ledger``: askcache's own), or is
            too long for a file system.
    """
    if not value.strip():
        raise ValueError("must not be empty")
    for index, char in enumerate(value):
        if unicodedata.category(char) == "Cc":
            raise ValueError(f"character {index} is U+{ord(char):04X}, a control character")
    path = PurePosixPath(value.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts:
        raise ValueError("must be a relative path inside cache_dir, without '..'")
    if any(part.startswith(".") for part in path.parts):
        raise ValueError("no part may start with '.' (hidden names are askcache's own, .ledger/)")
    name = value if value.endswith(".json") else f"{value}.json"
    if len(name) > MAX_NAME_CHARS:
        raise ValueError(f"is {len(name)} characters long; the limit is {MAX_NAME_CHARS}")
    for part in PurePosixPath(name.replace("\\", "/")).parts:
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_COMPONENT_BYTES:
            raise ValueError(
                f"the part {part[:40]!r}... is longer than {MAX_NAME_COMPONENT_BYTES} bytes"
            )
    return name


def _check_values(value: dict[str, str], what: str) -> dict[str, str]:
    for name, sample in value.items():
        if not PARAMETER_NAME.match(name):
            raise ValueError(
                f"{what} name {name[:80]!r} must be an identifier (64 characters at most)"
            )
        problem = parameter_value_problem(sample)
        if problem:
            raise ValueError(f"the value of {what} {name!r} {problem}")
    return value


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


class HealMode(StrEnum):
    """What a replay may write to its trajectory after the model finished a task it handed
    back (in the spirit of vcrpy's record modes). Default: ``off`` under
    ``strategy="execute"`` (read-only), ``auto`` under the others (under ``record`` it only
    means the recording is written; ``off`` does nothing)."""

    OFF = "off"
    """Read-only: no run writes the trajectory file or its versions: no heal, no proposal, no
    invalidation, and a recording is not written either. For CI and audits. Replays still
    go to the run ledger (beside the cache, never inside it)."""
    PROPOSE = "propose"
    """After a verified hand-back, write the healed trajectory beside the current one
    (``.versions/NAME/proposed-*.json``) for review; nothing is replayed from it until
    ``askcache accept NAME``. The current file is left byte-for-byte unchanged."""
    AUTO = "auto"
    """After a verified hand-back, the healed trajectory becomes the current version (the
    previous one is kept in ``.versions/NAME/``, like every version)."""


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
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(
                (
                    path,
                    f"unknown field{hint} (valid fields of {owner.__name__}: {', '.join(valid)})",
                )
            )
        else:
            message = item["msg"].removeprefix("Value error, ")
            if _SENSITIVE_FIELDS & set(loc):
                problems.append((path, message))  # never echo parameter values
            else:
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
            # from None: pydantic's own report would print first, above the line that names
            # the field (the validation error stays on ``__context__``)
            error = InvalidSettingsError(type(self).__name__, _describe(exc, type(self)))
            raise error from None


class CacheWritingSettings(SettingsModel):
    """How a recording is written to a cache file."""

    filename: str | None = None
    """Cache file name, relative to ``cache_dir`` (``.json`` is appended if missing). ``None``:
    a name is made from the goal and the time when recording, and the model chooses among
    the cached trajectories when executing. Checked here, before any model call: no
    control characters, no ``..``, no hidden part, each part at most 255 bytes."""
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
    visual_validation_noise_floor: float = Field(
        DEFAULT_NOISE_FLOOR, ge=0, le=limits.MAX_NOISE_FLOOR
    )
    """pHash only (other methods store 0): at replay, a bit of the main hash that differs is
    not counted when its DCT coefficient lies within this of the coefficients' median both on
    the recorded screen (recording stores which bits those are: ``visual_weak``) and on the
    current one (noise decided it: a JPEG re-encode, re-rendered anti-aliasing). A blank
    screen is never forgiven: its coefficients are all near the median, the recorded ones
    were not. Stored in the file. Default 100 (chosen with the detail hash's floor 250,
    threshold 14 and blur 1.0 on the benchmark's tuning split: no change measured goes
    through, and JPEG and 3 % brightness changes no longer hand back). 0: every differing bit
    counts (files written before this default)."""
    visual_validation_detail_region_size: int | None = Field(
        DEFAULT_DETAIL_REGION_SIZE, ge=8, le=4096
    )
    """Side of a second, smaller region at the same point, hashed finely so that a changed
    label on the element itself (8 -> 3, Save -> Open) hands back; the main region's coarse
    hash misses those. ``None``: no detail hash (such label changes then go unnoticed, and
    there is no hash for other pixel densities either). A file recorded so cannot see a
    relabelled small control, a different character in the same place: a replay clicks a
    calculator's 7 key that now reads 9 (the main hash moved 2 bits, within its threshold
    2). ``askcache lint``, ``askcache show`` and the report say so of such a file, and so
    does every replay of it (``ReplayResult.warnings``, on ``ActResult.replay``)."""
    visual_validation_detail_hash_size: int = Field(DEFAULT_DETAIL_HASH_SIZE, ge=4, le=32)
    """Side of the detail hash: ``visual_validation_detail_hash_size**2`` bits."""
    visual_validation_detail_threshold: int = Field(DEFAULT_DETAIL_THRESHOLD, ge=0)
    """Largest Hamming distance of the detail hash at which a step still matches. Stored in
    the file; a replay may override it."""
    visual_validation_detail_blur: float = Field(DEFAULT_DETAIL_BLUR, ge=0, le=4)
    """Radius of the Gaussian blur applied to the detail region before hashing, so that text
    re-rendered with other anti-aliasing (a HiDPI screen scaled down, another font
    rasteriser) hashes more alike. 0: none."""
    visual_validation_detail_noise_floor: float = Field(
        DEFAULT_DETAIL_NOISE_FLOOR, ge=0, le=limits.MAX_DETAIL_NOISE_FLOOR
    )
    """pHash only: the detail hash's noise floor (as ``visual_validation_noise_floor``; default
    250, with ``visual_validation_detail_threshold`` 14 and blur 1.0)."""
    visual_validation_other_density_threshold: int | None = Field(
        DEFAULT_OTHER_DENSITY_THRESHOLD, ge=0
    )
    """Also store a hash of a region around the point, blurred and forgiving weak bits, and
    check it *instead of* the detail hash when the replay's screen is drawn at another pixel
    density than the recording's: its screenshots are rescaled, or the computer tool reports
    a display of another size (a HiDPI screen). On such a screen the tone's contrast is not
    checked either; its brightness is. This is the threshold of that hash; ``None``: store
    none, and check such screens like any other (most hand back: re-rendered text moves the
    fine detail hash as far as a changed letter). Needs the detail hash (same hash size).
    Default 8, with a 64 px region, blur 2.0 and noise floor 500, chosen on the benchmark's
    tuning split to catch every relabel there (docs/benchmarks.md, "Screens of another pixel
    density"): about half of such screens still hand back. 22 with a 48 px region forgives
    far more of them and lets some relabels through (docs/caching.md, "Rescaled screens")."""
    visual_validation_other_density_region_size: int = Field(
        DEFAULT_OTHER_DENSITY_REGION_SIZE,
        ge=limits.MIN_DETAIL_REGION_SIZE,
        le=limits.MAX_REGION_SIZE,
    )
    """Side of that hash's square region around the point, in screenshot pixels."""
    visual_validation_other_density_blur: float = Field(DEFAULT_OTHER_DENSITY_BLUR, ge=0, le=4)
    """Blur radius of that hash's region before hashing."""
    visual_validation_other_density_noise_floor: float = Field(
        DEFAULT_OTHER_DENSITY_NOISE_FLOOR, ge=0, le=limits.MAX_DETAIL_NOISE_FLOOR
    )
    """pHash only: that hash's noise floor (as ``visual_validation_detail_noise_floor``)."""
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
    """Actions whose region is hashed: by default every acting action (the click family and
    drags, ``type``, ``key``, ``hold_key``, ``scroll``). A step that acts without a hash is
    handed back at replay (``CacheExecutionSettings.unchecked_steps``). The design's words
    are accepted as aliases and expanded: ``click`` (the click family) and ``text_entry``
    (``type``, ``key``, ``hold_key``)."""
    record_screen_state: bool = True
    """Also record, per acting step, the tiles near its point that it changed (before and
    after) and the final screen, as 1/8-scale grey thumbnails
    (:mod:`askcache.foundation.screen.thumbnails`): replays then check that the area an action
    affects looks as recorded before acting, that the action had its effect, and that the run ended
    as recorded. The thumbnails show layout, not readable text; ``False`` stores none of them (and
    the replay skips those checks)."""
    record_elements: bool = True
    """Also record, per acting step with a point, the element under it: what the platform's
    accessibility tree says of it (role, name, states, ancestors, box; AT-SPI on Linux, when
    the session has it) and the text of its label as OCR reads it (when an OCR engine is
    installed: the ``anchors`` extra), with its look (:mod:`askcache.foundation.screen.elements`).
    Replays then catch a relabelled control whose pixels still pass, and act on a control
    re-drawn at another density, theme or font size when it is plainly the same
    (:mod:`askcache.replay.element_check`). Names and text go through ``parameters`` and
    ``secret_parameters`` as typed text does. ``False``: none stored (pixels alone)."""
    parameters: dict[str, str] = Field(default_factory=dict, repr=False)
    """Cache parameters: name -> the value used in this recording. Every occurrence of the
    value in the goal and in typed text is stored as ``{{name}}``, to be filled in at
    replay. Values are at most 4096 characters, without control characters."""
    secret_parameters: dict[str, str] = Field(default_factory=dict, repr=False)
    """Secret parameters: name -> the value typed in this recording (a password). The value
    is never written: typed text and goal store ``{{secret:name}}``, and it is redacted from
    failures, logs and reports. The replay's caller gives it again in ``parameter_values``."""
    redact_typed_text: Literal["off", "password_like", "all"] = "off"
    """Also treat typed text as secret without declaring it: ``password_like`` redacts typed
    text that looks like a password (8+ characters, no spaces, at least three of lower
    case, upper case, digits and symbols); ``all`` every typed text. Each becomes
    ``{{secret:typed_<step>}}``, a value the replay's caller must give."""

    @field_validator("filename")
    @classmethod
    def _check_filename(cls, value: str | None) -> str | None:
        return None if value is None else check_cache_name(value)

    @field_validator("validated_actions")
    @classmethod
    def _check_actions(cls, value: frozenset[str]) -> frozenset[str]:
        expanded = frozenset().union(*(ACTION_ALIASES.get(name, {name}) for name in value))
        unknown = sorted(expanded - KNOWN_ACTIONS)
        if unknown:
            known = ", ".join(sorted(KNOWN_ACTIONS))
            aliases = ", ".join(sorted(ACTION_ALIASES))
            raise ValueError(
                f"unknown actions {', '.join(unknown)}; known: {known}; aliases: {aliases}"
            )
        return expanded

    @field_validator("parameters")
    @classmethod
    def _check_parameters(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_values(value, "parameter")

    @field_validator("secret_parameters")
    @classmethod
    def _check_secrets(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_values(value, "secret parameter")

    @model_validator(mode="after")
    def _check_hash(self) -> CacheWritingSettings:
        both = sorted(self.parameters.keys() & self.secret_parameters.keys())
        if both:
            raise ValueError(f"{', '.join(both)}: both a parameter and a secret parameter")
        hashes = [("hash_size", self.hash_size, "visual_validation_threshold")]
        if self.visual_validation_detail_region_size is not None:
            hashes.append(
                (
                    "visual_validation_detail_hash_size",
                    self.visual_validation_detail_hash_size,
                    "visual_validation_detail_threshold",
                )
            )
        if (
            self.visual_validation_detail_region_size is not None
            and self.visual_validation_other_density_threshold is not None
        ):
            hashes.append(
                (
                    "visual_validation_detail_hash_size",
                    self.visual_validation_detail_hash_size,
                    "visual_validation_other_density_threshold",
                )
            )
        for size_field, size, threshold_field in hashes:
            threshold = getattr(self, threshold_field)
            if size % 2:
                raise ValueError(f"{size_field} must be even (got {size})")
            if self.visual_verification_method == VisualMethod.WHASH and size & (size - 1):
                raise ValueError(f"whash needs a power-of-two {size_field} (got {size})")
            problem = limits.threshold_problem(threshold, size)
            if problem is not None:
                raise ValueError(f"{threshold_field} {problem}")
        return self


class CacheExecutionSettings(SettingsModel):
    """How a cache file is replayed."""

    model_config = ConfigDict(populate_by_name=True)

    delay_time_between_action: float = Field(0.0, ge=0, le=60)
    """Fixed seconds to wait before each replayed step after the first. 0 by default: the
    replay waits for the screen itself (``auto_wait``); use a delay only where no screen can
    be watched."""
    visual_validation_threshold: int | None = Field(None, ge=0)
    """Overrides the threshold stored in the file; ``None`` uses the file's. Above the file's,
    it loosens the check, and the replay says so (``ReplayResult.loosened``, the run ledger);
    at or above the hash's bit count it accepts any screen, and the replay also says so in
    ``ReplayResult.warnings`` (:class:`~askcache.replay.check_policy.CheckPolicy`)."""
    visual_validation_detail_threshold: int | None = Field(None, ge=0)
    """Overrides the detail hash's threshold stored in the file; ``None`` uses the file's
    (said as ``visual_validation_threshold`` is)."""
    model_visual_validation_threshold: int | None = Field(None, ge=0)
    """The main threshold the model asked for through the ``execute_cached_trajectory`` tool,
    which sets it (a caller sets ``visual_validation_threshold`` instead). It wins over the
    other two; above the file's it is said as a loosening by the model, and at or above the
    hash's bit count the replay is refused
    (:class:`~askcache.replay.check_policy.CheckPolicy`)."""
    skip_visual_validation: bool = False
    """Replay without checking the screen at all. Every step then counts as unvalidated.
    One check remains: a typed text must reach the screen (after a ``type`` step, the tiles
    its text was drawn over when recorded look other than before it, docs/caching.md). A
    loosening, said in ``ReplayResult.loosened`` and the run ledger."""
    unchecked_steps: Literal["refuse", "hand_back", "run"] = "hand_back"
    """What to do with a step that acts (click, type, key, drag, scroll) but carries no
    fingerprint (files recorded with method ``none``, or older files whose first step came
    before any screenshot): ``refuse`` the whole file before any step runs; ``hand_back``
    (default) replay the checked steps before it and stop before it; ``run`` it unchecked
    (a loosening when the file has such a step, said in ``ReplayResult.loosened`` and the
    run ledger). (A step whose stored hash cannot be checked, such as hashes without the
    file's validation set-up, is always refused.)"""
    parameter_values: dict[str, str] = Field(default_factory=dict, repr=False)
    """Values for the trajectory's ``{{name}}`` and ``{{secret:name}}`` parameters, when the
    replay starts at once. Typed literally; at most 4096 characters, no control characters.
    Secret ones are redacted from everything askcache writes."""
    replay_tools: frozenset[str] = frozenset()
    """Tools other than the computer tool that replayed steps may call, when this run also
    offers them. Empty: a file with a step calling any other tool is refused, so a shared
    cache file is never a way to run commands."""
    require_signature: bool | None = None
    """Refuse files without a valid signature (docs/cache-format.md, "Signed files").
    ``None``: required when a signing key is set (``ASKCACHE_SIGNING_KEY``)."""
    auto_wait: bool = Field(True, validation_alias=AliasChoices("auto_wait", "wait_for_settle"))
    """Watch the screen instead of sleeping, where a screen can be watched (the agent's
    computer tool): before a step, go as soon as its region matches; hand back only once it
    has stayed unchanged and different for ``settle_quiet_period`` (or after
    ``settle_timeout``). After a step, wait the same way for its recorded effect. Off: the
    check uses the latest screenshot once. (``wait_for_settle`` is its former name.)"""
    settle_timeout: float = Field(10.0, gt=0, le=120)
    """Longest wait for a step's region, or its effect, to appear, in seconds. The replay's
    first checked step waits this long for its screen whatever the quiet period (the
    application may still be starting), then hands back naming this setting when its own
    checks still fail."""
    settle_quiet_period: float = Field(1.5, ge=0, le=30)
    """How long a region that still differs must stay unchanged before the replay gives up
    on it, in seconds. Longer than the slowest answer of the application: a UI that answers
    after 0.8 s is still unchanged for 0.8 s."""
    settle_window_still: float = Field(0.5, ge=0, le=30)
    """How long a step's window must stay unchanged, in seconds, while the step's checks
    still fail, before the replay hands back: where the window the step was recorded in is
    listed on the screen (the computer tool lists windows) and shows no change for this long,
    the application has answered and shows another screen, and waiting longer would only
    delay the model. While that window is missing, blank, newly appeared or still changing, the
    replay waits (up to ``settle_timeout``: an application started late); a check that fails
    only by its ink or tone (its hashes pass: a blinking caret, a hover) is waited on as
    before (``settle_quiet_period``). Once the run ledger holds 5 runs of the
    file on this screen profile, the step's own past waits decide instead: their 99th
    percentile plus half of it (the same for a step with no window to look for, after the
    replay's first step). At least ``settle_still_period``."""
    settle_start_still: float = Field(0.3, ge=0, le=5)
    """How long the screen must stay unchanged, in seconds, before the replay's first
    checked step acts (at least ``settle_still_period``): an application that has just
    started draws in bursts with pauses between them (vi in xterm draws its status line
    after the file; ``bench/drift.py`` counted 2 actions in 5 started-late vi replays on a
    screen whose status line was not drawn yet, with a frame's stillness). Only the first
    step pays it."""
    settle_still_period: float = Field(0.025, ge=0, le=5)
    """How long the screen must stay unchanged, in seconds, before a step whose checks pass
    acts on it: a later look, this long after the first look the checks passed on, must
    pass too and show the same screen (around the step's window where it is now, when
    recorded, and apart from tiles that changed by themselves when recorded). A check can
    pass on a frame the application is still drawing (a window half painted at start-up,
    the last typed letter not drawn yet: a toolkit painting at 60 Hz shows a new frame every
    17 ms); the default covers one and a half such frames. The same holds for a first step
    that runs on its own checks after the start screen never came, and for a step the
    search found elsewhere. A screen that keeps changing while the checks pass (an
    animation in the window) is acted on after ``settle_quiet_period`` (at least one more
    look). Judged on the screen-state thumbnails a file records (format version 3 on). 0:
    act on the first look that passes."""
    check_effects: bool = True
    """After each step, check it had the effect it had when recorded (files that recorded
    effects): an action that changed its area then but changes nothing now did not land.
    Off: only whether a typed text reached the screen is checked after a ``type`` step (a
    loosening when the file recorded effects, said as ``skip_visual_validation`` is)."""
    wait_for_start_screen: bool = True
    """The trajectory's first action waits (up to ``settle_timeout``) until the whole screen
    looks like the recording's screen before it, coarsely (files that recorded it:
    ``metadata.start_state``): its own region may already match while the application is
    still drawing its window. When the screen never comes (another layout, another desktop),
    the step's own checks decide alone after the wait, as for any step; the step's record
    names the differing area. When the first step's window was recorded, only that window's
    frame is compared. Off: no wait (for desktops that differ from the recording's away from
    the application, with no recorded window: each replay would wait ``settle_timeout``)."""
    search_radius: int = Field(320, ge=0, le=2048)
    """When a step's region does not match at its recorded point and there is no window to
    anchor it to, look for the region this many screenshot pixels around the point (each
    way): a place is used only when it is the one match by a clear margin and the step's
    full check passes there (:mod:`askcache.replay.search`). 0: no search."""
    end_state: Literal["report", "hand_back", "off"] = "report"
    """After the last step, compare the screen with the recorded end state. ``report``: the
    replay ends ``completed`` only when it matches, ``completed_unverified`` otherwise;
    ``hand_back``: on a difference, also hand the turn to the model, asking it to confirm or
    fix; ``off``: no comparison (``completed`` when every step ran; a loosening when the file
    recorded an end state, said as ``skip_visual_validation`` is)."""
    check_elements: bool = True
    """Check each step recorded with its element (``record_elements``) by the element too
    (:mod:`askcache.replay.element_check`): where the pixels pass but the element under the
    point has another role, name or state, or its label reads otherwise, hand back; where the
    pixels fail only because the screen is drawn otherwise (another density, theme, font
    size), act when the same element is the only one of its kind in its window and its look
    passes (``element_look_threshold``); an element that moved inside its window is acted on
    where the full pixel check passes at its new place. A tree that is missing, slow or
    ambiguous leaves the pixels to decide. Off: pixels alone (a loosening when the file
    recorded elements)."""
    element_look_threshold: float = Field(0.35, ge=0.0, le=1.0)
    """How far an element's look may be from the recorded one (``1 - r`` of their ink maps,
    :func:`askcache.fingerprint.element_look.look_distance`) for a step to act on a
    re-drawn screen on its element's word (``check_elements``)."""
    rejoin: bool = True
    """After a hand-back, take over again once the model has acted (a screenshot or a wait
    is not progress), goes on (has not ended its turn or said it stops), and the screen
    passes the next step's check and the check that failed (:mod:`askcache.replay.rejoin`). The
    model may also ask for it with the ``resume_cached_trajectory`` tool."""
    model_after_hand_back: bool = True
    """Give the turn to the model when the replay hands back (the default). ``False``: the
    run ends at the hand-back with no model call, its status ``failed``, for runs that must
    replay or fail (the pytest plugin's ``replay`` mode, docs/pytest.md); the ledger entry
    says the hand-back as any other, and nothing is healed. In your own loop
    (:class:`~askcache.loop.LoopReplay`) the loop calls the model, not askcache: there
    ``handed_back`` says it as before."""
    allow_invalidated: bool = False
    """Replay a file marked invalid. Without it, ``execute`` refuses such a file."""
    invalidate_after: int | None = Field(3, ge=1, le=1000)
    """Mark a file invalid once this many replays in a row handed back at the same step
    (counted in the run ledger); ``None``: never."""
    keep_step_views: bool = False
    """Keep, per checked step, what it was checked on (the region around its point and a
    small copy of the whole screen, about 0.2 MiB a step) for an HTML report
    (``ActResult.views``, ``CacheExecutor.views``). Off: a replay keeps no image of a step,
    and its memory does not grow with each image."""

    @field_validator("parameter_values")
    @classmethod
    def _check_parameter_values(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_values(value, "parameter")


class CachingSettings(SettingsModel):
    """Everything about caching for one :meth:`Agent.act` call."""

    strategy: CacheStrategy = CacheStrategy.AUTO
    """What to do: ``record``, ``execute``, ``auto`` or ``off`` (see :class:`CacheStrategy`)."""
    cache_dir: Path | str = Path(".askcache")
    """Where the cache files live: a folder (created when the first file is written), or a
    URL of shared storage such as ``s3://bucket/prefix`` (needs ``askcache[s3]``; see
    docs/fleet.md), ``file:///path`` or ``memory://name``. A folder is kept as a ``Path``, a
    URL as a ``str``."""
    writing_settings: CacheWritingSettings = Field(default_factory=CacheWritingSettings)
    """How recordings are written."""
    execution_settings: CacheExecutionSettings = Field(default_factory=CacheExecutionSettings)
    """How replays run."""

    @field_validator("cache_dir", mode="before")
    @classmethod
    def _check_cache_dir(cls, value: object) -> object:
        if isinstance(value, str) and _URL.match(value):
            scheme, rest = value.split("://", 1)
            if not rest.strip("/"):
                raise ValueError(f"the URL names no location after {scheme}://")
            return value
        if isinstance(value, str):
            if not value.strip():
                raise ValueError("must name a folder or a URL")
            return Path(value)
        return value

    heal: HealMode | None = None
    """What a replay may write after the model finished a task it handed back (see
    :class:`HealMode`). ``None``: ``off`` under ``strategy="execute"``, ``auto`` otherwise."""
    keep_versions: int = Field(10, ge=0, le=1000)
    """Versions of a trajectory kept in ``.versions/NAME/`` (older ones are deleted when a
    new version is written). A heal or a recording over an existing trajectory adds one.
    0: versions are off: recording over an existing trajectory is refused
    (:class:`~askcache.foundation.errors.CacheOverwriteRefusedError`) and a heal is only proposed,
    so nothing recorded earlier is ever replaced without a version."""
    outbox_dir: Path | None = None
    """A local folder where heals and run-ledger entries wait when ``cache_dir`` cannot be
    written (the server is down, the disk full, the folder read-only); they are sent on the
    next run or by ``askcache sync`` (see :mod:`askcache.storage.outbox`). ``None``:
    ``$ASKCACHE_OUTBOX_DIR``, else ``$XDG_STATE_HOME/askcache/outbox``, else
    ``~/.local/state/askcache/outbox``. Must be a local folder, not a URL."""

    ledger: str | None = None
    """Where the run ledger is kept: ``None``, the default for ``cache_dir`` (SQLite inside a
    local folder, append-only segments on shared storage); ``sqlite:///PATH``; or
    ``postgresql://USER:PASSWORD@HOST/DB`` for a fleet (needs ``askcache[postgres]``; see
    docs/ledger.md). ``None`` here lets ``$ASKCACHE_LEDGER`` decide. A password in it is
    never printed or logged."""
    ledger_retention_days: int | None = Field(DEFAULT_LEDGER_RETENTION_DAYS, ge=1, le=36500)
    """Days raw run-ledger entries are kept; each trajectory's summary (its counts, spending
    and savings) is kept for ever. ``None``: keep every entry for ever."""
    ledger_thumbnails: bool = False
    """Keep, beside the run ledger, small thumbnails of the failing region of each hand-back
    hot spot: when a replay hands back because a step's pixel or area check failed, the
    step's checked region as recorded and as it was then (PNG, at most 96 px a side; the
    latest per trajectory, step, reason code and screen profile), shown side by side on the
    fleet page (``askcache dashboard``; docs/ledger.md, "Failing-region thumbnails"). Never
    one that could show a secret: none for a step that types a secret, nor for a region
    overlapping a field a secret was typed into. Off (the default): no image of a screen
    leaves the run."""

    @field_validator("ledger")
    @classmethod
    def _check_ledger(cls, value: str | None) -> str | None:
        if value is not None and not _LEDGER_URL.match(value):
            shown = re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", value)
            raise ValueError(
                f"{shown!r} is not a ledger URL: give sqlite:///PATH or "
                "postgresql://USER@HOST/DB (or None for the default)"
            )
        return value

    @field_validator("outbox_dir", mode="before")
    @classmethod
    def _check_outbox_dir(cls, value: object) -> object:
        if isinstance(value, str):
            if _URL.match(value):
                raise ValueError("must be a local folder, not a URL")
            if not value.strip():
                raise ValueError("must name a folder")
            return Path(value)
        return value

    @property
    def heal_mode(self) -> HealMode:
        """The heal mode in force: :attr:`heal`, or the strategy's default."""
        if self.heal is not None:
            return self.heal
        return HealMode.OFF if self.strategy == CacheStrategy.EXECUTE else HealMode.AUTO
