"""The S3 run ledger deletes what a newer generation no longer lists only after the grace period
(moto's real S3 API server; the ledger's clock injected, so nothing waits on the wall clock):
a reader working from the generation before never misses an entry it holds."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from askcache.storage.ledger import RunRecord
from askcache.storage.ledger.segment_grace import GENERATION_GRACE_SECONDS
from askcache.storage.ledger.segment_objects import SEGMENTS_FOLDER, SUMMARIES_FOLDER, Generation
from askcache.storage.ledger.segments import SegmentLedger
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


class _PausingStorage(FsspecCacheStorage):
    """The real S3 storage, which runs ``meanwhile`` once, just before it first reads a
    segment: the reader has listed the trajectory and read its generation by then."""

    meanwhile: Callable[[], None] | None = None

    def read_many(self, names: Iterable[str]) -> dict[str, bytes]:
        names = list(names)
        if self.meanwhile and any(n.startswith(SEGMENTS_FOLDER + "/") for n in names):
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        return super().read_many(names)


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


def test_a_reader_working_from_the_generation_before_a_prune_reads_every_entry_it_holds(
    s3_url: str,
) -> None:
    writer = SegmentLedger(_s3(s3_url), compact_after=3, retention_days=None, check_every=1)
    records = _append(writer, range(12))
    writer.compact(TRAJECTORY, force=True)  # one segment (merged) holds all 12
    storage = _PausingStorage(s3_url)
    pruned: list[int] = []
    storage.meanwhile = lambda: pruned.append(writer.prune(T0 + timedelta(seconds=5)))
    assert SegmentLedger(storage).records(TRAJECTORY) == records  # its generation's entries
    assert pruned == [5]  # the segment was rewritten without 0..4 meanwhile
    assert SegmentLedger(_s3(s3_url)).records(TRAJECTORY) == records[5:]


def test_a_reader_whose_segment_was_deleted_meanwhile_lists_again(s3_url: str) -> None:
    ahead = _Clock(datetime.now(UTC) + timedelta(hours=1))  # a machine whose clock runs ahead
    writer = SegmentLedger(
        _s3(s3_url), compact_after=3, retention_days=None, check_every=1, clock=ahead
    )
    records = _append(writer, range(12))
    writer.compact(TRAJECTORY, force=True)
    later: list[RunRecord] = []

    def prune_and_compact_past_the_grace() -> None:
        assert writer.prune(T0 + timedelta(seconds=5)) == 5
        ahead.advance(GENERATION_GRACE_SECONDS)
        later.extend(_append(writer, range(20, 22)))
        writer.compact(TRAJECTORY, force=True)  # deletes the segment the reader's generation lists

    storage = _PausingStorage(s3_url)
    storage.meanwhile = prune_and_compact_past_the_grace
    assert SegmentLedger(storage).records(TRAJECTORY) == [*records[5:], *later]


def test_a_resent_entry_whose_segment_was_deleted_meanwhile_is_not_counted_again(
    s3_url: str,
) -> None:
    ahead = _Clock(datetime.now(UTC) + timedelta(hours=1))
    writer = SegmentLedger(_s3(s3_url), retention_days=None, check_every=100_000, clock=ahead)
    records = _append(writer, range(6))
    writer.compact(TRAJECTORY, force=True)
    records += _append(writer, range(6, 9))
    writer.compact(TRAJECTORY, force=True)  # merged: its segment holds 0..8
    writer.append(records[3], entry_id="e003")  # the outbox sends it again

    def merge_it_away_past_the_grace() -> None:
        records.extend(_append(writer, range(9, 11)))
        writer.compact(TRAJECTORY, force=True)
        ahead.advance(GENERATION_GRACE_SECONDS)
        records.extend(_append(writer, range(11, 12)))
        writer.compact(TRAJECTORY, force=True)  # deletes the segment the reader looks in

    storage = _PausingStorage(s3_url)
    storage.meanwhile = merge_it_away_past_the_grace
    summary = SegmentLedger(storage).summary(TRAJECTORY)
    assert len(records) == 12
    assert summary == fold_all(TrajectorySummary(trajectory=TRAJECTORY), records)


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


def test_segments_the_retention_drops_in_a_compaction_wait_for_the_grace_period(
    s3_url: str,
) -> None:
    clock = _Clock(T0 + timedelta(days=90, seconds=1))  # the retention keeps stems from T0 + 1 s
    storage = _s3(s3_url)
    ledger = SegmentLedger(storage, retention_days=90, max_fold=3, check_every=100_000, clock=clock)
    records = _append(ledger, range(0, 3))
    ledger.compact(TRAJECTORY, force=True)
    [old] = _segments(storage)
    clock.advance(2)  # now from T0 + 3 s: the first segment (T0 .. T0 + 2 s) is dropped
    records += _append(ledger, range(3, 6))
    ledger.compact(TRAJECTORY, force=True)
    second = _generations(storage)[2]
    assert old not in {row.segment for row in second.segments}
    assert second.retired == [old]
    assert old in _segments(storage)  # a reader of the 1st generation still finds it
    assert ledger.records(TRAJECTORY) == records[3:]
    clock.advance(GENERATION_GRACE_SECONDS)  # the retention now drops the second one too
    records += _append(ledger, range(6, 9))
    ledger.compact(TRAJECTORY, force=True)
    assert old not in _segments(storage)
    assert sorted(_generations(storage)) == [2, 3]
    assert _generations(storage)[3].retired == [second.segments[0].segment]
    assert ledger.records(TRAJECTORY) == records[6:]
    expected = fold_all(TrajectorySummary(trajectory=TRAJECTORY), records)
    assert ledger.summary(TRAJECTORY) == expected  # the summary keeps every entry
