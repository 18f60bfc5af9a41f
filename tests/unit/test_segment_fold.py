"""What one compaction of the S3 run ledger writes (``fold_generation``), without a storage."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from askcache.storage.ledger import RunRecord
from askcache.storage.ledger.segment_fold import fold_generation, merge_candidate
from askcache.storage.ledger.segment_objects import stem_at
from askcache.storage.ledger.summary import TrajectorySummary, fold_all

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _entries(first: int, count: int) -> dict[str, RunRecord]:
    found = {}
    for n in range(first, first + count):
        record = RunRecord(
            trajectory="login.json",
            status="handed_back" if n % 2 else "completed",
            stopped_at_step=1 if n % 2 else None,
            started_at=T0 + timedelta(days=n),
            model_calls=n,
        )
        found[f"{stem_at(record.started_at)}-e{n:03d}"] = record
    return found


def test_each_fold_adds_a_segment_row_and_its_entries_to_the_summary() -> None:
    first, second = _entries(0, 3), _entries(3, 4)
    one = fold_generation("login.json", None, first, cutoff=None)
    two = fold_generation("login.json", one.generation, second, cutoff=None)
    assert (one.generation.generation, two.generation.generation) == (1, 2)
    assert two.segment.entries == second
    assert two.generation.folded == list(second)
    assert [(r.segment, r.entries) for r in two.generation.segments] == [
        (one.segment_name, 3),
        (two.segment_name, 4),
    ]
    assert two.generation.segments[1].first == min(second)
    everything = [*first.values(), *second.values()]
    expected = fold_all(TrajectorySummary(trajectory="login.json"), everything)
    assert two.generation.summary == expected
    assert two.dropped == []


def test_the_retention_drops_only_segments_whose_entries_are_all_older() -> None:
    one = fold_generation("login.json", None, _entries(0, 3), cutoff=None)
    two = fold_generation("login.json", one.generation, _entries(3, 3), cutoff=None)
    three = fold_generation(
        "login.json", two.generation, _entries(6, 1), cutoff=stem_at(T0 + timedelta(days=4))
    )
    assert [r.segment for r in three.dropped] == [one.segment_name]
    assert three.generation.retired == [one.segment_name]  # deleted after the grace period
    assert [r.segment for r in three.generation.segments] == [
        two.segment_name,
        three.segment_name,
    ]
    assert three.generation.summary.runs == 7  # the summary keeps every entry


def test_a_small_newest_segment_is_merged_into_the_next_and_retired() -> None:
    one = fold_generation("login.json", None, _entries(0, 3), cutoff=None)
    assert merge_candidate(one.generation, 4, cutoff=None, max_fold=7) == one.generation.segments[0]
    assert merge_candidate(one.generation, 5, cutoff=None, max_fold=7) is None  # would not fit
    second = _entries(3, 4)
    two = fold_generation(
        "login.json", one.generation, second, cutoff=None, merge=one.segment, retired=["old.json"]
    )
    assert two.segment.entries == {**one.segment.entries, **second}
    [row] = two.generation.segments
    assert (row.segment, row.first, row.last, row.entries) == (
        two.segment_name,
        min(one.segment.entries),
        max(second),
        7,
    )
    merged = two.generation.merged
    assert merged is not None
    assert (merged.segment, merged.first, merged.last) == (
        two.segment_name,
        min(one.segment.entries),
        max(one.segment.entries),
    )
    assert two.generation.folded == list(second)  # what the loose entries were
    assert two.generation.retired == ["old.json", one.segment_name]
    assert two.generation.summary.runs == 7
