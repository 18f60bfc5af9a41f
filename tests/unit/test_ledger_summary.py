"""The ledger's aggregates: fold adds an entry, merge joins two stretches of entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from askcache.foundation.messages import Usage
from askcache.storage.ledger import RunRecord, TrajectorySummary, fold, merge
from askcache.storage.ledger.summary import fold_all

START = datetime(2026, 11, 25, tzinfo=UTC)


def _replay(
    status: str, step: int | None = None, *, minute: int = 0, model: str | None = "m"
) -> RunRecord:
    return RunRecord(
        trajectory="a.json",
        status=status,  # type: ignore[arg-type]
        stopped_at_step=step,
        started_at=START + timedelta(minutes=minute),
        model_calls=2,
        usage=Usage(input_tokens=100, output_tokens=10),
        saved_tokens=50,
        saved_model_calls=3,
        saved_seconds=1.5,
        model=model,
    )


def _event(event: str, *, minute: int = 0) -> RunRecord:
    return RunRecord(
        trajectory="a.json",
        event=event,  # type: ignore[arg-type]
        status="refused" if event == "invalidated" else event,  # type: ignore[arg-type]
        started_at=START + timedelta(minutes=minute),
        attempts=4,
        successes=3,
        model_calls=7,
    )


def test_fold_counts_replays_spending_per_model_and_other_events() -> None:
    records = [
        _replay("completed", minute=0),
        _replay("handed_back", 3, minute=1, model=None),
        _event("healed", minute=2),
        _event("imported", minute=3),
        _replay("completed_unverified", minute=4),
    ]
    s = fold_all(TrajectorySummary(trajectory="a.json"), records)
    assert (s.entries, s.runs, s.completed, s.completed_unverified, s.handed_back) == (
        5,
        3,
        1,
        1,
        1,
    )
    assert (s.heals, s.imported, s.imported_attempts, s.imported_successes) == (1, True, 4, 3)
    assert s.model_calls == 6  # a heal entry's calls are the replay's: not counted twice
    assert s.by_model["m"].runs == 2
    assert s.by_model[""].runs == 1
    assert s.by_model["m"].usage == Usage(input_tokens=200, output_tokens=20)
    assert s.tokens == 330
    assert s.saved_tokens == 150
    assert s.saved_seconds == 4.5
    assert (s.first_at, s.last_at) == (START, START + timedelta(minutes=4))


def test_fold_does_not_change_its_argument() -> None:
    empty = TrajectorySummary(trajectory="a.json")
    once = fold(empty, _replay("completed"))
    assert empty.runs == 0
    assert empty.by_model == {}
    assert fold(once, _replay("completed")).by_model["m"].runs == 2
    assert once.by_model["m"].runs == 1


def test_the_streak_counts_hand_backs_at_one_step_and_a_heal_ends_it() -> None:
    s = TrajectorySummary(trajectory="a.json")
    for record, expected in [
        (_replay("handed_back", 2), (1, 2)),
        (_replay("handed_back", 2), (2, 2)),
        (_event("invalidated"), (2, 2)),  # other events leave it
        (_replay("handed_back", 5), (1, 5)),
        (_replay("handed_back", 5), (2, 5)),
        (_event("healed"), (0, None)),
        (_replay("handed_back", 5), (1, 5)),
        (_replay("completed"), (0, None)),
    ]:
        s = fold(s, record)
        assert (s.failure_streak, s.failure_step) == expected


_RECORDS = st.one_of(
    st.builds(
        _replay,
        st.sampled_from(["completed", "handed_back", "refused", "interrupted"]),
        st.sampled_from([None, 1, 2]),
        minute=st.integers(0, 100),
        model=st.sampled_from([None, "m", "n"]),
    ),
    st.builds(
        _event,
        st.sampled_from(["healed", "proposed", "invalidated", "imported"]),
        minute=st.integers(0, 100),
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_RECORDS, max_size=12), st.lists(_RECORDS, max_size=12), st.data())
def test_merging_two_stretches_equals_folding_them_in_order(
    first: list[RunRecord], second: list[RunRecord], data: st.DataObject
) -> None:
    empty = TrajectorySummary(trajectory="a.json")
    third = data.draw(st.lists(_RECORDS, max_size=6))
    whole = fold_all(empty, first + second + third)
    a, b, c = (fold_all(empty, part) for part in (first, second, third))
    for merged in (merge(merge(a, b), c), merge(a, merge(b, c))):
        assert merged.model_dump(exclude={"saved_seconds"}) == whole.model_dump(
            exclude={"saved_seconds"}
        )
        assert abs(merged.saved_seconds - whole.saved_seconds) < 1e-9
