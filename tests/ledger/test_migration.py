"""A cache folder with askcache 0.1's JSON ledger is moved into SQLite on first open: nothing
lost, summaries as the entries fold, a migration killed half-way resumes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import FolderLedger, RunRecord, open_ledger
from askcache.storage.ledger.migrate import MIGRATED_KEY, migrate_folder
from askcache.storage.ledger.sqlite import SQLITE_FILE, SqliteLedger

ROOT = Path(__file__).resolve().parents[2]
START = datetime(2026, 11, 1, tzinfo=UTC)


def _old_ledger(folder: Path, count: int) -> FolderLedger:
    """``count`` JSON entries over three trajectories, with hand-back streaks and heals."""
    old = FolderLedger(LocalCacheStorage(folder))
    for index in range(count):
        name = f"t{index % 3}.json"
        status = "handed_back" if index % 7 else "completed"
        event = "healed" if index % 50 == 49 else "replay"
        old.append(
            RunRecord(
                trajectory=name,
                event=event,
                status="healed" if event == "healed" else status,  # type: ignore[arg-type]
                stopped_at_step=(index // 21) % 2 if status == "handed_back" else None,
                started_at=START + timedelta(minutes=index),
                model_calls=index % 4,
                saved_tokens=index,
                model="claude-sonnet-4-5",
            )
        )
    return old


def test_the_json_ledger_is_moved_into_sqlite_on_first_open(tmp_path: Path) -> None:
    old = _old_ledger(tmp_path, 90)
    json_files = sorted(p.name for p in (tmp_path / ".ledger").rglob("*.json"))
    ledger = open_ledger(LocalCacheStorage(tmp_path))
    assert isinstance(ledger, SqliteLedger)
    assert ledger.path == tmp_path / SQLITE_FILE
    assert ledger.records() == sorted(old.records(), key=lambda r: r.started_at)
    assert ledger.summaries() == old.summaries()
    assert ledger.consecutive_failures("t1.json") == old.consecutive_failures("t1.json")
    assert sorted(p.name for p in (tmp_path / ".ledger").rglob("*.json")) == json_files  # kept
    assert LocalCacheStorage(tmp_path).list_names() == []  # the database is no cache file
    assert ledger.meta(MIGRATED_KEY) == "90"
    assert migrate_folder(LocalCacheStorage(tmp_path), ledger) == 0  # done once


def test_a_fresh_folder_gets_no_database_until_something_is_written(tmp_path: Path) -> None:
    ledger = open_ledger(LocalCacheStorage(tmp_path))
    assert ledger.summaries() == []
    assert ledger.records() == []
    assert not (tmp_path / ".ledger").exists()
    ledger.append(RunRecord(trajectory="a.json", status="completed"))
    assert (tmp_path / SQLITE_FILE).is_file()


def test_a_migration_killed_half_way_resumes_and_loses_nothing(tmp_path: Path) -> None:
    old = _old_ledger(tmp_path, 300)
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.ledger.migrator", str(tmp_path), "50"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "committed 100 of 300"
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    child.stdout.close()
    assert child.stdin is not None
    child.stdin.close()
    with sqlite3.connect(tmp_path / SQLITE_FILE) as db:
        assert db.execute("SELECT count(*) FROM entries").fetchone() == (100,)
        assert db.execute(
            "SELECT count(*) FROM meta WHERE key = ?", (MIGRATED_KEY,)
        ).fetchone() == (0,)
    db.close()

    ledger = open_ledger(LocalCacheStorage(tmp_path))  # resumes
    assert len(ledger.records()) == 300
    assert ledger.summaries() == old.summaries()
    assert [s.entries for s in ledger.summaries()] == [100, 100, 100]
