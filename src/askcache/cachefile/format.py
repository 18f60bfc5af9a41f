"""The cache file format: versioned JSON with ``metadata``, ``trajectory``, ``cache_parameters``.

The models (a file, its metadata, its check configuration, its variants, the trajectories
it learned for other screen profiles, its signature),
what a file's signature covers (:func:`signed_content`) and how it is written
(:func:`dump_cache_file`, secrets redacted). Reading is :mod:`askcache.cachefile.parse`: strict
and total, and the only way in. A loaded file keeps its format version: saving it again writes
the same version (:func:`upgrade_cache_file` upgrades explicitly).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from askcache.foundation import limits
from askcache.foundation.messages import ToolUseBlockParam, Usage
from askcache.foundation.parameters import TypedTextRedaction
from askcache.foundation.redaction import redact, redact_value
from askcache.foundation.scaling import ScreenProfile
from askcache.foundation.screen.thumbnails import EndState, ScreenStateConfig, StartState

__all__ = [
    "FORMAT_VERSION",
    "CacheFile",
    "CacheMetadata",
    "CoordinateSpace",
    "DetailCheckConfig",
    "ExecutionFailure",
    "FileSignature",
    "LegacyReplayStats",
    "ProfileTrajectory",
    "RecordingStats",
    "TargetCheckConfig",
    "ToneCheckConfig",
    "TrajectoryVariant",
    "VisualValidationConfig",
    "dump_cache_file",
    "signed_content",
    "upgrade_cache_file",
]

FORMAT_VERSION = 3
"""The format version this askcache writes. Version 0 is the pre-versioned seed format;
version 2 added the detail hash (a reader of version 1 would skip that check); version 3
added each step's effect and the end state, the tone and whole-target checks and the
detail hash's blur (a reader of version 2 would skip them), and moved replay counts out of
the file into the run ledger (:mod:`askcache.storage.ledger`)."""

LEGACY_HASH_SIZE = 8
"""The hash side of files that do not say theirs (8x8: the original design's)."""

LEGACY_THRESHOLD = 10
"""The threshold of files that do not say theirs (the original design's default)."""


def _now() -> datetime:
    return datetime.now(UTC)


class _FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)


_REGION_SIDE = Field(ge=limits.MIN_REGION_SIZE, le=limits.MAX_REGION_SIZE)


class DetailCheckConfig(_FileModel):
    """The second, finer hash of a smaller region centred on the same point.

    The main region's coarse hash sees layout (something moved, a dialog, another screen);
    this one sees what is written on the element itself (8 -> 3, Save -> Open), which a
    coarse hash of a 100 px region cannot. Same method and shift tolerance as the main one.
    """

    hash_size: int = Field(ge=limits.MIN_HASH_SIZE, le=limits.MAX_HASH_SIZE)
    """Hash side; ``hash_size**2`` bits."""
    region_size: int = Field(ge=limits.MIN_DETAIL_REGION_SIZE, le=limits.MAX_REGION_SIZE)
    """Side of the square detail region around the action point, in screenshot pixels."""
    threshold: int = Field(ge=0)
    """Largest Hamming distance of the detail hash still counted as a match, as recorded."""
    blur: float = Field(0.0, ge=0, le=4)
    """Radius of the Gaussian blur applied to the detail region (in grey) before hashing, so
    that re-rendered text (another anti-aliasing, a HiDPI screen scaled down) hashes alike;
    0: none (every file before version 3)."""
    noise_floor: float = Field(0.0, ge=0, le=limits.MAX_DETAIL_NOISE_FLOOR, allow_inf_nan=False)
    """pHash only: a differing bit is not counted when the current region's DCT coefficient
    behind it lies within this of the coefficients' median (a bit decided by noise:
    :func:`askcache.foundation.screen.hashing.region_distance`); 0: every differing bit counts
    (files written before this field)."""


class ToneCheckConfig(_FileModel):
    """Brightness and contrast of the main and detail regions
    (:mod:`askcache.foundation.screen.tone`).

    Perceptual hashes normalise both away, so a dialog's dimming backdrop or an element
    faded to show it is disabled does not change them; these two numbers do.
    """

    mean_tolerance: float = Field(gt=0, le=1)
    """Largest relative change of a region's mean grey level still counted as a match."""
    contrast_tolerance: float = Field(gt=0, le=1)
    """Largest relative change of a region's grey-level deviation still counted as a match."""


class TargetCheckConfig(_FileModel):
    """The whole element under the point, when it is larger than the main region
    (:mod:`askcache.foundation.screen.target`): its box and where ink lies in it."""

    columns: int = Field(gt=0, le=256)
    """Columns of the ink map (one bit each)."""
    threshold: int = Field(ge=0)
    """Largest number of ink-map bits that may differ for a match."""


class VisualValidationConfig(_FileModel):
    """How the trajectory's visual representations were computed (stored once per file)."""

    method: Literal["phash", "ahash", "dhash", "whash"]
    """Perceptual hash method."""
    hash_size: int = Field(LEGACY_HASH_SIZE, ge=limits.MIN_HASH_SIZE, le=limits.MAX_HASH_SIZE)
    """Hash side; ``hash_size**2`` bits. Files from before this field used 8."""
    region_size: int = _REGION_SIDE
    """Side of the square region around the action point, in screenshot pixels."""
    threshold: int = Field(LEGACY_THRESHOLD, ge=0)
    """Largest Hamming distance still counted as a match, as recorded; below
    ``hash_size**2``."""
    shift_tolerance: int = Field(0, ge=0, le=8)
    """Pixels the current region may be moved each way at replay; files from before this
    field were checked at the exact position (0)."""
    noise_floor: float = Field(0.0, ge=0, le=limits.MAX_NOISE_FLOOR, allow_inf_nan=False)
    """pHash only: the main hash's noise floor (as :attr:`DetailCheckConfig.noise_floor`);
    0: every differing bit counts (files written before this field)."""
    detail: DetailCheckConfig | None = None
    """The detail hash's set-up; ``None``: steps store the main hash only (all files before
    version 2)."""
    tone: ToneCheckConfig | None = None
    """The tone check's tolerances; ``None``: no tone check (all files before version 3)."""
    target: TargetCheckConfig | None = None
    """The whole-target check's set-up; ``None``: none (all files before version 3)."""
    other_density: DetailCheckConfig | None = None
    """The hash (of its own region around the point, same hash size as :attr:`detail`'s)
    checked instead of :attr:`detail` when the screen is drawn at another pixel density than
    when recorded (its screenshots rescaled, or another display size:
    text re-rendered at another size moves the fine detail hash as far as a changed letter);
    the tone's contrast is then not checked either (a thin border drawn at another size and
    scaled back loses contrast), its brightness is. ``None``: the detail hash and the whole
    tone are checked on such screens too (files written before this field)."""

    @property
    def has_noise_floor(self) -> bool:
        """True when either hash has a noise floor: steps then store their weak bits."""
        detail_floor = self.detail.noise_floor if self.detail is not None else 0.0
        return self.noise_floor > 0 or detail_floor > 0


class CoordinateSpace(_FileModel):
    """Size of the screenshots the trajectory's coordinates refer to."""

    width: int = Field(gt=0, le=limits.MAX_SCREEN_SIDE)
    """Width in pixels."""
    height: int = Field(gt=0, le=limits.MAX_SCREEN_SIDE)
    """Height in pixels."""

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"


class RecordingStats(_FileModel):
    """What the recording cost: what a successful replay saves."""

    model_calls: int = Field(0, ge=0)
    """Model calls the recorded run made."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens of those calls."""
    duration_seconds: float | None = Field(None, ge=0, allow_inf_nan=False)
    """Wall time from the start of the recording to the written file."""
    model: str | None = None
    """Model name used for the recording, when known."""


class ExecutionFailure(_FileModel):
    """One replay that stopped before the end (kept by files of versions 0 to 2)."""

    step_index: int = Field(ge=0)
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
    run ledger, :mod:`askcache.storage.ledger`: this file changes only when it is recorded or
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
    display_size: CoordinateSpace | None = None
    """The real screen's size when recorded, when the computer tool knew it (``ComputerTool``
    scales a 2560x1600 screen to 1280x800 screenshots, so :attr:`coordinate_space` alone
    cannot tell a HiDPI screen); ``None``: unknown. A replay on a display of another size
    checks with :attr:`VisualValidationConfig.other_density`."""
    screen_state: ScreenStateConfig | None = None
    """How steps' effects and the end state were recorded; ``None``: neither was (files
    before version 3, or ``record_screen_state=False``)."""
    start_state: StartState | None = None
    """The screen just before the first acting step, coarsely: a replay's first action waits
    until the screen looks like it (the application may still be starting). ``None`` when
    not recorded (files written before it, or ``record_screen_state=False``): the first
    action then waits only for its own checks."""
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
    redact_typed_text: TypedTextRedaction | None = None
    """The file's own redaction policy: which typed text it stores as a secret
    (``{{secret:typed_<step>}}``), as ``CacheWritingSettings.redact_typed_text`` said when it
    was recorded (or stricter, when a heal ran under a stricter one). It travels with the
    file: every heal, learned profile, proposal and recording over it applies the stricter
    of this and the run's own setting (:func:`~askcache.foundation.parameters.stricter_redaction`),
    so a machine replaying with the default ``off`` never writes in clear text the recording
    kept secret. Covered by the signature. ``None``: a file written before the policy was
    stored; a heal then applies the run's setting as before (and, as for every file, at
    least ``password_like`` when the file already holds typed text stored as a secret)."""


class FileSignature(_FileModel):
    """An HMAC over the file's signed content (see :mod:`askcache.cachefile.signing`)."""

    algorithm: Literal["hmac-sha256"] = "hmac-sha256"
    """The MAC: HMAC-SHA256 over :func:`signed_content`."""
    key_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    """Which key signed it (``ASKCACHE_SIGNING_KEY="<key_id>:<secret>"``); never the key."""
    value: str = Field(pattern=r"^[0-9a-f]{64}$")
    """The MAC, 64 lowercase hex digits."""


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


class ProfileTrajectory(_FileModel):
    """The trajectory a file learned for another screen profile
    (:class:`~askcache.foundation.scaling.ScreenProfile`: another screenshot size or display scale).

    Written by a heal: a run on a profile the file had not seen tried the recorded steps
    scaled, handed back where one did not pass its check, and the model completed the task;
    that verified run, fingerprinted on this profile's own screens, is kept here. A replay
    on this profile runs it instead of :attr:`CacheFile.trajectory`, checked at its own
    density; the goal, parameters and check set-up are the file's."""

    coordinate_space: CoordinateSpace
    """Size of the screenshots its coordinates refer to."""
    display_size: CoordinateSpace | None = None
    """The real screen's size on that profile, when the computer tool knew it."""
    trajectory: list[ToolUseBlockParam]
    """The steps, with fingerprints and effects taken on this profile, as in
    :attr:`CacheFile.trajectory`."""
    variants: dict[int, list[TrajectoryVariant]] = Field(default_factory=dict)
    """Its own variants, as :attr:`CacheFile.variants`."""
    start_state: StartState | None = None
    """The screen before the learned run's first acting step; ``None`` when not recorded
    (its first action then waits for its own checks only)."""
    end_state: EndState | None = None
    """The screen at the end of the learned run; ``None`` when not recorded."""
    learned_at: datetime = Field(default_factory=_now)
    """When it was learned (or last healed)."""

    @property
    def profile(self) -> ScreenProfile:
        """The screen profile this trajectory was learned on."""
        display = self.display_size
        return ScreenProfile(
            (self.coordinate_space.width, self.coordinate_space.height),
            (display.width, display.height) if display is not None else None,
        )


class CacheFile(_FileModel):
    """A recorded trajectory and everything needed to replay it."""

    version: int = FORMAT_VERSION
    """Format version of this file."""
    metadata: CacheMetadata
    """About the trajectory."""
    trajectory: list[ToolUseBlockParam]
    """The recorded tool calls, in order, with their visual representations and effects."""
    cache_parameters: dict[str, str] = Field(default_factory=dict)
    """Parameter name -> description; typed text and goal refer to them as ``{{name}}``
    (``{{secret:name}}`` for a secret, whose value is never stored)."""
    signature: FileSignature | None = None
    """HMAC of the signed content, when the recording had a signing key; checked at replay."""
    variants: dict[int, list[TrajectoryVariant]] = Field(default_factory=dict)
    """Step index -> other ways through the trajectory from that step (at most
    ``askcache.heal.trajectory.MAX_VARIANTS_PER_STEP`` each). A reader that does not know variants
    replays the trajectory alone (and hands back where a variant would have matched)."""
    profiles: dict[str, ProfileTrajectory] = Field(default_factory=dict)
    """Screen profile id (``1280x800@2x``) -> the trajectory learned on that profile (see
    :class:`ProfileTrajectory`); absent or ``{}``: none learned, every screen replays
    :attr:`trajectory`. An askcache that does not know this field refuses the file (unknown
    key)."""

    @model_validator(mode="after")
    def _profile_keys(self) -> CacheFile:
        for key, learned in self.profiles.items():
            if key != learned.profile.id:
                raise ValueError(
                    f"profiles: key {key!r} does not name the profile of its sizes "
                    f"({learned.profile.id!r})"
                )
        return self

    @property
    def profile(self) -> ScreenProfile | None:
        """The screen profile :attr:`trajectory` was recorded on (``None``: no screenshot
        was seen)."""
        space, display = self.metadata.coordinate_space, self.metadata.display_size
        if space is None:
            return None
        return ScreenProfile(
            (space.width, space.height),
            (display.width, display.height) if display is not None else None,
        )

    def for_profile(self, key: str) -> CacheFile:
        """The file as a replay on profile ``key`` sees it: that profile's trajectory,
        variants, sizes, start and end state in place of the recorded ones (no profiles of its own,
        no signature: a view, never written)."""
        learned = self.profiles[key]
        metadata = self.metadata.model_copy(
            update={
                "coordinate_space": learned.coordinate_space,
                "display_size": learned.display_size,
                "start_state": learned.start_state,
                "end_state": learned.end_state,
            }
        )
        return self.model_copy(
            update={
                "metadata": metadata,
                "trajectory": learned.trajectory,
                "variants": learned.variants,
                "profiles": {},
                "signature": None,
            }
        )

    def learned(self, view: CacheFile) -> ProfileTrajectory:
        """``view`` (a file built on one profile's screens) as a learned profile of this one."""
        space = view.metadata.coordinate_space
        if space is None:
            raise ValueError("a learned profile needs the size of its screenshots")
        return ProfileTrajectory(
            coordinate_space=space,
            display_size=view.metadata.display_size,
            trajectory=view.trajectory,
            variants=view.variants,
            start_state=view.metadata.start_state,
            end_state=view.metadata.end_state,
        )

    def invalidate(self, reason: str) -> None:
        """Mark the trajectory unusable; it is then hidden from the model's listing and
        ``execute`` refuses it unless forced."""
        self.metadata.is_valid = False
        self.metadata.invalidation_reason = redact(reason)[: limits.MAX_STRING_CHARS]


def upgrade_cache_file(cache_file: CacheFile) -> bool:
    """Mark ``cache_file`` as the current format version; True when it was older.

    Loading never upgrades a file: a version 1 file saved again stays version 1. Upgrading
    is this explicit step (``askcache upgrade NAME``). It changes the signed content, so a
    signed file must be signed again (``askcache sign NAME``).
    """
    if cache_file.version >= FORMAT_VERSION:
        return False
    cache_file.version = FORMAT_VERSION
    cache_file.signature = None
    return True


_BOOKKEEPING = frozenset(
    {
        "execution_attempts",
        "successes",
        "failures",
        "last_executed_at",
        "is_valid",
        "invalidation_reason",
    }
)
"""Metadata a replay updates; left out of the signed content."""


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def signed_content(data: dict[str, Any]) -> bytes:
    """The canonical bytes a file's signature covers, from its JSON data.

    Everything but ``signature`` and the replay bookkeeping (``execution_attempts``,
    ``successes``, ``failures``, ``last_executed_at``, ``is_valid``,
    ``invalidation_reason``), ``null`` values left out, keys sorted, compact, ASCII.
    """
    content = {key: value for key, value in data.items() if key != "signature"}
    metadata = content.get("metadata")
    if isinstance(metadata, dict):
        content["metadata"] = {k: v for k, v in metadata.items() if k not in _BOOKKEEPING}
    text = json.dumps(_without_nulls(content), sort_keys=True, separators=(",", ":"))
    return text.encode("ascii")


_FREE_TEXT_STEP_FIELDS = ("input",)


def dump_cache_file(cache_file: CacheFile) -> bytes:
    """The file's JSON text, as written to storage (cache-only fields kept).

    Registered secret values (:mod:`askcache.foundation.redaction`) are redacted from the free text:
    the goal, the input of the steps (of the trajectory, of its learned profiles and of their
    variants), failure reasons and the
    invalidation reason. Every version, proposal and trajectory file is written from here.
    Typed text registered as a secret is not (recording and healing store it as
    ``{{secret:typed_<step>}}`` where it must not be written; see
    :func:`~askcache.foundation.redaction.redact`).
    """
    data: dict[str, Any] = cache_file.model_dump(mode="json")
    if not data["profiles"]:  # a file that learned no profile reads in an askcache before them
        del data["profiles"]
    metadata = data["metadata"]
    metadata["goal"] = redact(metadata["goal"], typed=False)
    for failure in (metadata.get("legacy_stats") or {}).get("failures", []):
        failure["reason"] = redact(failure["reason"], typed=False)
    if metadata.get("invalidation_reason"):
        metadata["invalidation_reason"] = redact(metadata["invalidation_reason"], typed=False)
    ways = [data, *data.get("profiles", {}).values()]
    variant_steps = [
        s for way in ways for vs in way["variants"].values() for v in vs for s in v["steps"]
    ]
    profile_steps = [s for way in ways[1:] for s in way["trajectory"]]
    for step in [*data["trajectory"], *profile_steps, *variant_steps]:
        for key in _FREE_TEXT_STEP_FIELDS:
            step[key] = redact_value(step[key], typed=False)
    return json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
