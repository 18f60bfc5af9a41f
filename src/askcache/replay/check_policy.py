"""The check policy: the thresholds a replay's checks apply, and what loosens them, decided once.

A threshold has three sources. The cache file fixes its own when it is recorded
(``metadata.visual_validation``: the main hash's, the detail hash's); the caller's
:class:`~askcache.foundation.settings.CacheExecutionSettings` may override them
(``visual_validation_threshold``, ``visual_validation_detail_threshold``); and the model may ask
for a main threshold through the ``execute_cached_trajectory`` tool
(:class:`~askcache.replay.tools.ExecuteCachedTrajectory`, as the design in seed 002 allows), which
wins over both. :meth:`CheckPolicy.resolve` reads the three once, holds each to the one rule
for thresholds (:func:`askcache.foundation.limits.threshold_problem`: below the hash's bit count),
and returns a frozen :class:`CheckPolicy`. The checks (:mod:`.check`, :mod:`.search`, and after a
step :func:`~askcache.replay.effects.checked_effect`) read the thresholds and the switches that
decide a verdict from it (``state.policy``), never from the settings.

**What loosens a check** is decided here alone, and each :class:`Loosening` is said in the
replay's result (:attr:`~askcache.replay.result.ReplayResult.loosened`) and its run-ledger entry
(:attr:`~askcache.storage.ledger.RunRecord.loosened`):

- a threshold raised above the file's, by the settings or by the model;
- ``skip_visual_validation``: no step's screen is checked;
- ``unchecked_steps="run"``, when the file holds acting steps without a fingerprint;
- ``check_effects`` off, when the file recorded effects: neither the area an action changed
  (before it) nor its effect (after it) is checked;
- ``end_state="off"``, when the file recorded an end state: ``completed`` no longer means the
  final screen matched.

Not loosenings: a lowered threshold (it tightens); ``wait_for_start_screen`` off,
``settle_still_period`` and ``auto_wait``, which change *when* the checks look, not what they
accept (with the start screen never coming, the first step's own checks decide alone anyway);
the search, a moved window's anchor and a screen profile, which never loosen a check
(docs/fleet.md).

**What is refused**: a threshold the model asks for at or above the hash's bit count (it would
accept any screen), and a file whose own threshold is (the loader refuses such a file first):
:class:`InvalidThresholdError`, naming the field and its source. The caller's own override at
or above the bit count runs as asked: it is said as a loosening, and in
:attr:`~askcache.replay.result.ReplayResult.warnings` (docs/caching.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from askcache.cachefile.format import CacheFile, CacheMetadata, VisualValidationConfig
from askcache.foundation.actions import ACTING_ACTIONS, parse_action
from askcache.foundation.errors import AskCacheError
from askcache.foundation.limits import threshold_problem
from askcache.foundation.settings import CacheExecutionSettings

__all__ = [
    "CheckPolicy",
    "InvalidThresholdError",
    "Loosening",
    "LooseningSource",
    "ThresholdSource",
]

ThresholdSource = Literal["file", "settings", "model"]
"""Where a threshold came from: the cache file's ``metadata.visual_validation``, the caller's
``CacheExecutionSettings``, or the model's request through ``execute_cached_trajectory``."""

LooseningSource = Literal["settings", "model"]
"""Who loosened a check: the caller's settings, or the model (a threshold it asked for)."""

_SOURCE_WORDS: dict[ThresholdSource, str] = {
    "file": "in the file (metadata.visual_validation)",
    "settings": "in CacheExecutionSettings",
    "model": "asked by the model (execute_cached_trajectory)",
}


class InvalidThresholdError(AskCacheError, ValueError):
    """A threshold the check policy refuses: at or above its hash's bit count, so it would
    accept any screen (:func:`askcache.foundation.limits.threshold_problem`).

    Attributes:
        field: The threshold's field (``visual_validation_threshold``,
            ``metadata.visual_validation.detail.threshold``).
        source: Where it came from (see :data:`ThresholdSource`).
        value: The threshold.
        problem: What is wrong with it, in words.
    """

    def __init__(self, field: str, source: ThresholdSource, value: int, problem: str) -> None:
        self.field = field
        self.source = source
        self.value = value
        self.problem = problem
        super().__init__(f"{field} {_SOURCE_WORDS[source]}: {problem}")


class Loosening(BaseModel):
    """One way this replay checks less than its file asks, and who asked for it."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    what: str
    """The setting that loosens: ``visual_validation_threshold``,
    ``visual_validation_detail_threshold``, ``skip_visual_validation``, ``unchecked_steps``,
    ``check_effects`` or ``end_state``."""
    source: LooseningSource
    """Who asked for it (see :data:`LooseningSource`)."""
    old: int | bool | str
    """Its value without the loosening: the file's threshold, or the setting's default."""
    new: int | bool | str
    """Its value in this replay."""
    words: str
    """What the checks no longer see, in words."""

    @property
    def short(self) -> str:
        """One short line, as the run ledger keeps it:
        ``visual_validation_threshold 2 -> 6 (model)``."""
        return f"{self.what} {self.old} -> {self.new} ({self.source})"

    def describe(self) -> str:
        """The short line and what the checks no longer see."""
        return f"{self.short}: {self.words}"


def _threshold(
    field: str,
    recorded: int,
    hash_size: int,
    given: list[tuple[LooseningSource, int | None]],
    loosened: list[Loosening],
) -> tuple[int, ThresholdSource]:
    """The threshold in force: the last of ``given`` that is set, else the file's
    (``recorded``); a loosening is added when it is above the file's."""
    value: int = recorded
    source: ThresholdSource = "file"
    for who, asked in given:
        if asked is None:
            continue
        problem = threshold_problem(asked, hash_size)
        if problem is not None and who == "model":
            raise InvalidThresholdError(field, who, asked, problem)
        value, source = asked, who
    if value > recorded and source != "file":
        words = threshold_problem(value, hash_size) or (
            f"up to {value} of the hash's {hash_size**2} bits may differ (the file allows "
            f"{recorded}): larger changes at a step's point still match"
        )
        loosened.append(Loosening(what=field, source=source, old=recorded, new=value, words=words))
    return value, source


def _unchecked_acting_steps(cache_file: CacheFile) -> bool:
    """True when a step of the trajectory or of a variant acts on the screen but cannot be
    checked (no fingerprint, or no validation set-up in the file)."""
    config = cache_file.metadata.visual_validation
    steps = [*cache_file.trajectory]
    for variants in cache_file.variants.values():
        for variant in variants:
            steps.extend(variant.steps)
    for step in steps:
        action = parse_action(step)
        if action is None or action.name not in ACTING_ACTIONS:
            continue
        if config is None or step.visual_representation is None:
            return True
    return False


def _check_file(config: VisualValidationConfig) -> None:
    """The file's own thresholds, held to the same rule (the loader already refused a file
    that breaks it: :mod:`askcache.cachefile.checks`)."""
    where = "metadata.visual_validation"
    hashes = [(f"{where}.threshold", config.threshold, config.hash_size)]
    if config.detail is not None:
        hashes.append(
            (f"{where}.detail.threshold", config.detail.threshold, config.detail.hash_size)
        )
    if config.other_density is not None:
        other = config.other_density
        hashes.append((f"{where}.other_density.threshold", other.threshold, other.hash_size))
    for field, value, size in hashes:
        problem = threshold_problem(value, size)
        if problem is not None:
            raise InvalidThresholdError(field, "file", value, problem)


class CheckPolicy(BaseModel):
    """The thresholds and switches a replay's checks decide with, resolved once from the file,
    the settings and the model's request (see the module docstring); :attr:`loosened` says
    how this replay checks less than its file asks."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    threshold: int | None = None
    """The main hash's threshold applied (``None``: the file records no visual validation)."""
    threshold_source: ThresholdSource | None = None
    """Where :attr:`threshold` came from."""
    detail_threshold: int | None = None
    """The detail hash's threshold applied (``None``: the file records no detail hash). A
    screen drawn at another pixel density is checked with the file's hash for other
    densities and its own threshold instead, which nothing overrides."""
    detail_threshold_source: ThresholdSource | None = None
    """Where :attr:`detail_threshold` came from."""
    skip_visual_validation: bool = False
    """No step's screen is checked (only that a typed text reached the screen)."""
    unchecked_steps: Literal["refuse", "hand_back", "run"] = "hand_back"
    """What a step that acts without a fingerprint does (see
    :attr:`~askcache.foundation.settings.CacheExecutionSettings.unchecked_steps`)."""
    check_effects: bool = True
    """The area each action changed when recorded is checked before it, and its effect
    after it."""
    wait_for_start_screen: bool = True
    """The first acting step waits for the recording's start screen (not a loosening when
    off: the step's own checks still decide)."""
    end_state: Literal["report", "hand_back", "off"] = "report"
    """What the final screen's comparison does (see
    :attr:`~askcache.foundation.settings.CacheExecutionSettings.end_state`)."""
    check_elements: bool = True
    """Check steps recorded with their element by it too
    (:attr:`~askcache.foundation.settings.CacheExecutionSettings.check_elements`)."""
    element_look_threshold: float = 0.35
    """How far a re-drawn element's look may be from the recorded one
    (:attr:`~askcache.foundation.settings.CacheExecutionSettings.element_look_threshold`)."""
    loosened: tuple[Loosening, ...] = ()
    """Every way this replay checks less than its file asks, in the order above (empty:
    none)."""

    @classmethod
    def resolve(
        cls,
        source: CacheFile | CacheMetadata | VisualValidationConfig | None,
        settings: CacheExecutionSettings | None = None,
        override: int | None = None,
    ) -> CheckPolicy:
        """The policy of a replay of ``source`` (a cache file, its metadata, or just its
        validation set-up; ``None``: a file that records none) under ``settings``, with the
        main threshold the model asked for (``override``, from ``execute_cached_trajectory``;
        it wins over the settings' and the file's). Given less than the whole file, a
        setting that loosens only what a file may hold (unchecked steps, effects, an end
        state) counts as a loosening whenever it is set.

        Raises:
            InvalidThresholdError: the model's threshold, or the file's own, is at or above
                its hash's bit count (it would accept any screen).
        """
        settings = settings or CacheExecutionSettings()
        cache_file = source if isinstance(source, CacheFile) else None
        meta = source.metadata if isinstance(source, CacheFile) else source
        config = meta.visual_validation if isinstance(meta, CacheMetadata) else meta
        loosened: list[Loosening] = []
        threshold = detail = threshold_source = detail_source = None
        if config is not None:
            _check_file(config)
            threshold, threshold_source = _threshold(
                "visual_validation_threshold",
                config.threshold,
                config.hash_size,
                [("settings", settings.visual_validation_threshold), ("model", override)],
                loosened,
            )
            if config.detail is not None:
                detail, detail_source = _threshold(
                    "visual_validation_detail_threshold",
                    config.detail.threshold,
                    config.detail.hash_size,
                    [("settings", settings.visual_validation_detail_threshold)],
                    loosened,
                )
        if settings.skip_visual_validation:
            loosened.append(
                Loosening(
                    what="skip_visual_validation",
                    source="settings",
                    old=False,
                    new=True,
                    words="no step's screen is checked before it acts (only that a typed text "
                    "reached the screen)",
                )
            )
        elif settings.unchecked_steps == "run" and (
            cache_file is None or _unchecked_acting_steps(cache_file)
        ):
            loosened.append(
                Loosening(
                    what="unchecked_steps",
                    source="settings",
                    old="hand_back",
                    new="run",
                    words="a step that acts without a fingerprint runs without its screen "
                    "being checked",
                )
            )
        records_effects = not isinstance(meta, CacheMetadata) or meta.screen_state is not None
        if not settings.check_effects and records_effects:
            loosened.append(
                Loosening(
                    what="check_effects",
                    source="settings",
                    old=True,
                    new=False,
                    words="the area an action changed when recorded is not checked before it, "
                    "nor its effect after it (only that a typed text reached the screen)",
                )
            )
        records_elements = cache_file is None or any(
            step.element is not None for step in cache_file.trajectory
        )
        if not settings.check_elements and records_elements:
            loosened.append(
                Loosening(
                    what="check_elements",
                    source="settings",
                    old=True,
                    new=False,
                    words="the element under each point (its role, name, states, label) is not "
                    "checked: pixels alone decide",
                )
            )
        records_end = not isinstance(meta, CacheMetadata) or meta.end_state is not None
        if settings.end_state == "off" and records_end:
            loosened.append(
                Loosening(
                    what="end_state",
                    source="settings",
                    old="report",
                    new="off",
                    words="the final screen is not compared with the recording's: completed "
                    "means every step ran",
                )
            )
        return cls(
            threshold=threshold,
            threshold_source=threshold_source,
            detail_threshold=detail,
            detail_threshold_source=detail_source,
            skip_visual_validation=settings.skip_visual_validation,
            unchecked_steps=settings.unchecked_steps,
            check_effects=settings.check_effects,
            wait_for_start_screen=settings.wait_for_start_screen,
            end_state=settings.end_state,
            check_elements=settings.check_elements,
            element_look_threshold=settings.element_look_threshold,
            loosened=tuple(loosened),
        )

    def describe(self) -> list[str]:
        """One line per loosening (empty: the replay checks all its file asks)."""
        return [loosening.describe() for loosening in self.loosened]
