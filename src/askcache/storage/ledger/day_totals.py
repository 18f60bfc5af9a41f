"""The parts of a :class:`~askcache.storage.ledger.summary.TrajectorySummary` a fleet page reads:
per-day totals, hand-back hot spots, screen profiles and the latest heals, proposals and
invalidations.

They are folded with the rest of the summary, in the same transaction that stores an entry
(:func:`fold_extras`), and kept as long as it is: the retention drops raw entries, never
these, so a day's figures never change once its entries are pruned. Each is bounded by what
it is keyed by (days with entries, steps x codes x profiles, profiles, :data:`RECENT_EVENTS`),
never by the number of runs, so reading every trajectory's stays O(trajectories).

A day is the UTC date of an entry's ``started_at`` (an entry sent late from the outbox counts
on the day it ran).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from askcache.foundation.reasons import HandBackCode
from askcache.foundation.usage import Usage
from askcache.storage.ledger.records import RunEvent, RunRecord

__all__ = [
    "DAY_COUNTS",
    "MODEL_FIGURES",
    "RECENT_EVENTS",
    "DayTotals",
    "EventNote",
    "ProfileTotals",
    "day_of",
    "fold_extras",
    "merge_extras_into",
    "spot_key",
    "spot_parts",
]

MODEL_FIGURES = ("input", "output", "cache_write", "cache_read", "saved")
"""The numbers :attr:`DayTotals.models` keeps per model, in order: tokens spent (input,
output, prompt-cache writes and reads) and tokens saved."""

RECENT_EVENTS = 5
"""Heals, proposals and invalidations a summary keeps the notes of (the latest)."""


DAY_COUNTS = (
    "runs",
    "completed",
    "handed_back",
    "refused",
    "model_calls",
    "saved_model_calls",
    "saved_tokens",
    "saved_seconds",
    "heals",
    "proposals",
    "invalidations",
)
"""The figures of :class:`DayTotals` that add up as numbers."""


class DayTotals(BaseModel):
    """One UTC day's entries of one trajectory, added up (replays as in the summary)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    runs: int = 0
    """Replays."""
    completed: int = 0
    """Replays with status ``completed`` or ``completed_unverified`` (hits)."""
    handed_back: int = 0
    """Replays that handed back."""
    refused: int = 0
    """Replays refused."""
    model_calls: int = 0
    """Model calls made during replays."""
    saved_model_calls: int = 0
    """Model calls saved (estimate)."""
    saved_tokens: int = 0
    """Tokens saved (estimate)."""
    saved_seconds: float = 0.0
    """Seconds saved, over the replays whose recording time is known."""
    models: dict[str, list[int]] = Field(default_factory=dict)
    """Per recording model (``""``: unknown), for dollars: the tokens spent (input, output,
    prompt-cache writes, prompt-cache reads) and the tokens saved, five numbers
    (:data:`MODEL_FIGURES`; plain numbers, not models: a summary keeps a bucket per day, and
    reading a fleet's reads them all)."""
    heals: int = 0
    """``healed`` entries."""
    proposals: int = 0
    """``proposed`` entries."""
    invalidations: int = 0
    """``invalidated`` entries."""

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Written without its zero figures (read back as zeros): a summary keeps one of
        these per day, for ever."""
        data: dict[str, Any] = handler(self)
        return {name: value for name, value in data.items() if value not in (0, {})}

    def add(self, other: DayTotals) -> None:
        """Add ``other``'s figures to these (in place)."""
        for name in DAY_COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for model, figures in other.models.items():
            mine = self.models.setdefault(model, [0] * len(MODEL_FIGURES))
            for index, value in enumerate(figures[: len(MODEL_FIGURES)]):
                mine[index] += value

    def usage(self, model: str) -> Usage:
        """The tokens spent with ``model`` that day."""
        figures = [*self.models.get(model, ()), 0, 0, 0, 0][:4]
        return Usage(
            input_tokens=figures[0],
            output_tokens=figures[1],
            cache_creation_input_tokens=figures[2],
            cache_read_input_tokens=figures[3],
        )

    def saved(self, model: str) -> int:
        """The tokens saved with ``model`` that day."""
        figures = self.models.get(model, [])
        return figures[4] if len(figures) > 4 else 0


class ProfileTotals(BaseModel):
    """One screen profile's replays of one trajectory."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    runs: int = 0
    """Replays on it."""
    completed: int = 0
    """Of them, completed (verified or not)."""
    handed_back: int = 0
    """Of them, handed back."""
    last_at: datetime | None = None
    """The latest replay's start."""


class EventNote(BaseModel):
    """A heal, proposal or invalidation, as the summary remembers it."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    event: RunEvent
    """``healed``, ``proposed`` or ``invalidated``."""
    at: datetime
    """When."""
    version: str | None = None
    """The version or proposal written (a name under ``.versions/``)."""
    profile: str | None = None
    """The screen profile healed (``None``: the recorded trajectory)."""
    healed_steps: list[int] = Field(default_factory=list)
    """The steps the model re-did."""


def day_of(when: datetime) -> str:
    """``YYYY-MM-DD``: the UTC day of ``when`` (a naive time is UTC)."""
    moment = when if when.tzinfo is None else when.astimezone(UTC)
    return moment.strftime("%Y-%m-%d")


def spot_key(step: int | None, code: HandBackCode | None, profile: str | None) -> str:
    """The key of a hand-back hot spot: ``step|code|profile`` (empty: not known)."""
    return f"{'' if step is None else step}|{code or ''}|{profile or ''}"


def spot_parts(key: str) -> tuple[int | None, str | None, str | None]:
    """:func:`spot_key` read back: (step, code, profile)."""
    step, code, profile = ([*key.split("|", 2), "", ""])[:3]
    return (int(step) if step.lstrip("-").isdigit() else None), code or None, profile or None


class _Extras(Protocol):
    """What :func:`fold_extras` needs of a summary (its fields of this module's kinds)."""

    days: dict[str, DayTotals]
    hand_backs: dict[str, int]
    profiles: dict[str, ProfileTotals]
    recent: list[EventNote]


def fold_extras(s: _Extras, record: RunRecord) -> None:
    """Add ``record`` to ``s``'s days, hot spots, profiles and notes (in place)."""
    day = s.days.setdefault(day_of(record.started_at), DayTotals())
    if record.event == "replay":
        status = record.status
        day.runs += 1
        hit = status in ("completed", "completed_unverified")
        day.completed += hit
        day.handed_back += status == "handed_back"
        day.refused += status == "refused"
        day.model_calls += record.model_calls
        day.saved_model_calls += record.saved_model_calls
        day.saved_tokens += record.saved_tokens
        day.saved_seconds += record.saved_seconds or 0.0
        model = record.model or ""
        used = record.usage
        mine = day.models.setdefault(model, [0] * len(MODEL_FIGURES))
        mine[0] += used.input_tokens
        mine[1] += used.output_tokens
        mine[2] += used.cache_creation_input_tokens
        mine[3] += used.cache_read_input_tokens
        mine[4] += record.saved_tokens
        if status == "handed_back":
            key = spot_key(record.stopped_at_step, record.reason_code, record.profile)
            s.hand_backs[key] = s.hand_backs.get(key, 0) + 1
        profile = s.profiles.setdefault(record.profile or "", ProfileTotals())
        profile.runs += 1
        profile.completed += hit
        profile.handed_back += status == "handed_back"
        profile.last_at = _latest(profile.last_at, record.started_at)
    elif record.event in ("healed", "proposed", "invalidated"):
        day.heals += record.event == "healed"
        day.proposals += record.event == "proposed"
        day.invalidations += record.event == "invalidated"
        note = EventNote(
            event=record.event,
            at=record.started_at,
            version=record.version,
            profile=record.profile,
            healed_steps=list(record.healed_steps),
        )
        s.recent = _latest_notes([*s.recent, note])


def merge_extras_into(s: _Extras, b: _Extras) -> None:
    """Add ``b``'s days, hot spots, profiles and notes to ``s``'s (in place; ``s`` a copy)."""
    for name, totals in b.days.items():
        s.days.setdefault(name, DayTotals()).add(totals)
    for key, count in b.hand_backs.items():
        s.hand_backs[key] = s.hand_backs.get(key, 0) + count
    for name, theirs in b.profiles.items():
        mine = s.profiles.setdefault(name, ProfileTotals())
        mine.runs += theirs.runs
        mine.completed += theirs.completed
        mine.handed_back += theirs.handed_back
        mine.last_at = _latest(mine.last_at, theirs.last_at)
    s.recent = _latest_notes([*s.recent, *b.recent])


def _latest_notes(notes: list[EventNote]) -> list[EventNote]:
    """The :data:`RECENT_EVENTS` latest, oldest first (a stable sort keeps the fold order)."""
    return sorted(notes, key=lambda note: note.at)[-RECENT_EVENTS:]


def _latest(x: datetime | None, y: datetime | None) -> datetime | None:
    return x if y is None else y if x is None else max(x, y)
