"""Fixtures: one real PostgreSQL server for the session, a fresh database for each test, and
a ledger on each engine (tests/ledger/engines.py) for the tests every engine must pass."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from askcache.storage.ledger import RunLedger
from askcache.testing.postgres_server import PostgresServer
from tests.ledger.engines import ENGINES, EngineSetup
from tests.s3.conftest import s3_server, s3_url

__all__ = ["s3_server", "s3_url"]  # the S3 engine's server (tests/ledger/engines.py)

_databases = itertools.count()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """Debian's PostgreSQL in a temporary folder (fsync off: the tests never cut the power)."""
    with PostgresServer(settings={"fsync": "off"}) as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL (password included) of a new, empty database on the session's server."""
    postgres_server.start()  # a test that stopped it and failed is not every later test's failure
    name = f"ledger_{next(_databases)}"
    with psycopg.connect(postgres_server.url, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return f"{postgres_server.url.rsplit('/', 1)[0]}/{name}"


@pytest.fixture(params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest) -> EngineSetup:
    """Each engine of the run ledger in turn (SQLite, PostgreSQL, folder, S3)."""
    return ENGINES[request.param]


@pytest.fixture
def location(engine: EngineSetup, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A fresh place for a ledger on ``engine`` (a file, a database, a folder, a bucket)."""
    return engine.location(tmp_path, request)


@pytest.fixture
def ledger(engine: EngineSetup, location: str) -> RunLedger:
    """A ledger on ``engine`` at ``location``."""
    return engine.open(location)
