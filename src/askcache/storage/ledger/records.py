"""A run-ledger entry: :class:`RunRecord`, one replay, heal or invalidation of one trajectory,
and the names its fields use (:data:`RunStatus`, :data:`RunEvent`, :data:`FailedCheck`,
:class:`RejoinDecision`). Every engine (:mod:`askcache.storage.ledger`) stores these.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from askcache.foundation.reasons import HandBackCode
from askcache.foundation.redaction import redact
from askcache.foundation.usage import Usage

__all__ = [
    "FailedCheck",
    "RejoinCondition",
    "RejoinDecision",
    "RunEvent",
    "RunRecord",
    "RunStatus",
    "newest_records",
]

RunStatus = Literal[
    "completed",
    "completed_unverified",
    "handed_back",
    "interrupted",
    "refused",
    "imported",
    "healed",
    "proposed",
]
"""``completed``: every step ran and the end state matched the recording;
``completed_unverified``: every step ran but the end state could not be confirmed;
``handed_back``: the replay stopped and the model took over; ``interrupted``: the
conversation ended (turn limit) while the replay was still running; ``refused``: the file was not
replayed (invalidated, unusable); ``imported``: the replay counts a version 1 or 2 file kept
inside itself, moved here on first use; ``healed`` / ``proposed``: a heal entry (see
:data:`RunEvent`)."""

RunEvent = Literal["replay", "invalidated", "imported", "healed", "proposed"]
"""What the entry records: a ``replay``; the file marked ``invalidated``; counts
``imported`` from an old file; the trajectory ``healed`` (a new current version written
after a verified hand-back) or a healed version ``proposed`` for review."""


FailedCheck = Literal["fingerprint", "effect", "end_state"]
"""The check that made the replay hand back: ``fingerprint``, the stopped step's check before
acting (its fingerprint, the area it changes; also a screen that could not be read for it);
``effect``, the step ran and its recorded effect did not appear (or its tool failed, or its
effect could not be checked); ``end_state``, the final screen."""


RejoinCondition = Literal["model_acted", "model_continues", "screen"]
"""The re-join conditions (see :mod:`askcache.replay.rejoin`): (a), (c), (b)."""


class RejoinDecision(BaseModel):
    """One time a suspended replay considered taking over again, and what it decided."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    step_index: int
    """The step it would resume at."""
    failed_check: FailedCheck
    """The check that made it hand back (see :data:`FailedCheck`)."""
    rejoined: bool
    """True: it took over again at ``step_index``."""
    refused_by: RejoinCondition | None = None
    """The first condition that did not hold (``None`` when it re-joined)."""
    reason: str
    """Why, in words. Registered secrets are redacted from it whenever it is serialized
    (:func:`~askcache.foundation.redaction.redact`)."""
    requested: bool = False
    """True when the model asked for it (``resume_cached_trajectory``)."""
    after_message: int = 0
    """How many messages the conversation held when it was decided."""

    @field_serializer("reason")
    def _redact_reason(self, reason: str) -> str:
        return redact(reason)

    def describe(self) -> str:
        """One line for logs and reports."""
        how = "re-joined" if self.rejoined else f"refused ({self.refused_by})"
        asked = ", asked by the model" if self.requested else ""
        return f"at step {self.step_index}{asked}: {how}: {self.reason}"


def _now() -> datetime:
    return datetime.now(UTC)


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container's unnamed uid)
        return None


class RunRecord(BaseModel):
    """One replay of one trajectory, as the ledger keeps it."""

    # built when first used, not when imported: the commands that read summaries alone
    # (stats, dashboard) never validate an entry
    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True, defer_build=True)

    trajectory: str
    """Name of the cache file."""
    event: RunEvent = "replay"
    """What happened."""
    status: RunStatus
    """How the replay ended (see :data:`RunStatus`)."""
    started_at: datetime = Field(default_factory=_now)
    """When the replay started (UTC)."""
    seconds: float = 0.0
    """Wall time of the replay, hand-back included."""
    steps_total: int = 0
    """Steps in the trajectory."""
    steps_run: int = 0
    """Steps the replay executed."""
    start_step: int = 0
    """Index of the first replayed step."""
    stopped_at_step: int | None = None
    """Index of the step that was not executed (or whose effect failed), when handed back."""
    reason: str | None = None
    """Why it stopped or was not confirmed. Registered secrets are redacted from it whenever
    the entry is serialized, wherever it is written (:func:`~askcache.foundation.redaction.redact`;
    the other fields are names, numbers and statuses askcache sets)."""
    reason_code: HandBackCode | None = None
    """The kind of :attr:`reason` when the replay handed back, one of a closed set
    (:data:`~askcache.foundation.reasons.HandBackCode`): group entries by it, not by the text.
    ``None``: it did not hand back, or the entry was written before codes."""
    rejoins: int = 0
    """Times the replay took over again after the model had put the screen back."""
    rejoin_decisions: list[RejoinDecision] = Field(default_factory=list)
    """Each time, after a hand-back, the replay considered taking over again: re-joined or
    refused, and why (:mod:`askcache.replay.rejoin`)."""
    model_calls: int = 0
    """Model calls made during this run (after hand-backs)."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens of those calls."""
    saved_model_calls: int = 0
    """Estimate of the model calls the replay saved: the recording's calls, in proportion to
    the steps replayed, less the calls this run made."""
    saved_tokens: int = 0
    """The same estimate for tokens."""
    saved_seconds: float | None = None
    """The recording's wall time in proportion to the steps replayed, less this run's time;
    ``None`` when the recording's time is unknown."""
    model: str | None = None
    """Model the recording used (its price applies to the savings)."""
    host: str = Field(default_factory=socket.gethostname)
    """Machine that ran the replay."""
    pid: int = Field(default_factory=os.getpid)
    """Process that ran the replay."""
    successes: int = 0
    """With ``event="imported"``: the replays the old file counted as successful."""
    attempts: int = 0
    """With ``event="imported"``: the replays the old file counted."""
    user: str | None = Field(default_factory=_user)
    """Who ran it (the login name, when known)."""
    profile: str | None = None
    """The screen profile the run was on (``1280x800@2x``: the screenshot size and the
    display's scale, :class:`~askcache.foundation.scaling.ScreenProfile`); with ``event="healed"``
    or ``"proposed"``, the learned profile whose trajectory was written. ``None``: not known,
    or (for a heal) the recorded trajectory (entries written before this field)."""
    healed_steps: list[int] = Field(default_factory=list)
    """With ``event="healed"`` or ``"proposed"``: indexes of the new trajectory's steps that
    came from the model (the rest were replayed as recorded)."""
    version: str | None = None
    """With ``event="healed"`` or ``"proposed"``: the version or proposal written, a name
    under ``.versions/``."""
    verified_by: str | None = None
    """With ``event="healed"`` or ``"proposed"``: how the run was verified (``end_state``:
    the final screen matched the recorded one; ``model_completion``: the model finished,
    every call it made succeeded, and the final screen was settled)."""
    loosened: list[str] = Field(default_factory=list)
    """With ``event="replay"``: every way the replay checked less than its file asks, one short
    line each naming the setting, the file's value, this run's and who asked
    (``visual_validation_threshold 2 -> 6 (model)``, ``skip_visual_validation False -> True
    (settings)``; :class:`~askcache.replay.check_policy.CheckPolicy` decides them). Empty: none
    (and in entries written before this field)."""
    steps_digest: str | None = None
    """With ``event="replay"``: the digest of the steps this replay ran
    (:func:`~askcache.storage.ledger.waits.steps_digest`: the trajectory of its screen
    profile, before parameters were filled in), so that :attr:`step_waits` are compared
    only with runs of the same steps (a heal, a rollback, a new recording change it).
    ``None``: written before askcache kept step waits; such an entry gives no waits."""
    step_waits: dict[int, float] = Field(default_factory=dict)
    """With ``event="replay"``: step index -> seconds the step waited for the screen, for
    each checked step that acted, rounded to milliseconds: its
    :attr:`~askcache.replay.result.StepRecord.waited_seconds` (until its check passed on a
    still screen). A step that handed back (its check failed, or
    its effect did not appear) gives none: its wait says how long the replay gave up after,
    not how long the screen took (:mod:`askcache.storage.ledger.waits`)."""
    step_deciders: dict[int, str] = Field(default_factory=dict)
    """With ``event="replay"``: step index -> what decided it, for each step recorded with its
    element (:attr:`~askcache.replay.result.StepRecord.decided_by`: ``pixels+element``,
    ``element`` when the element refused a step its pixels passed, ``element+look`` when a
    re-drawn screen was acted on by the element's word). Empty: no step recorded its element
    (and in entries written before this field)."""

    @field_serializer("reason")
    def _redact_reason(self, reason: str | None) -> str | None:
        return None if reason is None else redact(reason)


def newest_records(
    found: Iterable[RunRecord], since: datetime | None, limit: int | None
) -> list[RunRecord]:
    """``found`` as :meth:`~askcache.storage.ledger.engine.RunLedger.records` returns them:
    those started at or after ``since``, oldest first; with ``limit``, the newest ``limit``."""
    kept = [r for r in found if since is None or r.started_at >= since]
    kept.sort(key=lambda record: record.started_at)
    return kept if limit is None else kept[max(len(kept) - limit, 0) :]
