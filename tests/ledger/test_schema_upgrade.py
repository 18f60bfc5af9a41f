"""A ledger written before step waits (SQLite and PostgreSQL tables of version 1) is upgraded on
first open: its entries and summaries stay as they are, new entries keep their step waits and
``step_waits`` reads them through an index; a read-only version 1 database is still read.
PostgreSQL tables of version 3 gain the day rows (version 4), filled from the summaries."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from askcache.storage.ledger import RunRecord, StepWaits
from askcache.storage.ledger.day_totals import DayTotals
from askcache.storage.ledger.postgres import PostgresLedger, PostgresTimeouts
from askcache.storage.ledger.postgres_schema import SCHEMA_VERSION as PG_SCHEMA_VERSION
from askcache.storage.ledger.sqlite import SCHEMA_VERSION, SqliteLedger
from askcache.storage.ledger.summary import TrajectorySummary, fold_all
from tests.integration.test_read_only_folder import _ReadOnly

START = datetime(2026, 12, 1, tzinfo=UTC)

_SQLITE_V1 = """
CREATE TABLE IF NOT EXISTS entries (
    id TEXT PRIMARY KEY,
    trajectory TEXT NOT NULL,
    started_at TEXT NOT NULL,
    event TEXT NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_by_trajectory ON entries (trajectory, started_at);
CREATE INDEX IF NOT EXISTS entries_by_time ON entries (started_at);
CREATE TABLE IF NOT EXISTS summaries (trajectory TEXT PRIMARY KEY, summary TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
"""askcache's SQLite tables before step waits (version 1: no ``schema_version``)."""

_POSTGRES_V1 = [
    """CREATE TABLE askcache_ledger_meta (key text PRIMARY KEY, value text NOT NULL)""",
    """CREATE TABLE askcache_ledger_entries (
        entry_id text PRIMARY KEY,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        trajectory text NOT NULL,
        started_at timestamptz NOT NULL,
        event text NOT NULL,
        status text NOT NULL,
        record jsonb NOT NULL,
        stored_at timestamptz NOT NULL DEFAULT now())""",
    """CREATE INDEX askcache_ledger_entries_by_trajectory
        ON askcache_ledger_entries (trajectory, started_at)""",
    """CREATE INDEX askcache_ledger_entries_by_time ON askcache_ledger_entries (started_at)""",
    """CREATE TABLE askcache_ledger_summaries (
        trajectory text PRIMARY KEY,
        summary jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now())""",
    """INSERT INTO askcache_ledger_meta (key, value) VALUES ('schema_version', '1')""",
]
"""askcache's PostgreSQL tables before step waits (version 1)."""

_PATIENT = PostgresTimeouts(connect=120, statement=300)


def _old(minute: int) -> RunRecord:
    """An entry as askcache wrote it before step waits."""
    return RunRecord(
        trajectory="a.json",
        status="completed",
        started_at=START + timedelta(minutes=minute),
        profile="1280x800",
    )


def _new(minute: int, waits: dict[int, float]) -> RunRecord:
    return _old(minute).model_copy(update={"steps_digest": "d1", "step_waits": waits})


def _old_json(record: RunRecord) -> str:
    return record.model_dump_json(exclude={"steps_digest", "step_waits"})


def _sqlite_v1(path: Path, records: list[RunRecord]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.executescript(_SQLITE_V1)
        for n, record in enumerate(records):
            db.execute(
                "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)",
                (
                    f"old-{n}",
                    record.trajectory,
                    record.started_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    record.event,
                    record.status,
                    _old_json(record),
                ),
            )
        summary = fold_all(TrajectorySummary(trajectory="a.json"), records)
        db.execute("INSERT INTO summaries VALUES ('a.json', ?)", (summary.model_dump_json(),))
    db.close()


def test_a_version_1_sqlite_ledger_is_upgraded_and_keeps_its_entries(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    old = [_old(0), _old(1)]
    _sqlite_v1(path, old)
    ledger = SqliteLedger(path, retention_days=None)
    assert ledger.records("a.json") == old
    assert ledger.meta("schema_version") == str(SCHEMA_VERSION)
    assert ledger.step_waits("a.json", profile="1280x800", digest="d1") == StepWaits()
    ledger.append(_new(2, {1: 0.5, 2: 0.0}))
    ledger.append(_new(3, {1: 0.7}))
    assert ledger.step_waits("a.json", profile="1280x800", digest="d1") == StepWaits(
        runs=2, waits={1: [0.7, 0.5], 2: [0.0]}
    )
    summary = ledger.summary("a.json")
    assert summary is not None
    assert (summary.runs, summary.completed) == (4, 4)  # the old summary, folded on
    ledger.close()
    with sqlite3.connect(path) as db:
        plan = " ".join(
            str(row[-1])
            for row in db.execute(
                "EXPLAIN QUERY PLAN SELECT id, record FROM entries "
                "WHERE trajectory = ? AND waits_key = ? "
                "ORDER BY started_at DESC, rowid DESC LIMIT ?",
                ("a.json", "d1 1280x800", 50),
            )
        )
    db.close()
    assert "USING INDEX entries_by_waits" in plan
    assert "TEMP B-TREE" not in plan  # read in the index's order: no sort
    again = SqliteLedger(path, retention_days=None)  # a second open changes nothing
    assert again.records("a.json")[:2] == old
    assert again.meta("schema_version") == str(SCHEMA_VERSION)
    again.close()


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[_ReadOnly]:
    switch = _ReadOnly(tmp_path / "cache")
    yield switch
    switch.off()


def test_a_read_only_version_1_sqlite_ledger_is_read_as_it_is(
    tmp_path: Path, read_only: _ReadOnly
) -> None:
    path = tmp_path / "cache" / "ledger.sqlite3"
    _sqlite_v1(path, [_old(0)])
    read_only.on()
    ledger = SqliteLedger(path, retention_days=None)
    assert ledger.records("a.json") == [_old(0)]
    assert ledger.step_waits("a.json", profile="1280x800", digest="d1") == StepWaits()
    ledger.close()


def test_version_1_postgres_tables_are_upgraded_and_keep_their_entries(
    postgres_url: str,
) -> None:
    old = [_old(0), _old(1)]
    with psycopg.connect(postgres_url) as db:
        for statement in _POSTGRES_V1:
            db.execute(statement)  # type: ignore[arg-type]
        for n, record in enumerate(old):
            db.execute(
                "INSERT INTO askcache_ledger_entries "
                "(entry_id, trajectory, started_at, event, status, record) "
                "VALUES (%s, %s, %s, %s, %s, %s::jsonb)",
                (
                    f"old-{n}",
                    record.trajectory,
                    record.started_at,
                    record.event,
                    record.status,
                    _old_json(record),
                ),
            )
    with PostgresLedger(postgres_url, timeouts=_PATIENT) as ledger:
        assert ledger.records("a.json") == old
        ledger.append(_new(2, {1: 0.5, 2: 0.0}))
        ledger.append(_new(3, {1: 0.7}))
        assert ledger.step_waits("a.json", profile="1280x800", digest="d1") == StepWaits(
            runs=2, waits={1: [0.7, 0.5], 2: [0.0]}
        )
        assert ledger.step_waits("a.json", profile="1280x800", digest="d1", limit=1) == (
            StepWaits(runs=1, waits={1: [0.7]})
        )
    with psycopg.connect(postgres_url) as db:
        version = db.execute(
            "SELECT value FROM askcache_ledger_meta WHERE key = 'schema_version'"
        ).fetchone()
        db.execute("SET enable_seqscan = off")
        plan = " ".join(
            str(row[0])
            for row in db.execute(
                "EXPLAIN SELECT entry_id, record->'step_waits' FROM askcache_ledger_entries "
                "WHERE trajectory = 'a.json' AND waits_key = 'd1 1280x800' "
                "ORDER BY started_at DESC, seq DESC LIMIT 50"
            )
        )
    assert version == (str(PG_SCHEMA_VERSION),)
    assert "askcache_ledger_entries_by_waits" in plan
    assert "Sort" not in plan  # read in the index's order


_TO_VERSION_3 = [
    "DROP TRIGGER askcache_ledger_fold_days ON askcache_ledger_summaries",
    "DROP FUNCTION askcache_ledger_fold_days()",
    "DROP TABLE askcache_ledger_days",
    "DROP TABLE askcache_ledger_day_models",
    "UPDATE askcache_ledger_meta SET value = '3' WHERE key = 'schema_version'",
]
"""What version 4 added, taken away: the tables of an askcache of version 3."""


def _days_of(summaries: list[TrajectorySummary]) -> dict[str, dict[str, object]]:
    """Every summary's days added up here, as plain data (float sums rounded)."""
    days: dict[str, DayTotals] = {}
    for summary in summaries:
        for day, totals in summary.days.items():
            days.setdefault(day, DayTotals()).add(totals)
    return {day: _plain(totals) for day, totals in days.items()}


def _plain(totals: DayTotals) -> dict[str, object]:
    data = totals.model_dump()
    data["saved_seconds"] = round(totals.saved_seconds, 6)
    data["models"] = dict(totals.models)
    return data


def test_version_3_postgres_tables_gain_day_rows_filled_from_the_summaries(
    postgres_url: str,
) -> None:
    """3 to 4: the day tables are made and filled from the summaries, nothing else changes,
    and the trigger keeps them from then on."""
    from tests.ledger.fleet_ledger import fleet_records

    records = list(fleet_records())
    with PostgresLedger(postgres_url, timeouts=_PATIENT) as ledger:
        for n, record in enumerate(records[:150]):
            ledger.append(record, entry_id=f"e{n:04d}")
        before = ledger.summaries()
        kept = ledger.records()
    with psycopg.connect(postgres_url) as db:
        for statement in _TO_VERSION_3:
            db.execute(statement)  # type: ignore[arg-type]
    with PostgresLedger(postgres_url, timeouts=_PATIENT) as ledger:
        assert ledger.summaries() == before  # nothing rewritten
        assert ledger.records() == kept
        summaries, days = ledger.fleet_summaries()
        assert summaries == [s.model_copy(update={"days": {}}) for s in before]
        assert days is not None
        assert {day: _plain(totals) for day, totals in days.items()} == _days_of(before)
        for n, record in enumerate(records[150:], start=150):
            ledger.append(record, entry_id=f"e{n:04d}")
        whole = ledger.summaries()
        _, days = ledger.fleet_summaries()
    assert days is not None
    assert {day: _plain(totals) for day, totals in days.items()} == _days_of(whole)
    assert sum(t.runs for t in days.values()) == sum(s.runs for s in whole)
    with psycopg.connect(postgres_url) as db:
        version = db.execute(
            "SELECT value FROM askcache_ledger_meta WHERE key = 'schema_version'"
        ).fetchone()
    assert version == (str(PG_SCHEMA_VERSION),)
    assert PG_SCHEMA_VERSION == 4


def test_a_summary_written_by_hand_or_in_bulk_gets_its_day_rows(postgres_url: str) -> None:
    """The trigger keeps the day rows whoever writes a summary (a bulk load, as the
    benchmark's, or an upgrade's fill): the rows always read as the summaries' days."""
    from tests.ledger.fleet_ledger import fleet_records

    summaries: dict[str, TrajectorySummary] = {}
    for record in fleet_records():
        name = record.trajectory
        summaries[name] = fold_all(
            summaries.get(name, TrajectorySummary(trajectory=name)), [record]
        )
    with PostgresLedger(postgres_url, timeouts=_PATIENT) as ledger:
        assert ledger.summaries() == []  # creates the tables
        with psycopg.connect(postgres_url) as db:
            db.cursor().executemany(
                "INSERT INTO askcache_ledger_summaries (trajectory, summary) VALUES (%s, %s)",
                [(name, s.model_dump_json()) for name, s in summaries.items()],
            )
        _, days = ledger.fleet_summaries()
    assert days is not None
    assert {day: _plain(totals) for day, totals in days.items()} == _days_of(
        list(summaries.values())
    )
