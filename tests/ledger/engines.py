"""The ledger engines the conformance tests run against, one set-up each.

To add an engine: write an :class:`EngineSetup` (how to open it in any process from a
location string, how to make a location for one test, how to plant an unreadable entry, a
malformed URL of its scheme) and add it to :data:`ENGINES`. A set-up that needs a server
starts it in ``location`` (a session-wide fixture may hand it in through ``request``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import FolderLedger, RunLedger
from askcache.storage.ledger.postgres import PostgresLedger, PostgresTimeouts
from askcache.storage.ledger.segments import SegmentLedger
from askcache.storage.ledger.sqlite import SqliteLedger
from askcache.storage.remote import storage_for


@dataclass(frozen=True)
class EngineSetup:
    """One engine under test."""

    open: Callable[[str], RunLedger]
    """The engine at a location (a folder, a file, a URL); called in worker processes too."""
    location: Callable[[Path, pytest.FixtureRequest], str]
    """A fresh location for one test, from its temporary folder."""
    plant_unreadable: Callable[[str, str], str]
    """Store an entry of a trajectory that no reader can parse; returns the name a warning
    about it must carry."""
    bad_url: str | None = None
    """A URL of the engine's scheme that :func:`open_ledger` must refuse (``None``: no URL)."""


def _plant_json(location: str, trajectory: str) -> str:
    name = f".ledger/{trajectory}/zz-foreign.json"
    LocalCacheStorage(location).write(name, b"{not json")
    return name


def _plant_object(location: str, trajectory: str) -> str:
    name = f".ledger/{trajectory}/zz-foreign.json"
    storage_for(location).create(name, b"{not json")
    return name


def _plant_row(location: str, trajectory: str) -> str:
    with sqlite3.connect(location) as db:
        db.execute(
            "INSERT INTO entries (id, trajectory, started_at, event, status, record) "
            "VALUES ('foreign-1', ?, '2026-01-01T00:00:00.000000Z', 'replay', 'completed', "
            "'{not json')",
            (trajectory,),
        )
    db.close()
    return "foreign-1"


def _postgres_database(_tmp: Path, request: pytest.FixtureRequest) -> str:
    """A new database on the session's PostgreSQL server (tests/ledger/conftest.py)."""
    return str(request.getfixturevalue("postgres_url"))


def _plant_postgres_row(location: str, trajectory: str) -> str:
    with psycopg.connect(location) as db:
        db.execute(
            "INSERT INTO askcache_ledger_entries (entry_id, trajectory, started_at, event, "
            "status, record) VALUES ('foreign-1', %s, now(), 'replay', 'completed', "
            "'{\"status\": 7}')",
            (trajectory,),
        )
    return "foreign-1"


_PATIENT = PostgresTimeouts(connect=120, statement=300)
"""Long waits: these tests check what is stored, on a machine that may be loaded (what a
timeout does is tests/ledger/test_postgres.py's concern)."""

ENGINES: dict[str, EngineSetup] = {
    "folder": EngineSetup(
        open=lambda location: FolderLedger(LocalCacheStorage(location)),
        location=lambda tmp, _request: str(tmp / "cache"),
        plant_unreadable=_plant_json,
    ),
    "sqlite": EngineSetup(
        open=lambda location: SqliteLedger(location, retention_days=None),
        location=lambda tmp, _request: str(tmp / "ledger.sqlite3"),
        plant_unreadable=_plant_row,
        bad_url="sqlite://relative.db",
    ),
    "postgres": EngineSetup(
        open=lambda location: PostgresLedger(location, retention_days=None, timeouts=_PATIENT),
        location=_postgres_database,
        plant_unreadable=_plant_postgres_row,
        bad_url="postgresql://fleet@db.internal:fivefour/agents",
    ),
    "s3": EngineSetup(  # compacting every few entries, so reads cross segments and summaries
        open=lambda location: SegmentLedger(
            storage_for(location), retention_days=None, compact_after=2, check_every=1
        ),
        location=lambda _tmp, request: str(request.getfixturevalue("s3_url")),
        plant_unreadable=_plant_object,
    ),
}
"""Every engine the conformance tests run against, by name."""
