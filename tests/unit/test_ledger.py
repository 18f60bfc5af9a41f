from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from askcache.foundation.errors import InvalidSettingsError, LedgerUrlError
from askcache.foundation.settings import CachingSettings
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import RunRecord, open_ledger
from askcache.storage.ledger.sqlite import SqliteLedger


def _append_many(directory: str, worker: int, count: int) -> None:
    ledger = open_ledger(LocalCacheStorage(directory))
    for index in range(count):
        ledger.append(
            RunRecord(trajectory="login.json", status="completed", steps_run=worker * 1000 + index)
        )


def test_entries_from_several_processes_are_all_kept(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_append_many, args=(str(tmp_path), worker, 25))
        for worker in range(4)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    records = open_ledger(LocalCacheStorage(tmp_path)).records("login.json")
    assert sorted(r.steps_run for r in records) == sorted(
        w * 1000 + i for w in range(4) for i in range(25)
    )
    assert LocalCacheStorage(tmp_path).list_names() == []  # ledger entries are no cache files


def test_unreadable_entries_are_skipped_and_failures_counted(tmp_path: Path) -> None:
    storage = LocalCacheStorage(tmp_path)
    ledger = open_ledger(storage)
    start = datetime(2026, 11, 22, tzinfo=UTC)
    statuses = [("completed", None), ("handed_back", 1), ("handed_back", 2), ("handed_back", 2)]
    for minute, (status, step) in enumerate(statuses):
        ledger.append(
            RunRecord(
                trajectory="a.json",
                status=status,  # type: ignore[arg-type]
                stopped_at_step=step,
                started_at=start + timedelta(minutes=minute),
            )
        )
    storage.write(".ledger/a.json/zz-broken.json", b"{not json")
    assert len(ledger.records("a.json")) == 4
    assert ledger.consecutive_failures("a.json") == (2, 2)
    assert ledger.consecutive_failures("other.json") == (0, None)


def test_a_url_of_no_known_engine_is_refused_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(LedgerUrlError, match=r"--ledger 'mysql://bob:\*\*\*@db/x'") as caught:
        open_ledger(LocalCacheStorage(tmp_path), "mysql://bob:hunter2@db/x", source="--ledger")
    assert "hunter2" not in str(caught.value)


def test_the_ledger_settings_are_checked_and_a_password_never_shown() -> None:
    assert CachingSettings().ledger_retention_days == 90
    assert CachingSettings(ledger_retention_days=None).ledger_retention_days is None
    assert CachingSettings(ledger="sqlite:///runs.db").ledger == "sqlite:///runs.db"
    with pytest.raises(InvalidSettingsError, match="ledger_retention_days") as caught:
        CachingSettings(ledger_retention_days=0)
    with pytest.raises(
        InvalidSettingsError, match="ledger: 'mysql://bob:\\*\\*\\*@db/x'"
    ) as caught:
        CachingSettings(ledger="mysql://bob:hunter2@db/x")
    assert "hunter2" not in str(caught.value)


def test_a_sqlite_url_opens_that_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.sqlite3'}"
    ledger = open_ledger(LocalCacheStorage(tmp_path / "cache"), url, retention_days=None)
    assert isinstance(ledger, SqliteLedger)
    assert ledger.path == tmp_path / "runs.sqlite3"
    assert ledger.retention_days is None
