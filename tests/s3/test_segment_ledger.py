"""The S3 run-ledger engine (moto's real S3 API server): compaction into segments and
summaries, with processes appending and compacting at once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from askcache.cli.app import main
from askcache.storage.ledger import FolderLedger, RunRecord, open_ledger
from askcache.storage.ledger.segment_objects import (
    SEGMENTS_FOLDER,
    SUMMARIES_FOLDER,
    SUMMARY_CACHE_NAME,
    Claim,
    Generation,
    SummaryCache,
    claim_name,
)
from askcache.storage.ledger.segments import SegmentLedger
from askcache.storage.ledger.summary import TrajectorySummary, fold_all
from askcache.storage.remote import FsspecCacheStorage, storage_for

ROOT = Path(__file__).parents[2]
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _record(n: int, trajectory: str = "team/login.json") -> RunRecord:
    return RunRecord(
        trajectory=trajectory,
        status="handed_back" if n % 3 else "completed",
        stopped_at_step=2 if n % 3 else None,
        started_at=T0 + timedelta(seconds=n),
        model_calls=n,
    )


def test_compacted_reads_equal_folding_every_entry(s3_url: str) -> None:
    storage = storage_for(s3_url)
    ledger = SegmentLedger(storage, compact_after=4, retention_days=None, check_every=1)
    records = [_record(n) for n in range(20)]
    for n, record in enumerate(records):
        ledger.append(record, entry_id=f"e{n:03d}")
    ledger.append(records[3], entry_id="e003")  # already folded and deleted: sent again
    expected = fold_all(TrajectorySummary(trajectory="team/login.json"), records)
    assert ledger.summary("team/login.json") == expected
    assert ledger.summaries() == [expected]
    assert ledger.records("team/login.json") == records
    assert ledger.records(limit=2) == records[-2:]
    assert ledger.consecutive_failures("team/login.json") == (expected.failure_streak, 2)
    loose = storage.list_prefix(".ledger/team/login.json")
    assert len(loose) <= 5  # the rest were folded into segments
    assert storage.list_prefix(SUMMARIES_FOLDER)
    assert storage.list_prefix(SEGMENTS_FOLDER)
    assert storage.list_names() == []  # none of it is a cache file


def test_a_ledger_written_by_the_folder_engine_is_read_then_compacted_by_sync(
    s3_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = storage_for(s3_url)
    records = [_record(n, "old.json") for n in range(40)]
    for record in records:
        FolderLedger(storage).append(record)  # as askcache 0.1 wrote them
    ledger = open_ledger(storage)
    assert isinstance(ledger, SegmentLedger)  # the default for an S3 cache
    expected = fold_all(TrajectorySummary(trajectory="old.json"), records)
    assert ledger.summary("old.json") == expected
    assert main(["sync", "--cache-dir", s3_url, "--outbox-dir", str(tmp_path)]) == 0
    assert "compacted 40 run-ledger entries" in capsys.readouterr().out
    assert storage.list_prefix(".ledger") == []
    assert ledger.summary("old.json") == expected
    assert ledger.records("old.json") == records


def test_retention_drops_old_segments_and_keeps_the_summary(s3_url: str) -> None:
    storage = storage_for(s3_url)
    ledger = SegmentLedger(storage, compact_after=3, retention_days=None, check_every=1)
    records = [_record(n) for n in range(12)]
    for record in records:
        ledger.append(record)
    before = ledger.summary("team/login.json")
    dropped = ledger.prune(T0 + timedelta(seconds=8))
    assert dropped >= 4
    kept = ledger.records("team/login.json")
    assert len(kept) == 12 - dropped
    assert all(r.started_at >= T0 + timedelta(seconds=4) for r in kept)
    assert ledger.summary("team/login.json") == before


def test_an_unreadable_entry_is_skipped_with_a_warning_naming_it(
    s3_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    storage = storage_for(s3_url)
    ledger = SegmentLedger(storage, compact_after=2)
    for n in range(4):
        ledger.append(_record(n))
    storage.create(".ledger/team/login.json/20261101T000000.000000Z-junk.json", b"{not json")
    summary = ledger.summary("team/login.json")
    assert summary is not None
    assert summary.entries == 4
    assert "20261101T000000.000000Z-junk.json" in caplog.text


def test_eight_processes_appending_and_compacting_lose_and_double_count_nothing(
    s3_url: str,
) -> None:
    workers, entries = 8, 30
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.s3.ledger_worker", s3_url, str(w), str(entries), "5"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert out.strip().splitlines()[-1] == str(entries)
    ledger = SegmentLedger(storage_for(s3_url), compact_after=5)
    summary = ledger.summary("shared.json")
    assert summary is not None
    assert (summary.entries, summary.runs, summary.model_calls) == (240, 240, 240)
    assert (summary.completed, summary.handed_back) == (120, 120)
    hosts = Counter(r.host for r in ledger.records("shared.json"))
    assert hosts == {f"worker-{w}": entries for w in range(workers)}
    ledger.compact("shared.json", force=True)
    assert ledger.summary("shared.json") == summary


def test_summaries_come_from_the_cache_only_while_it_matches(s3_url: str) -> None:
    storage = storage_for(s3_url)
    ledger = SegmentLedger(storage, compact_after=3)
    for n in range(8):
        ledger.append(_record(n, f"t{n % 2}.json"))
    first = ledger.summaries()
    cache = SummaryCache.model_validate_json(storage.read(SUMMARY_CACHE_NAME))
    marked = cache.summaries["t0.json"].summary
    assert marked == first[0]
    marked.model_calls = 999  # a mark: only a cache hit returns it
    storage.write(SUMMARY_CACHE_NAME, cache.model_dump_json().encode())
    assert SegmentLedger(storage).summaries() == [marked, first[1]]
    ledger.append(_record(10, "t0.json"))  # t0 changed: computed again
    again = SegmentLedger(storage).summaries()
    assert again[0] == ledger.summary("t0.json")
    assert again[0].entries == first[0].entries + 1
    assert again[0].model_calls == first[0].model_calls + 10
    storage.write(SUMMARY_CACHE_NAME, b"{damaged")
    assert SegmentLedger(storage).summaries() == again


class _CountingStorage(FsspecCacheStorage):
    """The real S3 storage, counting its listings."""

    listings = 0

    def list_prefix(self, prefix: str) -> list[str]:
        self.listings += 1
        return super().list_prefix(prefix)


def test_most_appends_make_one_request_and_the_few_that_list_keep_it_compacted(
    s3_url: str,
) -> None:
    storage = _CountingStorage(s3_url)
    ledger = SegmentLedger(storage, compact_after=4, retention_days=None)  # check_every=8
    records = [_record(n) for n in range(64)]
    for n, record in enumerate(records):
        ledger.append(record, entry_id=f"e{n:03d}")
    assert storage.listings < len(records) / 2
    assert storage.list_prefix(SEGMENTS_FOLDER)  # the appends that listed compacted
    assert len(storage.list_prefix(".ledger/team/login.json")) < len(records)
    expected = fold_all(TrajectorySummary(trajectory="team/login.json"), records)
    assert ledger.summary("team/login.json") == expected
    assert ledger.records("team/login.json") == records


def _claim(storage: FsspecCacheStorage, generation: int, age: timedelta) -> str:
    name = claim_name("team/login.json", generation, 0)
    claimed = Claim(created_at=datetime.now(UTC) - age)
    storage.create(name, claimed.model_dump_json().encode())
    return name


def test_a_compaction_claimed_by_another_process_is_left_to_it_until_its_claim_is_stale(
    s3_url: str,
) -> None:
    storage = storage_for(s3_url)
    assert isinstance(storage, FsspecCacheStorage)
    ledger = SegmentLedger(storage, compact_after=2, retention_days=None, check_every=100_000)
    records = [_record(n) for n in range(6)]
    for n, record in enumerate(records):
        ledger.append(record, entry_id=f"e{n:03d}")
    held = _claim(storage, 1, timedelta(seconds=5))  # another machine compacting right now
    assert ledger.compact("team/login.json") == 0
    assert len(storage.list_prefix(".ledger/team/login.json")) == 6
    assert storage.list_prefix(SEGMENTS_FOLDER) == []
    storage.delete(held)
    _claim(storage, 1, timedelta(hours=1))  # its owner was killed long ago
    assert ledger.compact("team/login.json") == 6  # taken over
    assert storage.list_prefix(".ledger/team/login.json") == []
    assert [n for n in storage.list_prefix(SUMMARIES_FOLDER) if "claim-" in n] == []
    expected = fold_all(TrajectorySummary(trajectory="team/login.json"), records)
    assert ledger.summary("team/login.json") == expected


def test_small_segments_are_merged_so_the_table_stays_short_and_resent_entries_are_found(
    s3_url: str,
) -> None:
    storage = storage_for(s3_url)
    ledger = SegmentLedger(
        storage, compact_after=2, retention_days=None, max_fold=10, check_every=1
    )
    records = [_record(n) for n in range(40)]
    for n, record in enumerate(records):
        ledger.append(record, entry_id=f"e{n:03d}")
    for n in (1, 12, 37):  # folded (merged, or in the newest segment), then sent again
        ledger.append(records[n], entry_id=f"e{n:03d}")
    generations = [n for n in storage.list_prefix(SUMMARIES_FOLDER) if "summary-" in n]
    newest = Generation.model_validate_json(storage.read(max(generations)))
    assert newest.generation >= 10  # compacted about every 3 appends ...
    assert len(newest.segments) <= 5  # ... into segments of up to 10 entries
    assert (
        sum(row.entries for row in newest.segments)
        + len(storage.list_prefix(".ledger/team/login.json"))
        >= 40
    )
    expected = fold_all(TrajectorySummary(trajectory="team/login.json"), records)
    assert ledger.summary("team/login.json") == expected
    assert ledger.records("team/login.json") == records


class _ReadCountingStorage(FsspecCacheStorage):
    """The real S3 storage, keeping the names of the segments it read."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.segments_read: list[str] = []

    def read_many(self, names: Iterable[str]) -> dict[str, bytes]:
        names = list(names)
        self.segments_read += [name for name in names if name.startswith(SEGMENTS_FOLDER)]
        return super().read_many(names)


def test_step_waits_read_the_newest_segments_only(s3_url: str) -> None:
    storage = _ReadCountingStorage(s3_url)
    ledger = SegmentLedger(storage, compact_after=4, max_fold=5, retention_days=None, check_every=1)
    for n in range(40):
        record = _record(n).model_copy(
            update={"profile": "1280x800", "steps_digest": "d1", "step_waits": {2: n / 100}}
        )
        ledger.append(record, entry_id=f"e{n:03d}")
    generation = Generation.model_validate_json(
        storage.read(storage.list_prefix(f"{SUMMARIES_FOLDER}/team/login.json")[-1])
    )
    assert len(generation.segments) >= 6  # the runs lie in many segments
    storage.segments_read.clear()
    waits = ledger.step_waits("team/login.json", profile="1280x800", digest="d1", limit=8)
    assert waits.runs == 8
    assert waits.waits == {2: [n / 100 for n in range(39, 31, -1)]}
    assert 1 <= len(storage.segments_read) <= 2  # the loose entries and the newest segments
    storage.segments_read.clear()
    everything = ledger.step_waits("team/login.json", profile="1280x800", digest="d1")
    assert everything.waits == {2: [n / 100 for n in range(39, -1, -1)]}
    assert len(storage.segments_read) == len(generation.segments)
