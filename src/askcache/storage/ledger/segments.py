"""The S3 engine: append-only entry objects, compacted into per-trajectory summaries.

For a cache kept only on S3 (or another fsspec storage), where no database is shared by the
fleet. Every run creates one loose entry object (never overwritten, idempotent by entry id,
as the folder engine): one request. About one append in ``check_every`` (chosen by a hash of
the entry's name, so the choice needs no request and no state) also lists the trajectory, and
once it has more than ``compact_after`` loose entries *compacts* them: it claims the
compaction (:mod:`askcache.storage.ledger.segment_claims`, so that of many machines finding
the trajectory due one does the work), writes the entries into a segment object, then creates
the trajectory's next generation (its summary: the previous one with those entries folded
in), then deletes the loose objects. While the newest segment and the new entries fit in
``max_fold``, the new segment takes in the newest one's entries too (which it replaces in the
generation's table), so the table, read with every summary and rewritten by every compaction,
keeps about one row per ``max_fold`` entries. The objects are described in
:mod:`askcache.storage.ledger.segment_objects`.

Why nothing is lost or counted twice with many machines appending and compacting at once:

- A generation is created exclusively under its number, so two compactions that started from
  the same generation cannot both commit; the loser deletes its segment and nothing else.
  (Claims only save work: safety never depends on them.)
- Loose entries are deleted only after the generation that folded them exists. A reader, and
  the next compaction, ignore loose entries the newest generation lists as folded (left by a
  compaction killed before deleting them); that next compaction deletes them before it
  commits, so only the newest generation's can be left.
- An entry sent again after it was folded (the outbox resending a write whose answer was
  lost) is recognised by its stem in the segment whose range covers it and ignored (for the
  newest segment, the range it merged: its other entries are the ones its generation folded).
  Once the retention has dropped that segment, it cannot be told from an entry sent for the
  first time that late, and is counted again (docs/ledger.md, as in every engine).
- Nothing a generation still in storage lists is deleted: segments a new generation no
  longer lists (merged away, dropped or rewritten by the retention) are named in its
  ``retired`` and deleted, with the generations before, once a newer one has existed for
  :data:`~askcache.storage.ledger.segment_grace.GENERATION_GRACE_SECONDS`
  (:mod:`askcache.storage.ledger.segment_grace`); a reader that still finds a segment gone
  lists again. A compaction that took longer than :data:`COMPACTION_DEADLINE_SECONDS` gives
  up before committing, so a slow compaction can never commit a generation number that was
  deleted.

Reads cost a listing of the trajectory's loose entries and generations and a few object reads
(concurrent, :meth:`~askcache.storage.cache_storage.CacheStorage.read_many`); ``summaries()`` one
listing of each folder for all trajectories. Retention: each compaction drops the segments
whose entries are all older than ``retention_days`` from its table (deleted after the grace
period, as above); :meth:`SegmentLedger.prune` does it for every trajectory. Generations
(summaries) are kept for ever.
"""

from __future__ import annotations

import contextlib
import logging
import time
import zlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from askcache.foundation.errors import AskCacheError, CacheExistsError, InvalidSettingsError
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.ledger.engine import RunLedger
from askcache.storage.ledger.folder import create_entry
from askcache.storage.ledger.records import RunRecord, newest_records
from askcache.storage.ledger.segment_claims import spent_claims, take_claim
from askcache.storage.ledger.segment_fold import fold_generation, merge_candidate
from askcache.storage.ledger.segment_grace import GENERATION_GRACE_SECONDS, expiry
from askcache.storage.ledger.segment_objects import (
    SUMMARY_CACHE_NAME,
    CachedSummary,
    Segment,
    SummaryCache,
    TrajectoryObjects,
    loose_folder,
    parse_object,
    stem_at,
    stem_of,
    summary_name,
)
from askcache.storage.ledger.segment_reads import (
    TrajectoryView,
    list_trajectories,
    read_newest,
    read_segments,
    read_views,
)
from askcache.storage.ledger.segment_retention import prune_trajectory
from askcache.storage.ledger.spot_images import (
    SpotImages,
    SpotKey,
    put_object,
    read_objects,
)
from askcache.storage.ledger.summary import TrajectorySummary
from askcache.storage.ledger.waits import (
    DEFAULT_WAIT_RUNS,
    StepWaits,
    key_of,
    merge_waits,
    waits_key,
)

__all__ = ["COMPACTION_DEADLINE_SECONDS", "GENERATION_GRACE_SECONDS", "SegmentLedger"]

logger = logging.getLogger(__name__)

COMPACTION_DEADLINE_SECONDS = 300.0
"""A compaction that took longer than this gives up before committing its generation."""


def _system_clock() -> datetime:
    return datetime.now(UTC)


class SegmentLedger(RunLedger):
    """The run ledger as objects in a cache storage (see the module docstring).

    Args:
        storage: The cache storage (S3 through fsspec, or any other).
        retention_days: Raw entries are kept this long (``None``: for ever).
        compact_after: A trajectory is compacted when it has more loose entries than this.
        max_fold: At most this many entries are folded by one compaction.
        check_every: About one append in this many (chosen by a hash of the entry's name)
            lists its trajectory to decide on compaction; the others make one request.
        clock: The current time (UTC) this ledger writes into generations and claims and
            judges their age by (default: the system clock; tests move it).
    """

    supports_retention = True

    def __init__(
        self,
        storage: CacheStorage,
        *,
        retention_days: int | None = 90,
        compact_after: int = 32,
        max_fold: int = 1000,
        check_every: int = 8,
        clock: Callable[[], datetime] = _system_clock,
    ) -> None:
        if check_every < 1:
            raise InvalidSettingsError("SegmentLedger", [("check_every", "must be at least 1")])
        self.storage = storage
        self.retention_days = retention_days
        self.compact_after = compact_after
        self.max_fold = max_fold
        self.check_every = check_every
        self.clock = clock

    # -- writing ---------------------------------------------------------------------------

    def append(self, record: RunRecord, *, entry_id: str | None = None) -> str:
        name = create_entry(self.storage, loose_folder(record.trajectory), record, entry_id)
        if zlib.crc32(stem_of(name).encode()) % self.check_every == 0:
            try:
                self.compact(record.trajectory)
            except (
                AskCacheError,
                OSError,
            ) as exc:  # the entry is stored; compaction can wait
                logger.warning("could not compact the ledger of %s: %s", record.trajectory, exc)
        return name

    def compact_all(self) -> int:
        """:meth:`compact` every trajectory with more than ``compact_after`` loose entries
        (``askcache sync`` does it); returns how many entries were folded."""
        listing = self._listing(None)
        due = [t for t, objects in listing.items() if len(objects.loose) > self.compact_after]
        return sum(self.compact(trajectory) for trajectory in sorted(due))

    def compact(self, trajectory: str, *, force: bool = False) -> int:
        """Fold the trajectory's loose entries (at most ``max_fold``) into a new generation
        when there are more than ``compact_after`` of them (any number with ``force``), and
        apply the retention; returns how many were folded (0 when another process holds the
        claim or committed first, which is harmless)."""
        started = time.monotonic()
        listing = self._listing(trajectory)
        objects = listing[trajectory]
        if not objects.loose or (not force and len(objects.loose) <= self.compact_after):
            return 0
        number = (objects.latest_number or 0) + 1
        claim = take_claim(
            self.storage, objects, number, COMPACTION_DEADLINE_SECONDS, now=self.clock()
        )
        if claim is None:
            return 0
        try:
            return self._fold(listing, number, started, force=force)
        finally:
            with contextlib.suppress(AskCacheError, OSError):  # a stale claim is taken over
                self.storage.delete_many([claim, *spent_claims(objects, number)])

    def _fold(
        self, listing: dict[str, TrajectoryObjects], number: int, started: float, *, force: bool
    ) -> int:
        """The claimed part of :meth:`compact`: fold into generation ``number``."""
        view = next(iter(self._views(listing).values()))
        trajectory = view.objects.trajectory
        if view.folded_loose:
            self.storage.delete_many(view.folded_loose)
        pending = dict(list(view.pending.items())[: self.max_fold])
        if not pending or (not force and len(pending) <= self.compact_after):
            return 0
        previous = view.generation
        if (previous.generation if previous else 0) + 1 != number:
            return 0  # another process committed since the listing
        cutoff = self._cutoff()
        candidate = merge_candidate(previous, len(pending), cutoff=cutoff, max_fold=self.max_fold)
        merge = None
        if candidate is not None:
            raw = self.storage.read_many([candidate.segment]).get(candidate.segment)
            merge = None if raw is None else parse_object(Segment, candidate.segment, raw)
        expired = expiry(view.objects, previous, self.clock())
        folded = fold_generation(
            trajectory,
            previous,
            pending,
            cutoff=cutoff,
            merge=merge,
            retired=expired.carried,
            now=self.clock(),
        )
        self.storage.create(folded.segment_name, folded.segment.model_dump_json().encode())
        if time.monotonic() - started > COMPACTION_DEADLINE_SECONDS:
            self.storage.delete(folded.segment_name)
            return 0
        try:
            self.storage.create(
                summary_name(trajectory, number),
                folded.generation.model_dump_json().encode("utf-8"),
            )
        except CacheExistsError:
            self.storage.delete(folded.segment_name)
            return 0
        self.storage.delete_many(view.objects.loose[stem] for stem in pending)
        self.storage.delete_many(expired.delete)
        return len(pending)

    def _cutoff(self) -> str | None:
        """The smallest entry stem the retention keeps (``None``: all)."""
        if self.retention_days is None:
            return None
        return stem_at(self.clock() - timedelta(days=self.retention_days))

    def put_spot_images(self, images: SpotImages) -> None:
        """See :meth:`RunLedger.put_spot_images`: one object per hot spot under
        ``.ledger-images/`` (:func:`~askcache.storage.ledger.spot_images.put_object`)."""
        put_object(self.storage, images)

    def spot_images(self, keys: Iterable[SpotKey]) -> dict[SpotKey, SpotImages]:
        """See :meth:`RunLedger.spot_images`: one object read per spot."""
        return read_objects(self.storage, keys)

    def prune(self, before: datetime) -> int:
        """Compact every trajectory, then drop its entries started before ``before``: the
        segments holding only those leave its table, the others are rewritten without them,
        under a new generation (its summary unchanged; what it no longer lists is deleted
        after the grace period). Returns how many entries went."""
        cutoff = stem_at(before)
        dropped = 0
        for trajectory in sorted(self._listing(None)):
            self.compact(trajectory, force=True)
            view = self._views(self._listing(trajectory))[trajectory]
            if view.generation is not None:
                dropped += prune_trajectory(self.storage, view, cutoff, now=self.clock())
        return dropped

    # -- reading ---------------------------------------------------------------------------

    def summary(self, trajectory: str) -> TrajectorySummary | None:
        return self._views(self._listing(trajectory))[trajectory].summary

    def summaries(self) -> list[TrajectorySummary]:
        """Every trajectory's summary: from the summary cache (see
        :mod:`~askcache.storage.ledger.segment_objects`) where it still matches the listing,
        read and computed (and cached) for the others."""
        listing = self._listing(None)
        cache = self._summary_cache()
        kept = {t: c for t, c in cache.summaries.items() if t in listing and c.matches(listing[t])}
        found = {t: c.summary for t, c in kept.items()}
        rest = {t: objects for t, objects in listing.items() if t not in kept}
        if rest:
            views, complete = read_views(self.storage, rest)
            found.update((t, view.summary) for t, view in views.items())
            if complete:
                fresh = {
                    t: CachedSummary(
                        generation=view.objects.latest_number,
                        loose=sorted(view.objects.loose),
                        summary=view.summary,
                    )
                    for t, view in views.items()
                }
                self._put_summary_cache(SummaryCache(summaries={**kept, **fresh}))
        return [s for t in sorted(found) if (s := found[t]) is not None]

    def _summary_cache(self) -> SummaryCache:
        raw = self.storage.read_many([SUMMARY_CACHE_NAME]).get(SUMMARY_CACHE_NAME)
        cache = None if raw is None else parse_object(SummaryCache, SUMMARY_CACHE_NAME, raw)
        return cache or SummaryCache()

    def _put_summary_cache(self, cache: SummaryCache) -> None:
        try:
            self.storage.write(SUMMARY_CACHE_NAME, cache.model_dump_json().encode("utf-8"))
        except (
            AskCacheError,
            OSError,
        ) as exc:  # read-only credentials: no cache, no harm
            logger.info("could not write %s: %s", SUMMARY_CACHE_NAME, exc)

    def records(
        self,
        trajectory: str | None = None,
        *,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[RunRecord]:
        views, segments = read_segments(
            self.storage, self._listing(trajectory), None if since is None else stem_at(since)
        )
        found = [record for segment in segments for record in segment.entries.values()]
        for view in views.values():
            found.extend(view.pending.values())
        return newest_records(found, since, limit)

    def step_waits(
        self,
        trajectory: str,
        *,
        profile: str | None,
        digest: str,
        limit: int = DEFAULT_WAIT_RUNS,
    ) -> StepWaits:
        """See :meth:`RunLedger.step_waits`: the loose entries, then the segments from the
        newest back until ``limit`` runs are found (:func:`read_newest`)."""
        key = key_of(digest, profile)
        runs = read_newest(self.storage, trajectory, lambda r: waits_key(r) == key, limit)
        return merge_waits(run.step_waits for run in runs)

    def _listing(self, trajectory: str | None) -> dict[str, TrajectoryObjects]:
        """The objects of one trajectory (always present in the result) or of all."""
        return list_trajectories(self.storage, trajectory)

    def _views(self, listing: dict[str, TrajectoryObjects]) -> dict[str, TrajectoryView]:
        """Read the trajectories listed (see :func:`read_views`)."""
        return read_views(self.storage, listing)[0]
