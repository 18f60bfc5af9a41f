"""The S3 run ledger deletes old generations, and the segments merged away that only they list,
after the grace period (moto's real S3 API server; the ledger's clock injected, so nothing
waits on the wall clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from askcache.storage.ledger import RunRecord
from askcache.storage.ledger.segment_objects import SEGMENTS_FOLDER, SUMMARIES_FOLDER, Generation
from askcache.storage.ledger.segments import GENERATION_GRACE_SECONDS, SegmentLedger
from askcache.storage.ledger.summary import TrajectorySummary, fold_all
from askcache.storage.remote import FsspecCacheStorage, storage_for

T0 = datetime(2026, 11, 1, tzinfo=UTC)
TRAJECTORY = "team/login.json"


def _record(n: int) -> RunRecord:
    return RunRecord(
        trajectory=TRAJECTORY,
        status="handed_back" if n % 3 else "completed",
        stopped_at_step=2 if n % 3 else None,
        started_at=T0 + timedelta(seconds=n),
        model_calls=n,
    )


class _Clock:
    """The time a ledger reads (UTC); a test moves it."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def _generations(storage: FsspecCacheStorage) -> dict[int, Generation]:
    names = [n for n in storage.list_prefix(SUMMARIES_FOLDER) if "/summary-" in n]
    found = [Generation.model_validate_json(data) for data in storage.read_many(names).values()]
    return {g.generation: g for g in found}


def _segments(storage: FsspecCacheStorage) -> set[str]:
    return set(storage.list_prefix(SEGMENTS_FOLDER))


def _append(ledger: SegmentLedger, numbers: range) -> list[RunRecord]:
    records = [_record(n) for n in numbers]
    for n, record in zip(numbers, records, strict=True):
        ledger.append(record, entry_id=f"e{n:03d}")
    return records


def _s3(url: str) -> FsspecCacheStorage:
    storage = storage_for(url)
    assert isinstance(storage, FsspecCacheStorage)
    return storage


def test_segments_merged_away_are_deleted_with_the_old_generations_after_the_grace_period(
    s3_url: str,
) -> None:
    clock = _Clock(T0 + timedelta(days=1))
    storage = _s3(s3_url)
    ledger = SegmentLedger(
        storage, retention_days=None, max_fold=10, check_every=100_000, clock=clock
    )
    records: list[RunRecord] = []

    def compaction(first: int) -> Generation:
        records.extend(_append(ledger, range(first, first + 3)))
        assert ledger.compact(TRAJECTORY, force=True) == 3
        generations = _generations(storage)
        return generations[max(generations)]

    for first in range(0, 12, 3):  # 3, 6, 9 entries merged into one segment; then a new one
        compaction(first)
    clock.advance(GENERATION_GRACE_SECONDS - 1)
    fifth = compaction(12)  # the 4th generation is 1 s too young: nothing deleted
    assert sorted(_generations(storage)) == [1, 2, 3, 4, 5]
    assert len(fifth.retired) == 3  # three segments merged away, all still stored
    assert set(fifth.retired) < _segments(storage)
    clock.advance(GENERATION_GRACE_SECONDS)
    sixth = compaction(15)  # the 5th has existed for the grace period
    generations = _generations(storage)
    assert sorted(generations) == [5, 6]
    assert sixth.retired == [fifth.segments[-1].segment]  # merged away by this compaction
    listed = {row.segment for g in generations.values() for row in g.segments}
    assert _segments(storage) == listed  # the ones only older generations listed: gone
    assert not set(fifth.retired) & _segments(storage)
    assert ledger.records(TRAJECTORY) == records
    assert ledger.summary(TRAJECTORY) == fold_all(TrajectorySummary(trajectory=TRAJECTORY), records)
