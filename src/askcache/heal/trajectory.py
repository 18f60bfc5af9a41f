"""Healing: after a verified hand-back, the model's fix becomes the trajectory.

When a replay hands back and the model then finishes the task, the run is **verified** when

- the conversation ended ``done`` (the model ended its turn; not a failure, not the turn
  limit), no tool call the model made after the hand-back came back with an error, and
- either the replay itself ended ``completed`` with its end state matched (the model put the
  screen back and the replay re-joined), or the model made at least one acting call and
  then either the final screen matches the recorded end state (``end_state``) or, where the
  recorded end state no longer applies (the layout changed), the final screen was settled:
  a fresh look at the screen shows what the history's last screenshot shows
  (``model_completion``).

A verified run is rebuilt into a trajectory with :class:`~askcache.record.recording.CacheManager`
from this run's own messages: the replayed prefix and the model's continuation. The model's
steps are fingerprinted from this run's screenshots; the replayed steps keep the
fingerprints and effects they were just checked against (on a screen of the recorded size).
A replayed step's screenshot in the history was taken the moment it ran, often before its
effect was drawn: wherever the run is built from screens (a screen profile learned, the
model's first step after a hand-back, the end state), the replay's own looks stand for them,
the screen each replayed step was checked on and the one it left
(:attr:`~askcache.replay.session.ReplaySession.seen`), whatever ``keep_step_views`` says.
The run's parameter values are stored as ``{{name}}`` again and the values of its secret
parameters as ``{{secret:name}}`` (a value given as a parameter is never written). Text the
model typed that cannot be stored safely is never written either: text holding part of a
secret's value, or, under ``CacheWritingSettings.redact_typed_text``, text that is no
parameter's value (the stricter of the run's setting and the file's own policy,
``metadata.redact_typed_text``, which the healed file keeps: :func:`redact_mode`).
Such a step stores ``{{secret:typed_<step>}}`` instead, a value the
replay's caller would have to give, so the heal is only ever a proposal, and says why
(:attr:`HealOutcome.reason`). The goal, parameters and recording cost of the
current file are kept. The old way from the hand-back step on is kept as a *variant* of the
new trajectory at that step (:attr:`~askcache.cachefile.format.CacheFile.variants`), so a screen
that alternates between the two states replays either way.

A healed file is parsed with the loader's checks before it is written: one that would not
load is never written. Then, by :class:`~askcache.foundation.settings.HealMode`: ``auto`` makes it
the current version
(:meth:`~askcache.storage.versions.TrajectoryVersions.commit`, crash-consistent: a process killed
during it leaves the old or the new trajectory; when another healer won the race, or another
process kept the trajectory locked, it becomes a proposal instead), ``propose`` keeps it as
a proposal, ``off`` writes nothing.
A run on a screen profile other than the recorded one (another screenshot size or display
scale) heals that profile's trajectory instead, fingerprinted on its own screens
(:mod:`askcache.heal.screen_profile`); a run at another density with no profile known (no computer
tool that knows the screen) writes nothing, since its fingerprints would mix two densities.
A run that failed, was cut off or cannot be verified never writes anything, and neither does
one whose healed trajectory would hold a step the model took with no screenshot before it
(it could never be checked).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, field_validator

from askcache.cachefile.format import CacheFile, TrajectoryVariant, dump_cache_file
from askcache.cachefile.parse import parse_cache_file
from askcache.cachefile.signing import SIGNING_KEY_ENV, parse_verified, sign_cache_file
from askcache.conversation.turns import ConversationResult
from askcache.fingerprint.step import decode_screenshot
from askcache.foundation.actions import ACTING_ACTIONS, parse_action
from askcache.foundation.errors import AskCacheError, CacheNotFoundError, SignatureLossRefusedError
from askcache.foundation.messages import ImageBlockParam, MessageParam, ToolUseBlockParam
from askcache.foundation.parameters import (
    SECRET_DESCRIPTION,
    SECRET_PREFIX,
    TypedTextRedaction,
    parameterize,
    placeholder,
    placeholders_in,
    secret_placeholders_in,
    stricter_redaction,
    unsafe_typed_text,
)
from askcache.foundation.redaction import register_secrets
from askcache.foundation.screen.thumbnails import ScreenStateConfig, Thumbnail
from askcache.foundation.settings import (
    CacheWritingSettings,
    HealMode,
    VisualMethod,
    check_cache_name,
)
from askcache.heal.screen_profile import into_profile, merge_profile, profile_display
from askcache.heal.start_screen import healed_start_state
from askcache.record.recording import CACHING_TOOL_NAMES, CacheManager, final_screenshot
from askcache.replay.plan import first_acting_step
from askcache.replay.session import ReplaySession
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.versions import VERSIONS_FOLDER, TrajectoryVersions

__all__ = [
    "MAX_VARIANTS_PER_STEP",
    "HealOutcome",
    "PreparedHeal",
    "apply_heal",
    "heal_trajectory",
    "keep_typed_text_safe",
    "prepare_heal",
    "redact_mode",
    "verify_run",
]

logger = logging.getLogger(__name__)

MAX_VARIANTS_PER_STEP = 3
"""Variants kept at one step of a trajectory; when a heal adds one more, the oldest goes."""

VerifiedBy = Literal["end_state", "model_completion"]


@dataclass(frozen=True)
class HealOutcome:
    """What a heal wrote."""

    event: Literal["healed", "proposed"]
    """``healed``: the new version is current; ``proposed``: kept for review."""
    version: str
    """Storage name of the version or proposal written (under ``.versions/``)."""
    healed_steps: list[int]
    """Indexes of the new trajectory's steps that came from the model."""
    verified_by: VerifiedBy
    """How the run was verified (see the module docstring)."""
    reason: str | None = None
    """Why a heal meant to make the new version current kept it as a proposal (typed text
    that could not be stored, another healer won the race, versions are off, it could not be
    signed where the trajectory is signed); ``None`` otherwise."""
    profile: str | None = None
    """The screen profile whose trajectory was written (:attr:`PreparedHeal.profile`);
    ``None``: the recorded trajectory."""


def verify_run(
    session: ReplaySession,
    outcome: ConversationResult,
    capture: Callable[[], Image.Image] | None,
) -> VerifiedBy | None:
    """How the run after a hand-back is verified, or ``None`` when it is not (see the module
    docstring)."""
    result = session.result
    messages = outcome.messages
    if result.handbacks == 0:
        return None
    if outcome.status != "done":
        logger.info("not verified: the conversation ended %s", outcome.status)
        return None
    model_calls = [
        call
        for m in messages
        if m.role == "assistant"
        for call in m.tool_uses
        if not call.replayed and not (call.toolset_name is None and call.name in CACHING_TOOL_NAMES)
    ]
    ids = {call.id for call in model_calls}
    if any(r.is_error for m in messages for r in m.tool_results if r.tool_use_id in ids):
        logger.info("not verified: a call the model made failed")
        return None
    if result.status == "completed":
        matched = result.end_state is not None and result.end_state.matched
        return "end_state" if matched else None
    if result.status != "handed_back":
        return None
    if not any(_acts(call) for call in model_calls):
        logger.info("not verified: the model did not act after the hand-back")
        return None
    verdict = session.end_state_verdict(messages)
    if verdict is not None and verdict.matched:
        return "end_state"
    if not _settled(messages, capture):
        logger.info("not verified: the final screen is not settled")
        return None
    return "model_completion"


def _settled(messages: list[MessageParam], capture: Callable[[], Image.Image] | None) -> bool:
    """True when the history's last screenshot was taken after the last action and, where the
    screen can be looked at, still shows it."""
    block = final_screenshot(messages)
    if block is None:
        return False
    last_call = max(
        (i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_uses), default=-1
    )
    holder = max(i for i, m in enumerate(messages) if m.role == "user" and _holds(m, block))
    if holder <= last_call:
        return False
    if capture is None:
        return True
    config = ScreenStateConfig()
    last = Thumbnail.of(decode_screenshot(block.source.data, "the last screenshot"), config)
    now = Thumbnail.of(capture(), config)
    differing = last.differing_tiles(now)
    if differing:
        logger.info("the screen still changes after the model's last action: tiles %s", differing)
    return not differing


def _holds(message: MessageParam, block: ImageBlockParam) -> bool:
    return any(
        item is block
        for result in message.tool_results
        if isinstance(result.content, list)
        for item in result.content
    )


def _secret_names(cache_file: CacheFile) -> set[str]:
    """The secret parameters of ``cache_file``: its ``{{secret:name}}`` placeholders (in the
    goal, the steps and the variants' steps) and the parameters it describes as secret."""
    steps = [
        *cache_file.trajectory,
        *(s for vs in cache_file.variants.values() for v in vs for s in v.steps),
    ]
    described = {
        name for name, text in cache_file.cache_parameters.items() if text.startswith(SECRET_PREFIX)
    }
    return described | secret_placeholders_in([cache_file.metadata.goal, *(s.input for s in steps)])


def _writing_settings(cache_file: CacheFile, values: dict[str, str]) -> CacheWritingSettings:
    """The settings that recorded ``cache_file``, as far as the file tells them; the run's
    values of its secret parameters are secret parameters again."""
    config = cache_file.metadata.visual_validation
    secret = _secret_names(cache_file)
    options: dict[str, object] = {
        "record_screen_state": cache_file.metadata.screen_state is not None,
        "parameters": {k: v for k, v in values.items() if v and k not in secret},
        "secret_parameters": {k: v for k, v in values.items() if v and k in secret},
    }
    if config is None:
        options["visual_verification_method"] = VisualMethod.NONE
    else:
        options.update(
            visual_verification_method=config.method,
            hash_size=config.hash_size,
            visual_validation_region_size=config.region_size,
            visual_validation_threshold=config.threshold,
            visual_validation_shift_tolerance=config.shift_tolerance,
            visual_validation_noise_floor=config.noise_floor,
            visual_validation_detail_region_size=(
                config.detail.region_size if config.detail else None
            ),
            visual_validation_tone=config.tone is not None,
            visual_validation_target=config.target is not None,
        )
        if config.detail is not None:
            options.update(
                visual_validation_detail_hash_size=config.detail.hash_size,
                visual_validation_detail_threshold=config.detail.threshold,
                visual_validation_detail_blur=config.detail.blur,
                visual_validation_detail_noise_floor=config.detail.noise_floor,
            )
        other = config.other_density
        options["visual_validation_other_density_threshold"] = (
            other.threshold if other is not None else None
        )
        if other is not None:
            options.update(
                visual_validation_other_density_region_size=other.region_size,
                visual_validation_other_density_blur=other.blur,
                visual_validation_other_density_noise_floor=other.noise_floor,
            )
        if config.tone is not None:
            options.update(
                visual_validation_tone_mean_tolerance=config.tone.mean_tolerance,
                visual_validation_tone_contrast_tolerance=config.tone.contrast_tolerance,
            )
        if config.target is not None:
            options.update(
                visual_validation_target_columns=config.target.columns,
                visual_validation_target_threshold=config.target.threshold,
            )
    return CacheWritingSettings(**options)


def healed_file(
    session: ReplaySession, messages: list[MessageParam]
) -> tuple[CacheFile, list[int]]:
    """The trajectory this run took (its replayed prefix and the model's continuation), and
    the indexes of the steps that came from the model."""
    old = session.file
    manager = CacheManager(
        _NoStorage(),
        _writing_settings(old, dict(session.parameter_values)),
        model=old.metadata.recording.model,
    )
    new = manager.build_cache_file(messages, session.seen)  # the screens each step saw
    learning = session.profile.learning  # every fingerprint from this profile's screens
    if not learning and new.metadata.coordinate_space == old.metadata.coordinate_space:
        new.trajectory = [_as_replayed(step, session) for step in new.trajectory]
    new.metadata.goal = old.metadata.goal
    new.metadata.recording = old.metadata.recording
    new.metadata.display_size = (
        profile_display(session.profile) if learning else old.metadata.display_size
    )
    new.cache_parameters = dict(old.cache_parameters)
    new.profiles = dict(old.profiles)  # the trajectories learned on other screens stay
    if not learning:
        new.metadata.start_state = healed_start_state(
            old, new.metadata.start_state, _first_step_replayed(session)
        )
    model_ids = {
        call.id
        for m in messages
        if m.role == "assistant"
        for call in m.tool_uses
        if not call.replayed
    }
    new.trajectory = [
        step
        for i, step in enumerate(new.trajectory)
        if not (
            step.id in model_ids
            and i > 0
            and _is_screenshot(step)
            and _is_screenshot(new.trajectory[i - 1])
        )
    ]
    healed = [i for i, step in enumerate(new.trajectory) if step.id in model_ids]
    if healed and not learning:  # the recorded way, at another density, is no way here
        _keep_old_way(old, new, _stopped_at(session), healed)
    return new, healed


def _as_replayed(step: ToolUseBlockParam, session: ReplaySession) -> ToolUseBlockParam:
    """A replayed step keeps the fingerprint and effect it was just checked against (the
    screenshot a replayed action returns is taken at once, not once the screen settled)."""
    replayed = session.emitted.get(step.id)
    if replayed is None:
        return step
    return step.model_copy(
        update={
            "visual_representation": replayed.visual_representation,
            "visual_detail": replayed.visual_detail,
            "visual_weak": replayed.visual_weak,
            "visual_other_density": replayed.visual_other_density,
            "effect": replayed.effect,
        }
    )


def _first_step_replayed(session: ReplaySession) -> bool:
    """Whether the file's first acting step ran in this run (the hand-back came later)."""
    first = first_acting_step(session.file.trajectory)
    stopped = _stopped_at(session)
    return first is not None and stopped is not None and stopped > first


def _stopped_at(session: ReplaySession) -> int | None:
    """The step of the file the replay first handed back at."""
    steps = session.result.handback_steps
    return steps[0] if steps else session.result.stopped_at_step


def _keep_old_way(old: CacheFile, new: CacheFile, stopped: int | None, healed: list[int]) -> None:
    """The old trajectory from the step the replay stopped at becomes a variant of the new
    one at the model's first acting step; variants of the old trajectory before that step,
    and those at it that ran to the end, are kept (at most :data:`MAX_VARIANTS_PER_STEP`)."""
    acting = [i for i in healed if _acts(new.trajectory[i])]
    if stopped is None or stopped >= len(old.trajectory) or not acting:
        return
    first = acting[0]
    rest_old, rest_new = len(old.trajectory) - stopped, len(new.trajectory) - first
    variants = {i: list(v) for i, v in old.variants.items() if i < min(stopped, first)}
    earlier = [
        v.model_copy(update={"replaces": rest_new})
        for v in old.variants.get(stopped, [])
        if v.replaces == rest_old
    ]
    old_way = TrajectoryVariant(
        steps=old.trajectory[stopped:], replaces=rest_new, end_state=old.metadata.end_state
    )
    variants[first] = [*earlier, old_way][-MAX_VARIANTS_PER_STEP:]
    new.variants = variants


def redact_mode(cache_file: CacheFile, given: TypedTextRedaction) -> TypedTextRedaction:
    """The ``redact_typed_text`` a heal of ``cache_file`` applies: the strictest of ``given``
    (the run's), the file's own policy (``metadata.redact_typed_text``; ``None`` in a file
    written before it was stored) and, when the file already holds typed text stored as a
    secret (``{{secret:typed_<step>}}``: it was recorded with redaction on, or typed part
    of a secret), ``password_like``."""
    typed = any(name.startswith("typed_") for name in _secret_names(cache_file))
    inferred: TypedTextRedaction | None = "password_like" if typed else None
    return stricter_redaction(given, cache_file.metadata.redact_typed_text, inferred)


def keep_typed_text_safe(
    new: CacheFile,
    healed: list[int],
    session: ReplaySession,
    mode: str,
    messages: list[MessageParam],
) -> list[str]:
    """Make sure no text the model typed in ``healed`` steps is written when it cannot be
    stored safely (:func:`~askcache.foundation.parameters.unsafe_typed_text`, on the text as typed
    in ``messages``): such a step stores ``{{secret:typed_<step>}}`` instead, under a name the
    file does not use yet, and the text is registered for redaction. Returns why, one
    sentence per such step (empty: every typed text is stored safely)."""
    values = session.parameter_values
    secret = _secret_names(session.file)
    secrets = {k: v for k, v in values.items() if v and k in secret}
    params = {k: v for k, v in values.items() if v and k not in secret}
    typed = {
        call.id: call.input.get("text")
        for m in messages
        if m.role == "assistant"
        for call in m.tool_uses
    }
    taken = (
        set(new.cache_parameters)
        | _secret_names(new)
        | placeholders_in([new.metadata.goal, *(step.input for step in new.trajectory)])
    )
    reasons = []
    for index in healed:
        step = new.trajectory[index]
        action = parse_action(step)
        text = typed.get(step.id)
        if action is None or action.name != "type" or not isinstance(text, str):
            continue
        why = unsafe_typed_text(parameterize(text, params, secrets), secrets, mode)
        if why is None:
            continue
        name, suffix = f"typed_{index}", 1
        while name in taken:  # a name the file already uses for another value
            suffix += 1
            name = f"typed_{index}_{suffix}"
        taken.add(name)
        register_secrets({name: text})
        stored = placeholder(name, secret=True)
        new.trajectory[index] = step.model_copy(update={"input": {**step.input, "text": stored}})
        new.cache_parameters[name] = SECRET_DESCRIPTION
        reasons.append(
            f"step {index}: the model typed {why}; the proposal stores {stored} instead, a "
            "value a replay would have to be given"
        )
    return reasons


def _is_screenshot(step: ToolUseBlockParam) -> bool:
    """A screenshot right after another adds nothing to a replay: the model's first look
    after a hand-back is dropped from the healed trajectory."""
    action = parse_action(step)
    return action is not None and action.name == "screenshot"


def _acts(step: ToolUseBlockParam) -> bool:
    action = parse_action(step)
    return action is not None and action.name in ACTING_ACTIONS


class PreparedHeal(BaseModel):
    """A heal ready to be written: what :func:`apply_heal` needs, and all of it, so that a
    heal the storage could not take waits in the outbox (:mod:`askcache.storage.outbox`) and is
    written later exactly as it would have been."""

    model_config = ConfigDict(
        extra="forbid",
        use_attribute_docstrings=True,
        ser_json_bytes="base64",
        val_json_bytes="base64",
    )

    name: str
    """The trajectory healed."""
    base: bytes
    """Its bytes as the replay read them (the heal is made from them)."""
    new: bytes
    """The healed trajectory's bytes (signed when a signing key is set)."""
    mode: Literal["auto", "propose"]
    """``auto``: made the current version unless :attr:`reason` says why not or the file
    changed since ``base`` was read; ``propose``: kept for review."""
    reason: str | None = None
    """Why a heal under ``auto`` must be a proposal (typed text that could not be stored,
    versions are off); ``None``: nothing stands in the way."""
    keep: int = Field(ge=0)
    """Versions kept (0: versions are off)."""
    healed_steps: list[int]
    """Indexes of the new trajectory's steps that came from the model."""
    verified_by: VerifiedBy
    """How the run was verified."""
    proposal: str
    """The storage name the heal takes if it becomes a proposal (fixed in advance, so that
    writing it again makes no second proposal)."""
    profile: str | None = None
    """The screen profile whose trajectory the heal writes (learned now, or healed again;
    :mod:`askcache.heal.screen_profile`); ``None``: the recorded trajectory."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return check_cache_name(value)

    @field_validator("proposal")
    @classmethod
    def _check_proposal(cls, value: str) -> str:
        if not value.startswith(f"{VERSIONS_FOLDER}/") or ".." in value.split("/"):
            raise ValueError(f"must be a name under {VERSIONS_FOLDER}/")
        return value


def prepare_heal(
    *,
    storage: CacheStorage,
    name: str,
    base: bytes,
    session: ReplaySession,
    outcome: ConversationResult,
    mode: HealMode,
    keep: int,
    capture: Callable[[], Image.Image] | None,
    redact_typed_text: TypedTextRedaction = "off",
) -> PreparedHeal | None:
    """The heal of ``name`` after this run, when the mode allows it and the run is verified
    (see the module docstring); ``None`` when there is nothing to write. Writes nothing
    (``storage`` names the file in messages). ``base`` is the file's bytes as the replay read
    them; ``redact_typed_text`` is the caller's
    :attr:`~askcache.foundation.settings.CacheWritingSettings.redact_typed_text`
    (:func:`redact_mode`).

    Raises:
        CacheSignatureError: ``base`` does not verify as loading requires, or, when a
            signing key is set (the healed version would be signed), does not verify at all.
    """
    if mode == HealMode.OFF or session.result.handbacks == 0:
        return None
    if session.other_density_seen and session.profile.key is None:
        logger.info(
            "%s not healed: the run was on a screen drawn at another pixel density (the "
            "healed steps' fingerprints would not match the recorded ones' density)",
            name,
        )
        return None
    if session.moved_seen and not session.profile.learning:  # learning: built anew
        logger.info(
            "%s not healed: steps of the run were replayed where their window had moved "
            "(the healed steps would mix the recorded layout with this screen's)",
            name,
        )
        return None
    verified = verify_run(session, outcome, capture)
    if verified is None:
        logger.info("%s not healed: the run after the hand-back is not verified", name)
        return None
    new, steps = healed_file(session, outcome.messages)
    if not steps:
        return None
    blind = [
        i
        for i in steps
        if _acts(new.trajectory[i]) and new.trajectory[i].visual_representation is None
    ]
    if new.metadata.visual_validation is not None and blind:
        logger.info("%s not healed: steps %s acted with no screenshot before them", name, blind)
        return None
    # the file healed from is checked as loading checks it, and always when the healed
    # version is signed: a heal never signs content whose signature did not verify
    parse_verified(
        base, storage.describe(name), required=session.settings.require_signature, resign=True
    )
    redaction = redact_mode(session.file, redact_typed_text)
    unsafe = keep_typed_text_safe(new, steps, session, redaction, outcome.messages)
    profile = None
    if session.profile.key is not None:  # kept as this screen profile's trajectory
        new, profile = into_profile(base, name, new)
    new.metadata.redact_typed_text = redaction  # the policy travels on with the file
    data = healed_bytes(new, base, storage.describe(name))
    try:
        parse_cache_file(data, name)  # a healed file always loads
    except AskCacheError as exc:
        logger.warning("%s not healed: the healed file would not load: %s", name, exc)
        return None
    reason = "; ".join(unsafe) or None
    if keep == 0:  # versions off: the file is never replaced
        reason = reason or "versions are off (keep_versions=0)"
    return PreparedHeal(
        name=name,
        base=base,
        new=data,
        mode="auto" if mode == HealMode.AUTO else "propose",
        reason=reason,
        keep=keep,
        healed_steps=steps,
        verified_by=verified,
        proposal=TrajectoryVersions(_NoStorage(), name).proposal_name(),
        profile=profile,
    )


def apply_heal(storage: CacheStorage, heal: PreparedHeal, *, again: bool = False) -> HealOutcome:
    """Write a prepared heal: under ``auto`` the new current version (a proposal when
    ``heal.reason`` says so, or when the file changed since ``heal.base`` was read: another
    healer, a re-recording), under ``propose`` a proposal.

    ``again``: the heal may have been written before (sent again from the outbox after a
    crash or an outage in the middle of it); a version or proposal that already holds it is
    reported instead of writing a second one (a commit cut off in the middle is completed
    or rolled back first, :meth:`~askcache.storage.versions.TrajectoryVersions.recover`).
    """
    versions = TrajectoryVersions(storage, heal.name, keep=heal.keep)
    if again:
        done = _written_before(storage, versions, heal)
        if done is not None:
            return done
    reason = heal.reason
    if heal.mode == "auto" and reason is None:
        try:
            number = versions.commit(heal.base, heal.new)
            if number is None and heal.profile is not None:
                number = _commit_profile_again(storage, versions, heal)
        except SignatureLossRefusedError as exc:  # made where no signing key is set
            number, reason = None, _unsigned_reason(exc, heal.proposal)
        if number is not None:
            logger.warning(
                "%s healed: version %d (steps %s from the model)",
                heal.name,
                number,
                heal.healed_steps,
            )
            return _outcome("healed", versions.version_name(number), heal)
        reason = reason or versions.refused or "the trajectory changed while this run healed it"
    if heal.mode == "auto":
        logger.warning("%s: the heal is a proposal: %s", heal.name, reason)
    proposal = versions.propose(heal.new, name=heal.proposal)
    return _outcome("proposed", proposal, heal, reason)


def _unsigned_reason(exc: SignatureLossRefusedError, proposal: str) -> str:
    """Why a heal that could not be signed is a proposal, and how it becomes current: the
    commands name this proposal, so that the one reviewed is the one signed and accepted
    (the newest proposal may be another by then)."""
    label = proposal.rsplit("/", 1)[-1]
    return (
        f"{exc.reason}; the heal is kept unsigned as a proposal: review it (askcache diff "
        f"{exc.name} current {label}) and, where {SIGNING_KEY_ENV} is set, sign it "
        f"(askcache sign {exc.name} --proposal {label}) and accept it (askcache accept "
        f"{exc.name} {label})"
    )


def _commit_profile_again(
    storage: CacheStorage, versions: TrajectoryVersions, heal: PreparedHeal
) -> int | None:
    """A heal of a screen profile that lost the race to another heal (another machine
    learning another profile) made again on the file as it is now and committed, once
    (:func:`~askcache.heal.screen_profile.merge_profile`); ``None``: it cannot be (a proposal)."""
    assert heal.profile is not None
    try:
        current = storage.read(heal.name)
        merged = merge_profile(
            current, heal.base, heal.new, storage.describe(heal.name), heal.profile
        )
    except AskCacheError as exc:
        logger.info("%s: the heal of profile %s not made again: %s", heal.name, heal.profile, exc)
        return None
    if merged is None:
        return None
    logger.info(
        "%s: the heal of profile %s made again on the current file", heal.name, heal.profile
    )
    return versions.commit(current, healed_bytes(merged, current, storage.describe(heal.name)))


def _written_before(
    storage: CacheStorage, versions: TrajectoryVersions, heal: PreparedHeal
) -> HealOutcome | None:
    """What an earlier attempt at ``heal`` wrote, if it wrote it (``None``: nothing)."""
    if storage.exists(heal.proposal):
        return _outcome("proposed", heal.proposal, heal, heal.reason)
    if heal.mode != "auto" or heal.reason is not None:
        return None
    versions.recover()  # a commit cut off in the middle is completed or rolled back first
    number = versions.holding(heal.new)
    if number is None:
        return None
    try:
        if storage.read(heal.name) == heal.base:  # kept as a version, never made current
            return None
    except CacheNotFoundError:
        pass
    return _outcome("healed", versions.version_name(number), heal)


def _outcome(
    event: Literal["healed", "proposed"],
    version: str,
    heal: PreparedHeal,
    reason: str | None = None,
) -> HealOutcome:
    return HealOutcome(
        event, version, list(heal.healed_steps), heal.verified_by, reason, heal.profile
    )


def heal_trajectory(
    *,
    storage: CacheStorage,
    name: str,
    base: bytes,
    session: ReplaySession,
    outcome: ConversationResult,
    mode: HealMode,
    keep: int,
    capture: Callable[[], Image.Image] | None,
    redact_typed_text: TypedTextRedaction = "off",
) -> HealOutcome | None:
    """Heal ``name`` after this run when the mode allows it and the run is verified (see the
    module docstring); ``None`` when nothing was written: :func:`prepare_heal`, then
    :func:`apply_heal`.

    Raises:
        CacheSignatureError: as :func:`prepare_heal`; nothing is written.
    """
    heal = prepare_heal(
        storage=storage,
        name=name,
        base=base,
        session=session,
        outcome=outcome,
        mode=mode,
        keep=keep,
        capture=capture,
        redact_typed_text=redact_typed_text,
    )
    return None if heal is None else apply_heal(storage, heal)


def healed_bytes(
    cache_file: CacheFile, base: CacheFile | bytes | None = None, name: str | None = None
) -> bytes:
    """The bytes a changed version (healed, tuned) is stored as: signed with the signing key
    when one is set (:mod:`askcache.cachefile.signing`), before it is written anywhere, as long
    as ``base``, the version it was made from, verifies
    (:func:`~askcache.cachefile.signing.sign_cache_file`); without a key, a signature the file
    carried is removed (it signed the old content and would not verify). Such an unsigned
    version never replaces a signed trajectory: the commit refuses it
    (:meth:`~askcache.storage.versions.TrajectoryVersions.commit`) and a heal keeps it as a
    proposal.

    Raises:
        CacheSignatureError: ``base`` (by default ``cache_file`` itself) is signed and does
            not verify; nothing is signed.
    """
    if not sign_cache_file(cache_file, base=base, name=name):
        cache_file.signature = None
    return dump_cache_file(cache_file)


class _NoStorage(CacheStorage):
    """A storage that must not be used: building a file writes nothing."""

    def _refuse(self, *_: object) -> None:
        raise AssertionError("building a healed trajectory must not touch storage")

    def read(self, name: str) -> bytes:
        raise AssertionError(name)

    def write(self, name: str, data: bytes) -> None:
        self._refuse(name)

    def create(self, name: str, data: bytes) -> None:
        self._refuse(name)

    def list_names(self) -> list[str]:
        return []

    def list_prefix(self, prefix: str) -> list[str]:
        return []

    def exists(self, name: str) -> bool:
        return False

    def describe(self, name: str) -> str:
        return name
