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


def test_a_summary_keeps_each_day_hot_spot_profile_and_the_latest_heals() -> None:
    def run(
        status: str, day: int, *, step: int | None = None, code: str | None = None
    ) -> RunRecord:
        return _replay(status, step, minute=day * 24 * 60 + 30).model_copy(
            update={"reason_code": code, "profile": "1280x800@1x" if day else None}
        )

    records = [
        run("completed", 0),
        run("handed_back", 0, step=3, code="screen_changed"),
        run("handed_back", 1, step=3, code="screen_changed"),
        run("completed_unverified", 1),
        run("handed_back", 1, step=2, code=None),
        *(_event("healed", minute=24 * 60 + 40 + n) for n in range(7)),
        _event("invalidated", minute=2 * 24 * 60),
    ]
    s = fold_all(TrajectorySummary(trajectory="a.json"), records)
    assert sorted(s.days) == ["2026-11-25", "2026-11-26", "2026-11-27"]
    first, second, third = (s.days[d] for d in sorted(s.days))
    assert (first.runs, first.completed, first.handed_back) == (2, 1, 1)
    assert (second.runs, second.completed, second.handed_back, second.heals) == (3, 1, 2, 7)
    assert (third.runs, third.invalidations) == (0, 1)
    assert sum(d.saved_tokens for d in s.days.values()) == s.saved_tokens
    assert sum(d.model_calls for d in s.days.values()) == s.model_calls
    assert first.usage("m") == Usage(input_tokens=200, output_tokens=20)
    assert first.saved("m") == 100
    assert first.models == {"m": [200, 20, 0, 0, 100]}
    assert s.hand_backs == {
        "3|screen_changed|": 1,
        "3|screen_changed|1280x800@1x": 1,
        "2||1280x800@1x": 1,
    }
    assert (s.profiles[""].runs, s.profiles["1280x800@1x"].runs) == (2, 3)
    assert s.profiles["1280x800@1x"].handed_back == 2
    assert len(s.recent) == 5  # the latest only
    assert [n.event for n in s.recent] == ["healed"] * 4 + ["invalidated"]
    assert s.recent[-1].at == START + timedelta(days=2)


def test_an_old_summary_without_per_day_figures_still_reads() -> None:
    old = '{"trajectory": "a.json", "entries": 3, "runs": 3, "completed": 3}'
    s = TrajectorySummary.model_validate_json(old)
    assert (s.runs, s.days, s.hand_backs, s.profiles, s.recent) == (3, {}, {}, {}, [])
    later = fold(s, _replay("completed", minute=5))
    assert (later.runs, later.days["2026-11-25"].runs) == (4, 1)
