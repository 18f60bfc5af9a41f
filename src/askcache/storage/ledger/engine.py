"""The run-ledger interface every engine implements: :class:`RunLedger`.

An engine stores :class:`~askcache.storage.ledger.records.RunRecord` entries and, in the same
transaction, folds each into its trajectory's
:class:`~askcache.storage.ledger.summary.TrajectorySummary`, so reads that need totals (``stats``,
``list``, the hand-back check) cost O(trajectories) or O(1), never O(runs). Raw entries are
kept for the retention period (:meth:`RunLedger.prune`); summaries for ever.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable
from datetime import datetime
from types import TracebackType

from askcache.storage.ledger.day_totals import DayTotals
from askcache.storage.ledger.records import RunRecord
from askcache.storage.ledger.spot_images import SpotImages, SpotKey
from askcache.storage.ledger.summary import TrajectorySummary
from askcache.storage.ledger.waits import DEFAULT_WAIT_RUNS, StepWaits, collect_waits

__all__ = ["LEDGER_FOLDER", "RunLedger"]

LEDGER_FOLDER = ".ledger"
"""Folder of the ledger inside a cache storage (hidden: never listed as a cache file)."""


class RunLedger(ABC):
    """Where run entries are appended and read (see the module docstring). A context manager:
    leaving it calls :meth:`close`."""

    supports_retention: bool = False
    """True when :meth:`prune` drops raw entries and keeps the summaries."""

    @staticmethod
    def new_entry_id() -> str:
        """A fresh, unique id for :meth:`append`."""
        return uuid.uuid4().hex[:12]

    @abstractmethod
    def append(self, record: RunRecord, *, entry_id: str | None = None) -> str:
        """Store ``record`` and fold it into its trajectory's summary, both or neither; return
        the entry's id (or name). With an ``entry_id`` (from :meth:`new_entry_id`) the append
        is idempotent: the entry is stored and folded once however often it is appended (a
        write kept in the outbox and sent again after a crash adds nothing)."""

    @abstractmethod
    def records(
        self,
        trajectory: str | None = None,
        *,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[RunRecord]:
        """The raw entries still kept (of one trajectory, or all; started at or after
        ``since``), oldest first; with ``limit``, the newest ``limit`` of them. An unreadable
        entry (foreign, damaged) is skipped with a warning naming it."""

    @abstractmethod
    def summary(self, trajectory: str) -> TrajectorySummary | None:
        """The trajectory's summary, ``None`` when it has no entry. O(1)."""

    @abstractmethod
    def summaries(self) -> list[TrajectorySummary]:
        """Every trajectory's summary, sorted by name. O(trajectories)."""

    def fleet_summaries(self) -> tuple[list[TrajectorySummary], dict[str, DayTotals] | None]:
        """Every trajectory's summary (as :meth:`summaries`), for a page of the whole fleet,
        and every trajectory's per-day figures added up by day, or ``None``.

        An engine that can add the days up where they are stored (PostgreSQL, in one query)
        returns the summaries without their :attr:`~TrajectorySummary.days` and the sums, so
        that a fleet of trajectories x days is read as one row per day. This default returns
        :meth:`summaries` whole and ``None``: the caller adds their days up
        (:func:`askcache.cli.fleet_figures.fleet_figures`). Both give the same figures."""
        return self.summaries(), None

    @abstractmethod
    def prune(self, before: datetime) -> int:
        """Drop the raw entries started before ``before`` (summaries stay); how many went."""

    def step_waits(
        self,
        trajectory: str,
        *,
        profile: str | None,
        digest: str,
        limit: int = DEFAULT_WAIT_RUNS,
    ) -> StepWaits:
        """The past waits of each step of ``trajectory``: from its newest ``limit`` replays
        on screen profile ``profile`` (``None``: runs whose profile was not known) that ran
        the steps of ``digest`` (:func:`~askcache.storage.ledger.waits.steps_digest`), among
        the entries still kept (see :mod:`askcache.storage.ledger.waits`).

        This default reads every kept entry of the trajectory; the SQL engines read the
        ``limit`` entries through an index, the S3 engine its newest objects first."""
        return collect_waits(self.records(trajectory), profile=profile, digest=digest, limit=limit)

    def consecutive_failures(self, trajectory: str) -> tuple[int, int | None]:
        """How many of the latest replays in a row handed back at the same step, and that
        step (``(0, None)`` when the latest replay did not hand back; a heal ends the run)."""
        summary = self.summary(trajectory)
        if summary is None:
            return 0, None
        return summary.failure_streak, summary.failure_step

    def put_spot_images(self, images: SpotImages) -> None:  # noqa: B027 (engines override)
        """Keep ``images`` as their hot spot's failing-region thumbnails
        (:mod:`askcache.storage.ledger.spot_images`), apart from entries and summaries,
        replacing those kept for the spot unless they are of a replay that started later.
        Every engine askcache ships overrides this; the default keeps nothing."""

    def spot_images(self, keys: Iterable[SpotKey]) -> dict[SpotKey, SpotImages]:
        """The thumbnails kept for each hot spot of ``keys`` (trajectory, spot key); a spot
        without any is left out. Reads only those spots' rows or objects, never an entry."""
        del keys
        return {}

    def close(self) -> None:  # noqa: B027 (an engine with nothing open keeps this no-op)
        """Release connections and files (the ledger is unusable afterwards)."""

    def __enter__(self) -> RunLedger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
