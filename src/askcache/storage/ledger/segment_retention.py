"""Retention in the S3 run ledger (:mod:`askcache.storage.ledger.segments`): dropping the raw
entries older than a time from a trajectory's segments, its summary kept.

The new generation no longer lists the segments dropped or rewritten; it names them in its
``retired``, and they are deleted after the grace period, as merged-away segments are
(:mod:`askcache.storage.ledger.segment_grace`), so a reader working from the generation before
still finds every segment it lists.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from askcache.foundation.errors import CacheExistsError
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.ledger.segment_grace import expiry
from askcache.storage.ledger.segment_objects import (
    Segment,
    parse_object,
    segment_name,
    summary_name,
)
from askcache.storage.ledger.segment_reads import TrajectoryView

__all__ = ["prune_trajectory"]


def prune_trajectory(
    storage: CacheStorage, view: TrajectoryView, cutoff: str, *, now: datetime
) -> int:
    """Drop the entries of ``view``'s trajectory whose stem is below ``cutoff``: segments
    holding only those leave the table, the others are rewritten without them, under a new
    generation after ``view.generation`` (its summary unchanged), written at ``now`` (UTC).
    Returns how many entries went (0 when another process committed a generation first:
    pruned next time)."""
    previous = view.generation
    if previous is None or all(row.first >= cutoff for row in previous.segments):
        return 0
    trajectory = view.objects.trajectory
    number = previous.generation + 1
    expired = expiry(view.objects, previous, now)
    rows, created, gone, dropped = [], [], [], 0
    for row in previous.segments:
        if row.first >= cutoff:
            rows.append(row)
            continue
        gone.append(row.segment)
        raw = storage.read_many([row.segment]).get(row.segment)
        segment = None if raw is None else parse_object(Segment, row.segment, raw)
        kept = {s: r for s, r in (segment.entries if segment else {}).items() if s >= cutoff}
        dropped += row.entries - len(kept)
        if kept:
            where = segment_name(trajectory, number, uuid.uuid4().hex[:12])
            storage.create(
                where,
                Segment(generation=row.generation, entries=kept).model_dump_json().encode(),
            )
            created.append(where)
            rows.append(
                row.model_copy(update={"segment": where, "first": min(kept), "entries": len(kept)})
            )
    generation = previous.model_copy(
        update={
            "generation": number,
            "segments": rows,
            "created_at": now,
            "merged": None,  # every row is now older than this generation: read in full
            "retired": [*expired.carried, *gone],
        }
    )
    try:
        storage.create(
            summary_name(trajectory, number), generation.model_dump_json().encode("utf-8")
        )
    except CacheExistsError:  # compacted meanwhile: pruned next time
        storage.delete_many(created)
        return 0
    storage.delete_many(expired.delete)
    return dropped
