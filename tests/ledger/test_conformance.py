"""What every run-ledger engine does, the same way (tests/ledger/engines.py lists them)."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from askcache.foundation.errors import LedgerUrlError
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import (
    RunLedger,
    RunRecord,
    StepWaits,
    TrajectorySummary,
    open_ledger,
)
from askcache.storage.ledger.summary import fold_all
from tests.ledger.engines import ENGINES, EngineSetup

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime.now(UTC).replace(microsecond=0)


def _run(
    trajectory: str,
    status: str,
    step: int | None = None,
    *,
    minutes: float = 0,
    event: str = "replay",
) -> RunRecord:
    return RunRecord(
        trajectory=trajectory,
        event=event,  # type: ignore[arg-type]
        status=status,  # type: ignore[arg-type]
        stopped_at_step=step,
        started_at=NOW + timedelta(minutes=minutes),
        model_calls=1,
        saved_tokens=10,
        model="claude-sonnet-4-5",
    )


def test_an_entry_appended_twice_with_its_id_is_stored_and_counted_once(
    ledger: RunLedger,
) -> None:
    entry_id = ledger.new_entry_id()
    record = _run("a.json", "completed")
    first = ledger.append(record, entry_id=entry_id)
    assert ledger.append(record, entry_id=entry_id) == first
    ledger.append(_run("a.json", "handed_back", 2, minutes=1))
    assert [r.status for r in ledger.records("a.json")] == ["completed", "handed_back"]
    summary = ledger.summary("a.json")
    assert summary is not None
    assert (summary.entries, summary.runs, summary.completed) == (2, 2, 1)


def test_the_hand_back_code_is_kept_beside_the_reason(ledger: RunLedger) -> None:
    handed = _run("a.json", "handed_back", 2).model_copy(
        update={"reason": "the label at the action point now reads 'Send'"}
    )
    handed.reason_code = "label_changed"
    ledger.append(handed)
    ledger.append(_run("a.json", "completed", minutes=1))
    codes = [(r.status, r.reason_code) for r in ledger.records("a.json")]
    assert codes == [("handed_back", "label_changed"), ("completed", None)]


def test_summaries_are_the_fold_of_the_entries(ledger: RunLedger) -> None:
    script = [
        _run("b.json", "completed", minutes=0),
        _run("a.json", "handed_back", 1, minutes=1),
        _run("a.json", "completed", minutes=2, event="healed"),
        _run("b.json", "refused", minutes=3, event="invalidated"),
        _run("a.json", "completed_unverified", minutes=4),
        _run("b.json", "interrupted", minutes=5),
    ]
    for record in script:
        ledger.append(record)
    expected = {
        name: fold_all(TrajectorySummary(trajectory=name), ledger.records(name))
        for name in ("a.json", "b.json")
    }
    assert ledger.summaries() == [expected["a.json"], expected["b.json"]]
    assert ledger.summary("b.json") == expected["b.json"]
    assert expected["b.json"].runs == 2
    assert expected["b.json"].invalidations == 1
    assert ledger.summary("nothing.json") is None
    assert [r.trajectory for r in ledger.records()] == [r.trajectory for r in script]


def test_records_since_and_the_newest_few_oldest_first(ledger: RunLedger) -> None:
    for minute in range(5):
        ledger.append(
            _run("a.json", "completed", minutes=minute).model_copy(update={"pid": minute})
        )
    assert [r.pid for r in ledger.records("a.json", limit=2)] == [3, 4]
    assert [r.pid for r in ledger.records("a.json", since=NOW + timedelta(minutes=3))] == [3, 4]
    assert [r.pid for r in ledger.records(limit=0)] == []


def test_the_checks_a_run_loosened_are_kept_as_written(
    ledger: RunLedger,
) -> None:
    said = [
        ["visual_validation_threshold 2 -> 10 (model)"],
        [],
        ["skip_visual_validation False -> True (settings)", "end_state report -> off (settings)"],
    ]
    for minute, loosened in enumerate(said):  # past one segment where the engine compacts
        ledger.append(
            _run("a.json", "completed", minutes=minute).model_copy(update={"loosened": loosened})
        )
    assert [r.loosened for r in ledger.records("a.json")] == said


def test_the_streak_of_hand_backs_at_one_step_and_a_heal_ends_it(ledger: RunLedger) -> None:
    assert ledger.consecutive_failures("a.json") == (0, None)
    steps = [("handed_back", 1), ("handed_back", 2), ("handed_back", 2), ("handed_back", 2)]
    for minute, (status, step) in enumerate(steps):
        ledger.append(_run("a.json", status, step, minutes=minute))
    ledger.append(_run("b.json", "handed_back", 2, minutes=9))
    assert ledger.consecutive_failures("a.json") == (3, 2)
    ledger.append(_run("a.json", "refused", minutes=10, event="invalidated"))
    assert ledger.consecutive_failures("a.json") == (3, 2)  # other events leave it
    ledger.append(_run("a.json", "healed", minutes=11, event="healed"))
    assert ledger.consecutive_failures("a.json") == (0, None)


def test_pruning_drops_old_entries_and_keeps_the_summaries(ledger: RunLedger) -> None:
    if not ledger.supports_retention:
        pytest.skip(f"{type(ledger).__name__} keeps every entry")
    for days in (200, 100, 1):
        ledger.append(_run("a.json", "completed", minutes=-days * 24 * 60))
    before = ledger.summary("a.json")
    assert ledger.prune(NOW - timedelta(days=90)) == 2
    assert len(ledger.records("a.json")) == 1
    assert ledger.summary("a.json") == before
    assert before is not None
    assert before.runs == 3


def test_an_unreadable_entry_is_skipped_with_a_warning_naming_it(
    engine: EngineSetup, location: str, ledger: RunLedger, caplog: pytest.LogCaptureFixture
) -> None:
    ledger.append(_run("a.json", "completed"))
    name = engine.plant_unreadable(location, "a.json")
    with caplog.at_level(logging.WARNING):
        assert [r.status for r in ledger.records("a.json")] == ["completed"]
    assert name in caplog.text


def test_a_malformed_url_of_the_engine_is_refused_naming_the_setting(
    engine: EngineSetup, tmp_path: Path
) -> None:
    if engine.bad_url is None:
        pytest.skip("the engine has no URL")
    with pytest.raises(LedgerUrlError, match=r"^--ledger "):
        open_ledger(LocalCacheStorage(tmp_path), engine.bad_url, source="--ledger")


def _waits(
    waits: dict[int, float],
    minutes: float,
    *,
    profile: str | None = "1280x800",
    digest: str | None = "d1",
    event: str = "replay",
) -> RunRecord:
    return _run(
        "a.json", "completed" if event == "replay" else event, minutes=minutes, event=event
    ).model_copy(update={"profile": profile, "steps_digest": digest, "step_waits": waits})


def test_each_step_s_waits_from_the_newest_runs_of_its_steps_on_one_profile(
    ledger: RunLedger,
) -> None:
    assert ledger.step_waits("a.json", profile="1280x800", digest="d1") == StepWaits()
    for minute in range(10):  # enough for the S3 engine to compact them into segments
        ledger.append(_waits({1: minute / 10, 3: 0.0}, minute))
    ledger.append(_waits({}, 10))  # handed back at its first step
    ledger.append(_waits({1: 9.0}, 11, profile="2560x1600@2x"))
    ledger.append(_waits({1: 8.0}, 12, profile=None))
    ledger.append(_waits({1: 7.0}, 13, digest="d2"))
    ledger.append(_waits({1: 6.0}, 14, digest=None))  # written before askcache kept waits
    ledger.append(_waits({}, 15, event="healed"))
    ledger.append(
        _run("b.json", "completed", minutes=16).model_copy(
            update={"profile": "1280x800", "steps_digest": "d1", "step_waits": {1: 5.0}}
        )
    )
    everything = ledger.step_waits("a.json", profile="1280x800", digest="d1")
    assert everything.runs == 11
    assert everything.waits == {
        1: [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0],
        3: [0.0] * 10,
    }
    newest = ledger.step_waits("a.json", profile="1280x800", digest="d1", limit=3)
    assert newest == StepWaits(runs=3, waits={1: [0.9, 0.8], 3: [0.0, 0.0]})
    assert ledger.step_waits("a.json", profile=None, digest="d1") == StepWaits(
        runs=1, waits={1: [8.0]}
    )
    assert ledger.step_waits("a.json", profile="1280x800", digest="d2").waits == {1: [7.0]}
    assert ledger.step_waits("a.json", profile="1280x800", digest="d1", limit=0) == StepWaits()


def test_eight_processes_appending_at_once_lose_nothing(engine: EngineSetup, location: str) -> None:
    per_worker = 40
    seed = _run("t0.json", "completed").model_copy(update={"pid": -1})
    engine.open(location).append(seed)  # the store exists before the workers start
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.ledger.worker",
                _name(engine),
                location,
                str(w),
                str(per_worker),
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(8)
    ]
    for worker in workers:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.close()
    for worker in workers:
        assert worker.wait() == 0
        assert worker.stdout is not None
        worker.stdout.close()
    ledger = engine.open(location)
    by_worker = Counter(r.pid for r in ledger.records() if r.pid != -1)
    assert by_worker == dict.fromkeys(range(8), per_worker)
    summaries = {s.trajectory: s.runs for s in ledger.summaries()}
    assert sum(summaries.values()) == 8 * per_worker + 1


def _name(engine: EngineSetup) -> str:
    return next(name for name, setup in ENGINES.items() if setup is engine)
