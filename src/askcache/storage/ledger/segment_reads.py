"""How the S3 run ledger (:mod:`askcache.storage.ledger.segments`) reads trajectories: a
listing of their objects, then their newest generation and loose entries, concurrently.

A trajectory's summary is its newest generation's plus the loose entries that generation does
not hold; loose entries it lists as folded (left by a compaction killed before deleting them),
and entries found in an older segment (sent again by the outbox after being folded), are set
apart for the next compaction to delete. An object gone between the listing and the read (a
compaction committed meanwhile) makes it list and read again; so does a segment gone that the
generation read lists, whether it was read to recognise a resent entry or for its entries
(:func:`read_segments`): one deleted after the grace period of
:mod:`askcache.storage.ledger.segment_grace` by a machine whose clock runs ahead, or while
this reader paused. So a reader neither misses an entry its generation holds nor counts a
resent one again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from askcache.storage.cache_storage import CacheStorage
from askcache.storage.ledger.engine import LEDGER_FOLDER
from askcache.storage.ledger.records import RunRecord
from askcache.storage.ledger.segment_objects import (
    SUMMARIES_FOLDER,
    Generation,
    Segment,
    TrajectoryObjects,
    group_listing,
    loose_folder,
    parse_object,
)
from askcache.storage.ledger.summary import TrajectorySummary, fold_all

__all__ = ["TrajectoryView", "list_trajectories", "read_newest", "read_segments", "read_views"]

logger = logging.getLogger(__name__)

_READ_TRIES = 3


@dataclass
class TrajectoryView:
    """One trajectory as read: its newest generation and what it does not hold yet."""

    objects: TrajectoryObjects
    generation: Generation | None = None
    pending: dict[str, RunRecord] = field(default_factory=dict)
    """Loose entries not folded yet, by stem, in stem order."""
    folded_loose: list[str] = field(default_factory=list)
    """Storage names of loose entries already folded (left over, or sent again)."""

    @property
    def summary(self) -> TrajectorySummary | None:
        """The trajectory's summary (``None``: no entry at all)."""
        base = self.generation.summary if self.generation else None
        if base is None and not self.pending:
            return None
        start = base or TrajectorySummary(trajectory=self.objects.trajectory)
        return fold_all(start, self.pending.values())


def list_trajectories(
    storage: CacheStorage, trajectory: str | None
) -> dict[str, TrajectoryObjects]:
    """The objects of one trajectory (always present in the result) or of all."""
    if trajectory is None:
        loose = storage.list_prefix(LEDGER_FOLDER)
        summaries = storage.list_prefix(SUMMARIES_FOLDER)
    else:
        loose = storage.list_prefix(loose_folder(trajectory))
        summaries = storage.list_prefix(f"{SUMMARIES_FOLDER}/{trajectory}")
    found = group_listing(loose, summaries)
    if trajectory is not None:
        found = {trajectory: found.get(trajectory, TrajectoryObjects(trajectory))}
    return found


def read_views(
    storage: CacheStorage, listing: dict[str, TrajectoryObjects]
) -> tuple[dict[str, TrajectoryView], bool]:
    """Read the trajectories listed; and whether every object listed was read. An object
    gone between the listing and the read (a compaction committed meanwhile) makes it
    list and read again; after the last try, what was read is used, with a warning."""
    for attempt in range(_READ_TRIES):
        views, complete = _read(storage, listing)
        if complete or attempt == _READ_TRIES - 1:
            if not complete:
                logger.warning(
                    "ledger objects of %s kept going while being read (%d tries): an entry "
                    "may be missing, or a resent one counted twice",
                    ", ".join(sorted(listing)),
                    _READ_TRIES,
                )
            return views, complete
        listing = _relist(storage, listing)
    raise AssertionError("unreachable")  # pragma: no cover


def read_segments(
    storage: CacheStorage, listing: dict[str, TrajectoryObjects], since: str | None
) -> tuple[dict[str, TrajectoryView], list[Segment]]:
    """Read the trajectories listed (:func:`read_views`) and the segments their generations
    list (those holding an entry stem at or after ``since``; ``None``: all). A segment gone
    makes it list and read again; after the last try, it is left out with a warning."""
    for attempt in range(_READ_TRIES):
        views = read_views(storage, listing)[0]
        rows = [r for v in views.values() if v.generation for r in v.generation.segments]
        wanted = [r.segment for r in rows if since is None or r.last >= since]
        data = storage.read_many(wanted)
        missing = [name for name in wanted if name not in data]
        if not missing or attempt == _READ_TRIES - 1:
            break
        listing = _relist(storage, listing)
    if missing:
        logger.warning("ledger segments listed but gone, their entries left out: %s", missing)
    segments = (parse_object(Segment, name, data[name]) for name in wanted if name in data)
    return views, [segment for segment in segments if segment is not None]


def read_newest(
    storage: CacheStorage, trajectory: str, keep: Callable[[RunRecord], bool], limit: int
) -> list[RunRecord]:
    """About the newest ``limit`` entries of ``trajectory`` that ``keep`` accepts, newest
    first: its loose entries, then its segments from the newest back, one at a time, until
    ``limit`` are found (a trajectory of a million entries costs a listing and a few reads).
    Segments are read in the order of their ranges, so an entry folded late (sent late by an
    outbox) may be passed over for a newer one of an older segment. A segment gone makes it
    list and read again; after the last try, it is left out with a warning."""
    found: list[RunRecord] = []
    missing: list[str] = []
    for _attempt in range(_READ_TRIES):
        listing = list_trajectories(storage, trajectory)
        view = read_views(storage, listing)[0][trajectory]
        found = [view.pending[stem] for stem in sorted(view.pending, reverse=True)]
        found = [record for record in found if keep(record)]
        rows = list(reversed(view.generation.segments)) if view.generation else []
        missing = []
        for row in rows:
            if len(found) >= limit:
                break
            data = storage.read_many([row.segment]).get(row.segment)
            if data is None:
                missing.append(row.segment)
                break
            segment = parse_object(Segment, row.segment, data)
            entries = segment.entries if segment is not None else {}
            found += [r for stem in sorted(entries, reverse=True) if keep(r := entries[stem])]
        if not missing:
            break
    if missing:
        logger.warning("ledger segments listed but gone, their entries left out: %s", missing)
    found.sort(key=lambda record: record.started_at, reverse=True)
    return found[: max(limit, 0)]


def _relist(
    storage: CacheStorage, listing: dict[str, TrajectoryObjects]
) -> dict[str, TrajectoryObjects]:
    if len(listing) == 1:
        return list_trajectories(storage, next(iter(listing)))
    return list_trajectories(storage, None)


def _read(
    storage: CacheStorage, listing: dict[str, TrajectoryObjects]
) -> tuple[dict[str, TrajectoryView], bool]:
    """One pass of :func:`read_views`."""
    wanted = [o.latest for o in listing.values() if o.latest]
    wanted += [name for o in listing.values() for name in o.loose.values()]
    data = storage.read_many(wanted)
    complete = True
    views: dict[str, TrajectoryView] = {}
    covering: dict[str, list[tuple[TrajectoryView, str]]] = {}
    for trajectory, objects in listing.items():
        view = views[trajectory] = TrajectoryView(objects)
        latest = objects.latest
        if latest is not None and latest in data:
            view.generation = parse_object(Generation, latest, data[latest])
        complete = complete and (latest is None or latest in data)
        folded = set(view.generation.folded) if view.generation else set()
        rows = []  # the segments a loose entry not folded by this generation may be in
        if view.generation is not None:
            newest = view.generation.generation
            rows = [r for r in view.generation.segments if r.generation != newest]
            rows += [view.generation.merged] if view.generation.merged else []
        for stem in sorted(objects.loose):
            name = objects.loose[stem]
            if stem in folded:
                view.folded_loose.append(name)
                continue
            complete = complete and name in data
            record = parse_object(RunRecord, name, data[name]) if name in data else None
            if record is None:
                continue
            view.pending[stem] = record
            for row in rows:
                if row.covers(stem):
                    covering.setdefault(row.segment, []).append((view, stem))
    complete = _drop_resent(storage, covering) and complete
    return views, complete


def _drop_resent(
    storage: CacheStorage, covering: dict[str, list[tuple[TrajectoryView, str]]]
) -> bool:
    """Loose entries found in an older segment were sent again after being folded: they
    are ignored (and deleted by the next compaction). False when a segment was gone (so a
    resent entry may not have been recognised: list and read again)."""
    found = storage.read_many(covering)
    for name, data in found.items():
        segment = parse_object(Segment, name, data)
        for view, stem in covering[name]:
            if segment is not None and stem in segment.entries:
                del view.pending[stem]
                view.folded_loose.append(view.objects.loose[stem])
    return len(found) == len(covering)
