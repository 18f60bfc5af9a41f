"""What one compaction of the S3 run ledger (:mod:`askcache.storage.ledger.segments`) writes,
as values: the segment of the entries it folds and the trajectory's next generation. Nothing
here touches the storage; the engine writes the result (and a benchmark seeding a large
ledger writes many of them, as that many compactions would have)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from askcache.storage.ledger.records import RunRecord
from askcache.storage.ledger.segment_objects import Generation, Segment, SegmentRow, segment_name
from askcache.storage.ledger.summary import TrajectorySummary, fold_all

__all__ = ["Folded", "fold_generation"]


@dataclass(frozen=True)
class Folded:
    """One compaction's result."""

    segment_name: str
    """Where the segment is to be created."""
    segment: Segment
    """The entries folded."""
    generation: Generation
    """The next generation (the segment is the last of its rows)."""
    dropped: list[SegmentRow]
    """The previous generation's segments the retention drops (to delete after the commit)."""


def fold_generation(
    trajectory: str,
    previous: Generation | None,
    pending: dict[str, RunRecord],
    *,
    cutoff: str | None,
) -> Folded:
    """Fold ``pending`` (entries by stem, not empty) after ``previous`` into the next
    generation; segments whose entries all have a stem below ``cutoff`` (the retention; ``None``:
    none) are left out of its table."""
    number = (previous.generation if previous else 0) + 1
    where = segment_name(trajectory, number, uuid.uuid4().hex[:12])
    rows = previous.segments if previous else []
    kept = [r for r in rows if cutoff is None or r.last >= cutoff]
    dropped = [r for r in rows if cutoff is not None and r.last < cutoff]
    row = SegmentRow(
        generation=number,
        segment=where,
        first=min(pending),
        last=max(pending),
        entries=len(pending),
    )
    generation = Generation(
        generation=number,
        summary=fold_all(
            previous.summary if previous else TrajectorySummary(trajectory=trajectory),
            pending.values(),
        ),
        folded=list(pending),
        segments=[*kept, row],
        created_at=datetime.now(UTC),
    )
    return Folded(where, Segment(generation=number, entries=pending), generation, dropped)
