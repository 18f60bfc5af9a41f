"""Each step's past waits: what a replay's entry keeps (``run_record.step_waits``), how the
newest runs of the same steps on one profile are gathered (``collect_waits``), the steps'
digest, and the wait budget drawn from them (``wait_budget``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from askcache.agent.run_record import step_waits
from askcache.foundation.messages import ToolUseBlockParam
from askcache.replay.result import ReplayResult, StepRecord
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import (
    FolderLedger,
    RunRecord,
    StepWaits,
    steps_digest,
    wait_budget,
)
from askcache.storage.ledger.waits import WAIT_FLOOR_SECONDS, collect_waits, waits_key

START = datetime(2026, 12, 1, tzinfo=UTC)


def _run(
    waits: dict[int, float],
    *,
    minute: int,
    profile: str | None = "1280x800",
    digest: str | None = "d1",
    event: str = "replay",
) -> RunRecord:
    return RunRecord(
        trajectory="a.json",
        event=event,  # type: ignore[arg-type]
        status="completed" if event == "replay" else event,  # type: ignore[arg-type]
        started_at=START + timedelta(minutes=minute),
        profile=profile,
        steps_digest=digest,
        step_waits=waits,
    )


# -- the budget ------------------------------------------------------------------------------


def test_the_budget_is_the_99th_percentile_plus_half_of_it() -> None:
    past = [0.1 * i for i in range(1, 101)]  # 0.1 .. 10.0
    p99 = 9.9 + (10.0 - 9.9) * 0.01  # 99 % of the way from the 1st to the 100th
    budget = wait_budget(past, runs=100, settle_timeout=60)
    assert budget == pytest.approx(p99 * 1.5)


def test_one_slow_run_in_a_hundred_barely_moves_the_budget_and_two_set_it() -> None:
    fast = [0.2] * 98
    assert wait_budget([*fast, 0.2, 2.0], runs=100, settle_timeout=10) == pytest.approx(
        (0.2 + 1.8 * 0.01) * 1.5
    )
    assert wait_budget([*fast, 2.0, 2.0], runs=100, settle_timeout=10) == pytest.approx(3.0)
    assert wait_budget([2.0, *fast, 0.2], runs=100, settle_timeout=10) == pytest.approx(
        (0.2 + 1.8 * 0.01) * 1.5
    )  # in any order


def test_the_budget_is_bounded_by_settle_timeout() -> None:
    assert wait_budget([8.0] * 10, runs=10, settle_timeout=10) == 10
    assert wait_budget([30.0], runs=5, settle_timeout=10) == 10


def test_a_past_of_zeros_gives_the_floor_not_zero() -> None:
    assert wait_budget([0.0] * 50, runs=50, settle_timeout=10) == WAIT_FLOOR_SECONDS
    assert wait_budget([0.0] * 50, runs=50, settle_timeout=10, floor=0.5) == 0.5
    assert wait_budget([0.0] * 5, runs=5, settle_timeout=0.1) == 0.1  # the timeout wins


def test_no_budget_before_enough_runs_or_when_the_step_never_passed() -> None:
    assert wait_budget([0.1] * 4, runs=4, settle_timeout=10) is None
    assert wait_budget([], runs=50, settle_timeout=10) is None
    assert wait_budget([0.1], runs=5, settle_timeout=10) == WAIT_FLOOR_SECONDS
    assert wait_budget([0.1] * 2, runs=2, settle_timeout=10, min_runs=2) is not None


def test_waits_that_are_no_number_are_left_out_and_negative_ones_count_as_zero() -> None:
    assert wait_budget([float("nan"), float("inf")], runs=9, settle_timeout=10) is None
    assert wait_budget([-3.0, 1.0, float("nan")], runs=9, settle_timeout=10) == pytest.approx(
        (0.0 + 1.0 * 0.99) * 1.5
    )


# -- what an entry keeps ---------------------------------------------------------------------


def _step(
    index: int, waited: float, *, validated: bool = True, matched: bool | None = True
) -> StepRecord:
    return StepRecord(
        step_index=index,
        action="left_click",
        validated=validated,
        matched=matched if validated else None,
        waited_seconds=waited,
    )


def test_an_entry_keeps_the_waits_of_checked_steps_that_acted() -> None:
    result = ReplayResult(
        cache_file="a.json",
        steps_total=6,
        status="completed",
        steps=[
            _step(0, 0.0, validated=False),  # a screenshot: not checked
            _step(1, 1.23456),
            _step(2, 0.0),
            _step(3, 0.5, validated=False),  # skip_visual_validation
            _step(4, 0.04),
        ],
    )
    assert step_waits(result) == {1: 1.235, 2: 0.0, 4: 0.04}


def test_a_step_handed_back_at_gives_no_wait_even_after_a_re_join() -> None:
    result = ReplayResult(
        cache_file="a.json",
        steps_total=5,
        status="handed_back",
        stopped_at_step=4,
        handback_steps=[2, 4],
        steps=[
            _step(1, 0.1),
            _step(2, 10.0, matched=False),  # refused after waiting settle_timeout
            _step(2, 0.2),  # passed after the model put the screen back
            _step(3, 0.3),
            _step(4, 10.0),  # acted, its effect never came: waited for it
        ],
    )
    assert step_waits(result) == {1: 0.1, 3: 0.3}


def test_no_wait_is_kept_from_the_first_variant_taken_on() -> None:
    result = ReplayResult(
        cache_file="a.json",
        steps_total=5,
        status="completed",
        variants_used=[2],
        steps=[_step(1, 0.1), _step(2, 0.2), _step(3, 0.3)],
    )
    assert step_waits(result) == {1: 0.1}


def test_an_old_json_entry_without_waits_still_reads_and_gives_none(tmp_path: Path) -> None:
    storage = LocalCacheStorage(tmp_path)
    old = {  # askcache 0.1's entry: no profile, digest or waits
        "trajectory": "a.json",
        "event": "replay",
        "status": "completed",
        "started_at": "2026-01-01T00:00:00Z",
        "seconds": 1.5,
        "steps_total": 3,
        "steps_run": 3,
    }
    storage.write(".ledger/a.json/20260101T000000.000000Z-old.json", json.dumps(old).encode())
    ledger = FolderLedger(storage)
    ledger.append(_run({1: 0.5}, minute=0))
    assert [r.steps_digest for r in ledger.records("a.json")] == [None, "d1"]
    waits = ledger.step_waits("a.json", profile="1280x800", digest="d1")
    assert waits == StepWaits(runs=1, waits={1: [0.5]})


def test_waits_survive_the_entry_s_json() -> None:
    record = _run({3: 0.25, 10: 1.5}, minute=0)
    again = RunRecord.model_validate_json(record.model_dump_json())
    assert again.step_waits == {3: 0.25, 10: 1.5}
    assert waits_key(again) == "d1 1280x800"
    assert waits_key(_run({}, minute=0, profile=None)) == "d1 "
    assert waits_key(_run({}, minute=0, digest=None)) is None
    assert waits_key(_run({}, minute=0, event="healed")) is None


# -- gathering them --------------------------------------------------------------------------


def test_the_newest_runs_of_the_same_steps_on_the_profile_newest_first() -> None:
    records = [
        _run({1: 0.1, 2: 0.0}, minute=0),
        _run({1: 0.3}, minute=2),
        _run({}, minute=3),  # handed back at its first step: a run all the same
        _run({1: 0.2, 2: 0.5}, minute=1),
        _run({1: 9.0}, minute=4, profile="2560x1600@2x"),  # another profile
        _run({1: 9.0}, minute=5, profile=None),  # profile unknown
        _run({1: 9.0}, minute=6, digest="d2"),  # other steps (healed since)
        _run({1: 9.0}, minute=7, digest=None),  # before askcache kept waits
        _run({}, minute=8, event="healed"),
    ]
    assert collect_waits(records, profile="1280x800", digest="d1", limit=50) == StepWaits(
        runs=4, waits={1: [0.3, 0.2, 0.1], 2: [0.5, 0.0]}
    )
    assert collect_waits(records, profile="1280x800", digest="d1", limit=2) == StepWaits(
        runs=2, waits={1: [0.3]}
    )
    assert collect_waits(records, profile=None, digest="d1", limit=50) == StepWaits(
        runs=1, waits={1: [9.0]}
    )
    assert collect_waits(records, profile="1280x800", digest="d3", limit=50) == StepWaits()


def test_the_digest_changes_with_any_step_and_not_with_anything_else() -> None:
    steps = [
        ToolUseBlockParam(id="toolu_1", name="computer", input={"action": "screenshot"}),
        ToolUseBlockParam(
            id="toolu_2", name="computer", input={"action": "type", "text": "{{name}}"}
        ),
    ]
    digest = steps_digest(steps)
    assert len(digest) == 16
    assert set(digest) <= set("0123456789abcdef")
    assert steps_digest([s.model_copy(deep=True) for s in steps]) == digest
    assert steps_digest(steps[:1]) != digest
    assert steps_digest(list(reversed(steps))) != digest
    changed = steps[1].model_copy(update={"input": {"action": "type", "text": "{{other}}"}})
    assert steps_digest([steps[0], changed]) != digest
