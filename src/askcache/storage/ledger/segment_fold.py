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

__all__ = ["Folded", "fold_generation", "merge_candidate"]


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
    """The previous generation's segments the retention drops: left out of the table and
    named in the generation's ``retired`` (deleted after the grace period,
    :mod:`askcache.storage.ledger.segment_grace`)."""


def merge_candidate(
    previous: Generation | None, folding: int, *, cutoff: str | None, max_fold: int
) -> SegmentRow | None:
    """The newest segment ``previous`` keeps, when it and ``folding`` more entries fit in one
    segment of at most ``max_fold``: a compaction merges it into its own."""
    rows = [
        r for r in (previous.segments if previous else []) if cutoff is None or r.last >= cutoff
    ]
    if rows and rows[-1].entries + folding <= max_fold:
        return rows[-1]
    return None


def fold_generation(
    trajectory: str,
    previous: Generation | None,
    pending: dict[str, RunRecord],
    *,
    cutoff: str | None,
    merge: Segment | None = None,
    retired: list[str] | None = None,
    now: datetime | None = None,
) -> Folded:
    """Fold ``pending`` (entries by stem, not empty) after ``previous`` into the next
    generation; segments whose entries all have a stem below ``cutoff`` (the retention; ``None``:
    none) are left out of its table and added to its ``retired``, after ``retired`` (the
    segments retired before and not deleted yet). ``merge``: the contents of
    :func:`merge_candidate`'s segment, taken into the new one (its row replaced, its name
    retired too). ``now``: the generation's ``created_at`` (default: the system clock)."""
    number = (previous.generation if previous else 0) + 1
    where = segment_name(trajectory, number, uuid.uuid4().hex[:12])
    rows = previous.segments if previous else []
    kept = [r for r in rows if cutoff is None or r.last >= cutoff]
    dropped = [r for r in rows if cutoff is not None and r.last < cutoff]
    entries, merged = pending, None
    gone = [*(retired or []), *(r.segment for r in dropped)]
    if merge is not None and kept:
        older = kept.pop()
        entries = {**merge.entries, **pending}
        merged = older.model_copy(update={"generation": number, "segment": where})
        gone.append(older.segment)
    row = SegmentRow(
        generation=number,
        segment=where,
        first=min(entries),
        last=max(entries),
        entries=len(entries),
    )
    generation = Generation(
        generation=number,
        summary=fold_all(
            previous.summary if previous else TrajectorySummary(trajectory=trajectory),
            pending.values(),
        ),
        folded=list(pending),
        segments=[*kept, row],
        created_at=datetime.now(UTC) if now is None else now,
        merged=merged,
        retired=gone,
    )
    return Folded(where, Segment(generation=number, entries=entries), generation, dropped)
