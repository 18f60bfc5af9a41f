"""A trajectory's summary: what its ledger entries add up to, the ONE definition of the aggregates.

Every engine keeps one :class:`TrajectorySummary` per trajectory, updated with :func:`fold` in the
same transaction that stores an entry, so ``askcache stats``, ``list`` and the hand-back check
read it in O(1) instead of scanning the runs. Summaries are kept for ever; raw entries only for
the retention period (``CachingSettings.ledger_retention_days``).

:func:`merge` joins the summaries of two consecutive stretches of entries (the earlier first),
so an engine can fold entries in parts (the S3 segments, a migration) and add them up.
Both are pure: they return a new summary and never change their arguments.

A summary also keeps the figures a fleet page reads (per day, per hot spot, per screen
profile, the latest heals: :mod:`askcache.storage.ledger.day_totals`), folded the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from askcache.foundation.usage import Usage
from askcache.storage.ledger.day_totals import (
    DayTotals,
    EventNote,
    ProfileTotals,
    fold_extras,
    merge_extras_into,
)
from askcache.storage.ledger.records import RunRecord

__all__ = ["ModelTotals", "TrajectorySummary", "fold", "fold_all", "merge"]


class ModelTotals(BaseModel):
    """One model's replay totals, kept apart so dollars (``price.cost(usage)`` and
    ``price.saved(saved_tokens)``, both linear) stay exact whatever the price table says."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    usage: Usage = Field(default_factory=Usage)
    """Tokens spent after hand-backs (the sum of the replays' :attr:`RunRecord.usage`)."""
    saved_tokens: int = 0
    """Tokens the replays saved (estimate)."""
    runs: int = 0
    """Replays."""


class TrajectorySummary(BaseModel):
    """What one trajectory's ledger entries add up to (see the module docstring). Counts of
    statuses and spending count ``replay`` entries only; a heal entry repeats the calls of the
    replay it followed and is counted in :attr:`heals` alone."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    trajectory: str
    """Name of the cache file."""
    entries: int = 0
    """Entries folded, of every event."""
    runs: int = 0
    """Replays (``event == "replay"``)."""
    completed: int = 0
    """Replays with status ``completed``."""
    completed_unverified: int = 0
    """Replays with status ``completed_unverified``."""
    handed_back: int = 0
    """Replays with status ``handed_back``."""
    refused: int = 0
    """Replays with status ``refused``."""
    interrupted: int = 0
    """Replays with status ``interrupted``."""
    heals: int = 0
    """``healed`` entries."""
    proposals: int = 0
    """``proposed`` entries."""
    invalidations: int = 0
    """``invalidated`` entries."""
    imported: bool = False
    """An ``imported`` entry exists (an old file's counts were moved in)."""
    imported_attempts: int = 0
    """The replays the imported entries counted."""
    imported_successes: int = 0
    """The successful replays they counted."""
    model_calls: int = 0
    """Model calls made during replays (after hand-backs)."""
    saved_model_calls: int = 0
    """Model calls the replays saved (estimate)."""
    saved_tokens: int = 0
    """Tokens the replays saved (estimate)."""
    saved_seconds: float = 0.0
    """Seconds saved, over the replays whose ``saved_seconds`` is known."""
    by_model: dict[str, ModelTotals] = Field(default_factory=dict)
    """Replay totals per recording model (``""``: unknown), for dollars."""
    failure_streak: int = 0
    """Replays in a row, the latest ones, that handed back at one step (a heal ends it)."""
    failure_step: int | None = None
    """That step (``None`` without a streak)."""
    streak_reset: bool = False
    """True once an entry ended or restarted a streak (a heal, a replay that did not hand
    back, a hand-back at another step); :func:`merge` then keeps the later part's streak."""
    first_at: datetime | None = None
    """The earliest ``started_at`` folded."""
    last_at: datetime | None = None
    """The latest ``started_at`` folded."""
    days: dict[str, DayTotals] = Field(default_factory=dict)
    """Per UTC day (``YYYY-MM-DD``) of ``started_at``: that day's entries added up
    (:mod:`~askcache.storage.ledger.day_totals`). Empty for entries folded by an askcache
    before per-day figures (schema version 3)."""
    hand_backs: dict[str, int] = Field(default_factory=dict)
    """Hand-backs per hot spot, ``step|reason code|screen profile``
    (:func:`~askcache.storage.ledger.day_totals.spot_key`; an empty part: not known)."""
    profiles: dict[str, ProfileTotals] = Field(default_factory=dict)
    """Replays per screen profile (``""``: not known)."""
    recent: list[EventNote] = Field(default_factory=list)
    """The latest heals, proposals and invalidations, oldest first
    (:data:`~askcache.storage.ledger.day_totals.RECENT_EVENTS` at most)."""

    @property
    def tokens(self) -> int:
        """Tokens spent during replays, every model."""
        return sum(totals.usage.total_tokens for totals in self.by_model.values())


def fold(summary: TrajectorySummary, record: RunRecord) -> TrajectorySummary:
    """``summary`` with ``record`` (an entry of the same trajectory, stored after the others)
    added."""
    return fold_all(summary, [record])


def fold_all(
    summary: TrajectorySummary, records: Iterable[RunRecord], *, in_place: bool = False
) -> TrajectorySummary:
    """``summary`` with ``records`` added in order (one copy however many there are;
    ``in_place``: none, ``summary`` itself changes, for an engine that owns a fresh copy)."""
    result = summary if in_place else summary.model_copy(deep=True)
    for record in records:
        _fold_into(result, record)
    return result


def _fold_into(s: TrajectorySummary, record: RunRecord) -> None:
    s.entries += 1
    when = record.started_at
    s.first_at = _earliest(s.first_at, when)
    s.last_at = _latest(s.last_at, when)
    fold_extras(s, record)
    if record.event == "replay":
        _fold_replay(s, record)
    elif record.event == "healed":
        s.heals += 1
        _reset_streak(s)
    elif record.event == "proposed":
        s.proposals += 1
    elif record.event == "invalidated":
        s.invalidations += 1
    elif record.event == "imported":
        s.imported = True
        s.imported_attempts += record.attempts
        s.imported_successes += record.successes


def _fold_replay(s: TrajectorySummary, record: RunRecord) -> None:
    s.runs += 1
    status = record.status
    s.completed += status == "completed"
    s.completed_unverified += status == "completed_unverified"
    s.handed_back += status == "handed_back"
    s.refused += status == "refused"
    s.interrupted += status == "interrupted"
    s.model_calls += record.model_calls
    s.saved_model_calls += record.saved_model_calls
    s.saved_tokens += record.saved_tokens
    s.saved_seconds += record.saved_seconds or 0.0
    totals = s.by_model.setdefault(record.model or "", ModelTotals())
    totals.usage = totals.usage + record.usage
    totals.saved_tokens += record.saved_tokens
    totals.runs += 1
    if status != "handed_back":
        _reset_streak(s)
    elif s.failure_streak > 0 and s.failure_step == record.stopped_at_step:
        s.failure_streak += 1
    else:
        s.streak_reset = s.streak_reset or s.failure_streak > 0
        s.failure_streak, s.failure_step = 1, record.stopped_at_step


def _reset_streak(s: TrajectorySummary) -> None:
    s.failure_streak, s.failure_step, s.streak_reset = 0, None, True


def merge(a: TrajectorySummary, b: TrajectorySummary) -> TrajectorySummary:
    """The summary of ``a``'s entries followed by ``b``'s (of the same trajectory): counts
    add; the streak is ``b``'s, continued from ``a``'s when ``b`` never ended one."""
    s = a.model_copy(deep=True)
    for name in _COUNTS:
        setattr(s, name, getattr(a, name) + getattr(b, name))
    s.imported = a.imported or b.imported
    for model, totals in b.by_model.items():
        mine = s.by_model.setdefault(model, ModelTotals())
        mine.usage = mine.usage + totals.usage
        mine.saved_tokens += totals.saved_tokens
        mine.runs += totals.runs
    s.first_at = _earliest(a.first_at, b.first_at)
    s.last_at = _latest(a.last_at, b.last_at)
    merge_extras_into(s, b)
    if b.streak_reset:
        s.failure_streak, s.failure_step, s.streak_reset = b.failure_streak, b.failure_step, True
    elif b.failure_streak > 0:
        continues = a.failure_streak > 0 and a.failure_step == b.failure_step
        s.failure_streak = b.failure_streak + (a.failure_streak if continues else 0)
        s.failure_step = b.failure_step
        s.streak_reset = a.streak_reset or (a.failure_streak > 0 and not continues)
    return s


_COUNTS = (
    "entries",
    "runs",
    "completed",
    "completed_unverified",
    "handed_back",
    "refused",
    "interrupted",
    "heals",
    "proposals",
    "invalidations",
    "imported_attempts",
    "imported_successes",
    "model_calls",
    "saved_model_calls",
    "saved_tokens",
    "saved_seconds",
)


def _earliest(x: datetime | None, y: datetime | None) -> datetime | None:
    return x if y is None else y if x is None else min(x, y)


def _latest(x: datetime | None, y: datetime | None) -> datetime | None:
    return x if y is None else y if x is None else max(x, y)
