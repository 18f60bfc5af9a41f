"""A ledger that does not answer never holds up the end of a run, and loses nothing: the entry
waits in the outbox and is stored once when sent."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from askcache.agent.outbox_sync import RunWriter, sync_outbox
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import RunRecord, open_ledger
from askcache.storage.ledger.sqlite import SQLITE_FILE
from askcache.storage.outbox import Outbox


def test_an_entry_the_locked_ledger_does_not_take_in_time_waits_in_the_outbox(
    tmp_path: Path,
) -> None:
    storage = LocalCacheStorage(tmp_path)
    ledger = open_ledger(storage)
    ledger.append(RunRecord(trajectory="a.json", status="completed", steps_run=1))
    outbox = Outbox(None, storage.destination())
    blocker = sqlite3.connect(tmp_path / SQLITE_FILE, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another process holding the database
    try:
        writer = RunWriter(storage, outbox, ledger, ledger_timeout=0.2)
        writer.append(RunRecord(trajectory="a.json", status="handed_back", steps_run=2))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert writer.entries == []
    assert [kept.item.kind for kept in writer.kept] == ["ledger_entry"]
    for thread in threading.enumerate():
        if thread.name == "askcache-ledger-write":
            thread.join()  # the write given up on lands after all, once the lock is gone
    report = sync_outbox(storage, outbox, ledger)
    assert len(report.sent) == 1
    assert outbox.pending() == []
    assert [r.steps_run for r in ledger.records("a.json")] == [1, 2]  # stored once
    summary = ledger.summary("a.json")
    assert summary is not None
    assert (summary.runs, summary.handed_back) == (2, 1)
