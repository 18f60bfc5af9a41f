"""What the fleet page (``askcache dashboard``) shows, as values: :class:`FleetFigures`.

Everything comes from the run ledger's summaries (one per trajectory, never a scan of the
runs: :mod:`askcache.storage.ledger.summary` and :mod:`askcache.storage.ledger.day_totals`)
and from one listing of the cache's ``.versions/`` folder (the proposals awaiting review), so
building it costs O(trajectories x days with entries), whatever the number of runs.

The totals are exactly ``askcache stats --json``'s
(:func:`~askcache.cli.commands.stats.stats_json`), and each day's figures are priced the same
way, per recording model.
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import operator
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from askcache.cli.prices import ModelPrice, price_for
from askcache.foundation.reasons import HANDBACK_CODES, describe_code
from askcache.foundation.usage import Usage
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.ledger import TrajectorySummary
from askcache.storage.ledger.day_totals import (
    DAY_COUNTS,
    MODEL_FIGURES,
    DayTotals,
    EventNote,
    spot_parts,
)

__all__ = [
    "HOT_SPOTS",
    "RECENT_CHANGES",
    "Change",
    "DayFigures",
    "FleetFigures",
    "HotSpot",
    "ProfileFigures",
    "Proposal",
    "collector_paused",
    "fleet_figures",
    "proposals_in",
]

HOT_SPOTS = 25
"""Hot spots the page lists (the most hand-backs first)."""

RECENT_CHANGES = 50
"""Heals, proposals and invalidations the page lists (the latest first)."""


class DayFigures(BaseModel):
    """One UTC day, every trajectory."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    day: str
    """``YYYY-MM-DD``."""
    runs: int = 0
    """Replays."""
    completed: int = 0
    """Replays that ran every step."""
    handed_back: int = 0
    """Replays that handed back."""
    hit_rate: float | None = None
    """``completed / runs``; ``None`` without runs."""
    model_calls: int = 0
    """Model calls made after hand-backs."""
    saved_model_calls: int = 0
    """Model calls saved (estimate)."""
    saved_tokens: int = 0
    """Tokens saved (estimate)."""
    saved_seconds: float = 0.0
    """Seconds saved."""
    dollars_spent: float | None = None
    """Dollars of the calls made (``None``: no priced model)."""
    dollars_saved: float | None = None
    """Dollars saved (a lower bound, as ``stats``)."""
    heals: int = 0
    """Heals."""
    proposals: int = 0
    """Healed versions proposed."""
    invalidations: int = 0
    """Invalidations."""


class HotSpot(BaseModel):
    """Where replays keep handing back: one trajectory's step, reason code and screen profile."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    trajectory: str
    """The cache file."""
    step: int | None
    """The step that handed back (``None``: not known)."""
    reason_code: str | None
    """Its reason code (``None``: entries written before codes)."""
    reason: str
    """What the code means."""
    profile: str | None
    """The screen profile (``None``: not known)."""
    hand_backs: int
    """How many times."""


class ProfileFigures(BaseModel):
    """One screen profile, every trajectory."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    profile: str
    """``1280x800@2x``, or ``(unknown)``."""
    trajectories: int = 0
    """Trajectories replayed on it."""
    runs: int = 0
    """Replays on it."""
    completed: int = 0
    """Of them, completed."""
    handed_back: int = 0
    """Of them, handed back."""
    hit_rate: float | None = None
    """``completed / runs``."""
    last_at: datetime | None = None
    """The latest replay on it."""


class Change(BaseModel):
    """A heal, proposal or invalidation."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    trajectory: str
    """The cache file."""
    event: str
    """``healed``, ``proposed`` or ``invalidated``."""
    at: datetime
    """When."""
    version: str | None = None
    """The version or proposal written."""
    profile: str | None = None
    """The screen profile healed (``None``: the recorded trajectory)."""
    healed_steps: list[int] = Field(default_factory=list)
    """Steps the model re-did."""


class Proposal(BaseModel):
    """A healed version awaiting review (``askcache diff NAME``, ``askcache accept NAME``)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    trajectory: str
    """The cache file."""
    proposal: str
    """The proposal's name under ``.versions/NAME/``."""


class FleetFigures(BaseModel):
    """Everything the fleet page shows (embedded in it as JSON)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    generated_at: datetime
    """When the page was written."""
    ledger: str
    """Which ledger (its URL without the password, or the cache's location)."""
    stats: dict[str, Any]
    """Exactly what ``askcache stats --json`` prints for this ledger."""
    days: list[DayFigures]
    """Per UTC day, oldest first (days with entries; the page's charts fill the gaps)."""
    days_since: str | None
    """The first day with per-day figures (``None``: none yet; entries folded before
    per-day figures count in :attr:`stats` only)."""
    hot_spots: list[HotSpot]
    """The :data:`HOT_SPOTS` places with the most hand-backs."""
    hand_backs_by_code: dict[str, int]
    """Hand-backs per reason code (``(none)``: entries written before codes)."""
    changes: list[Change]
    """The latest heals, proposals and invalidations, newest first."""
    proposals: list[Proposal]
    """Healed versions awaiting review."""
    profiles: list[ProfileFigures]
    """Screen profiles, most replays first."""


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused in the block: a fleet's summaries are many
    small objects, all kept alive while they are read and added up, and each collection
    would walk them all again (measured with 1,000 summaries of 90 days: reading them four
    times slower with it). None of them is cyclic garbage; the collector runs again after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def fleet_figures(
    summaries: Sequence[TrajectorySummary],
    *,
    stats: Mapping[str, Any],
    ledger: str,
    proposals: Sequence[Proposal] = (),
    prices: Mapping[str, ModelPrice] | None = None,
    now: datetime | None = None,
    days_added: Mapping[str, DayTotals] | None = None,
) -> FleetFigures:
    """The page's figures from every trajectory's summary (see the module docstring);
    ``stats``: what ``askcache stats --json`` prints for the same summaries
    (:func:`~askcache.cli.commands.stats.stats_json`, given by the caller: the commands sit
    above this module). ``days_added``: every trajectory's days already added up by the
    ledger (:meth:`~askcache.storage.ledger.RunLedger.fleet_summaries`), used instead of the
    summaries' own."""
    days: dict[str, _Day] = {}
    for day, totals in (days_added or {}).items():
        days.setdefault(day, _Day()).add(totals)
    spots: list[tuple[int, str, int, str]] = []  # models for the shown ones alone
    by_code: dict[str, int] = {}
    profiles: dict[str, ProfileFigures] = {}
    notes: list[tuple[datetime, str, EventNote]] = []
    for summary in summaries:
        for day, totals in summary.days.items() if days_added is None else ():
            found = days.get(day)
            if found is None:
                found = days[day] = _Day()
            found.add(totals)
        for key, count in summary.hand_backs.items():
            spots.append((-count, summary.trajectory, len(spots), key))
            code = key.split("|", 2)[1] if key.count("|") else ""  # spot_parts' code
            by_code[code or "(none)"] = by_code.get(code or "(none)", 0) + count
        for name, seen in summary.profiles.items():
            shown = profiles.setdefault(
                name or "(unknown)", ProfileFigures(profile=name or "(unknown)")
            )
            shown.trajectories += 1
            shown.runs += seen.runs
            shown.completed += seen.completed
            shown.handed_back += seen.handed_back
            if seen.last_at is not None and (shown.last_at is None or seen.last_at > shown.last_at):
                shown.last_at = seen.last_at
        notes.extend((note.at, summary.trajectory, note) for note in summary.recent)
    for shown in profiles.values():
        shown.hit_rate = shown.completed / shown.runs if shown.runs else None
    notes.sort(key=operator.itemgetter(0), reverse=True)  # stable: the fold's order on ties
    ordered = sorted(days)
    return FleetFigures(
        generated_at=now or datetime.now(UTC),
        ledger=ledger,
        stats=dict(stats),
        days=[_day_figures(day, days[day], prices) for day in ordered],
        days_since=ordered[0] if ordered else None,
        hot_spots=[_hot_spot(name, key, -minus) for minus, name, _, key in _hottest(spots)],
        hand_backs_by_code=dict(sorted(by_code.items(), key=lambda kv: -kv[1])),
        changes=[
            Change(trajectory=name, **note.model_dump()) for _, name, note in notes[:RECENT_CHANGES]
        ],
        proposals=list(proposals),
        profiles=sorted(profiles.values(), key=lambda p: (-p.runs, p.profile)),
    )


def _hottest(spots: list[tuple[int, str, int, str]]) -> list[tuple[int, str, int, str]]:
    """The :data:`HOT_SPOTS` first of ``(-hand-backs, trajectory, order, key)`` by most
    hand-backs, then trajectory, then step (unknown first), then the fold's order: the
    steps are read only where they decide (a fleet has tens of thousands of spots)."""
    coarse = heapq.nsmallest(HOT_SPOTS, spots, key=operator.itemgetter(0, 1))
    if not coarse:
        return []
    last = coarse[-1][:2]
    tied = [spot for spot in spots if spot[:2] <= last]

    def order(spot: tuple[int, str, int, str]) -> tuple[int, str, int, int]:
        step = spot_parts(spot[3])[0]
        return spot[0], spot[1], step if step is not None else -1, spot[2]

    return sorted(tied, key=order)[:HOT_SPOTS]


def _hot_spot(trajectory: str, key: str, hand_backs: int) -> HotSpot:
    step, code, profile = spot_parts(key)
    return HotSpot(
        trajectory=trajectory,
        step=step,
        reason_code=code,
        reason=_WORDS.get(code, code) if code else describe_code(None),
        profile=profile,
        hand_backs=hand_backs,
    )


class _Day:
    """One day's buckets of every trajectory, added up in plain Python when the day is done
    (a fleet has trajectories x days of them: no model is built per bucket, and the sums
    run column by column in C)."""

    __slots__ = ("counts", "models", "rows")

    def __init__(self) -> None:
        self.rows: list[tuple[float, ...]] = []
        self.models: dict[str, list[list[int]]] = {}
        self.counts: dict[str, float] = {}

    def add(self, totals: DayTotals) -> None:
        self.rows.append(_COUNTS_OF(totals.__dict__))
        for model, figures in totals.models.items():
            self.models.setdefault(model, []).append(figures)

    def total(self) -> dict[str, list[int]]:
        """Fill :attr:`counts` and return the per-model figures added up."""
        columns = zip(*self.rows, strict=True) if self.rows else ([] for _ in DAY_COUNTS)
        self.counts = {name: sum(column) for name, column in zip(DAY_COUNTS, columns, strict=True)}
        return {
            model: [sum(column) for column in zip(*rows, strict=False)][: len(MODEL_FIGURES)]
            for model, rows in self.models.items()
        }


_COUNTS_OF = operator.itemgetter(*DAY_COUNTS)


def _day_figures(day: str, totals: _Day, prices: Mapping[str, ModelPrice] | None) -> DayFigures:
    models = totals.total()
    c = totals.counts
    runs, completed = int(c["runs"]), int(c["completed"])
    figures = DayFigures(
        day=day,
        runs=runs,
        completed=completed,
        handed_back=int(c["handed_back"]),
        hit_rate=completed / runs if runs else None,
        model_calls=int(c["model_calls"]),
        saved_model_calls=int(c["saved_model_calls"]),
        saved_tokens=int(c["saved_tokens"]),
        saved_seconds=c["saved_seconds"],
        heals=int(c["heals"]),
        proposals=int(c["proposals"]),
        invalidations=int(c["invalidations"]),
    )
    for model in sorted(models):
        price = price_for(model or None, prices)
        if price is None:
            continue
        tokens = [*models[model], 0, 0, 0, 0, 0]
        usage = Usage(
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            cache_creation_input_tokens=tokens[2],
            cache_read_input_tokens=tokens[3],
        )
        spent, saved = price.cost(usage), price.saved(tokens[4])
        figures.dollars_spent = (figures.dollars_spent or 0.0) + spent
        figures.dollars_saved = (figures.dollars_saved or 0.0) + saved
    return figures


_WORDS: dict[str, str] = {str(code): words for code, words in HANDBACK_CODES.items()}

VERSIONS_FOLDER = ".versions"
"""``askcache.storage.versions.VERSIONS_FOLDER``, not imported from there: that module brings
the cache file's model, which the fleet page never reads (tests/ledger/test_fleet_page.py
checks that the two agree)."""

_PROPOSAL_NAME = re.compile(rf"^{re.escape(VERSIONS_FOLDER)}/(.+)/(proposed-[^/]+\.json)$")


def proposals_in(storage: CacheStorage) -> list[Proposal]:
    """The healed versions awaiting review in ``storage``: one listing of ``.versions/``."""
    found = (_PROPOSAL_NAME.match(name) for name in storage.list_prefix(VERSIONS_FOLDER))
    return [Proposal(trajectory=m.group(1), proposal=m.group(2)) for m in found if m]
