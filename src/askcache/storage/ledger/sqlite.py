"""The SQLite engine, the default for a local cache folder: ``<cache_dir>/.ledger/ledger.sqlite3``.

One table of entries (the entry id is the primary key, so appending an id twice stores it once;
indexed by trajectory and start time, and the replays that kept step waits by trajectory,
steps and profile: :meth:`SqliteLedger.step_waits`) and one of summaries, updated in the same
transaction as the insert and only when the insert stored something. WAL mode lets readers
go on while a writer commits; ``BEGIN IMMEDIATE`` with a busy timeout queues writers from any
number of processes, so none loses an entry. Failing-region thumbnails
(:mod:`~askcache.storage.ledger.spot_images`) go in a table of their own, ``spot_images``,
made by their first write. Each thread of a process keeps its own connection (the
engine is safe from several threads and after a fork); :meth:`SqliteLedger.close`, or the
ledger's end, closes them.

Reads of a ledger that does not exist yet return nothing and create nothing; a database on a
read-only folder is read as immutable. Any SQLite failure is a
:class:`~askcache.foundation.errors.LedgerUnavailableError` (an ``OSError``), so a run's entry that
cannot be written waits in the outbox. The database must be on a local disk (SQLite's locks do
not hold on network file systems): a ledger shared between machines belongs in PostgreSQL.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import ValidationError

from askcache.foundation.errors import LedgerUnavailableError
from askcache.foundation.retention import DEFAULT_LEDGER_RETENTION_DAYS
from askcache.storage.ledger.engine import LEDGER_FOLDER, RunLedger
from askcache.storage.ledger.records import RunRecord
from askcache.storage.ledger.spot_images import SpotImages, SpotKey
from askcache.storage.ledger.summary import TrajectorySummary, fold_all
from askcache.storage.ledger.waits import (
    DEFAULT_WAIT_RUNS,
    StepWaits,
    key_of,
    merge_waits,
    waits_key,
)

__all__ = ["PRUNE_EVERY_SECONDS", "SCHEMA_VERSION", "SQLITE_FILE", "SqliteLedger"]

logger = logging.getLogger(__name__)

SQLITE_FILE = f"{LEDGER_FOLDER}/ledger.sqlite3"
"""Where a local cache folder keeps its ledger (hidden: never listed as a cache file)."""

PRUNE_EVERY_SECONDS = 3600.0
"""Appends prune old entries at most this often (per process, and per database)."""

SCHEMA_VERSION = 3
"""The version of the tables this askcache writes (``meta.schema_version``). 1 (no
``schema_version`` row): before step waits; 2: ``entries.waits_key`` and its index
(:meth:`SqliteLedger.step_waits`); 3: the summaries keep per-day figures, hot spots and
profiles (:mod:`~askcache.storage.ledger.day_totals`; no table changes: an askcache before
it would fold entries into a summary and drop them). A database of an older version is
upgraded on first open (adding a column and an index; the entries and summaries stay as they
are: per-day figures start with the upgrade)."""

_TABLES = (
    """CREATE TABLE IF NOT EXISTS entries (
        id TEXT PRIMARY KEY,
        trajectory TEXT NOT NULL,
        started_at TEXT NOT NULL,
        event TEXT NOT NULL,
        status TEXT NOT NULL,
        record TEXT NOT NULL,
        waits_key TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS entries_by_trajectory ON entries (trajectory, started_at)",
    "CREATE INDEX IF NOT EXISTS entries_by_time ON entries (started_at)",
    "CREATE TABLE IF NOT EXISTS summaries (trajectory TEXT PRIMARY KEY, summary TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)

_WAITS_COLUMN = "ALTER TABLE entries ADD COLUMN waits_key TEXT"
"""Version 2's column: an entry's :func:`~askcache.storage.ledger.waits.waits_key` (``NULL``
for an entry without step waits, every entry of version 1)."""

_WAITS_INDEX = """CREATE INDEX IF NOT EXISTS entries_by_waits
    ON entries (trajectory, waits_key, started_at) WHERE waits_key IS NOT NULL"""
"""The newest runs of one trajectory's steps on one profile, in one index range (the entries
without waits are not in it)."""

_INSERT = """INSERT OR IGNORE INTO entries
    (id, trajectory, started_at, event, status, record, waits_key)
    VALUES (?, ?, ?, ?, ?, ?, ?)"""

_SELECT_WAITS = """SELECT id, record FROM entries WHERE trajectory = ? AND waits_key = ?
    ORDER BY started_at DESC, rowid DESC LIMIT ?"""

_SPOT_TABLE = """CREATE TABLE IF NOT EXISTS spot_images (
    trajectory TEXT NOT NULL,
    spot TEXT NOT NULL,
    at TEXT NOT NULL,
    images TEXT NOT NULL,
    PRIMARY KEY (trajectory, spot)
)"""
"""Failing-region thumbnails, the latest per hot spot
(:mod:`~askcache.storage.ledger.spot_images`); made by the first write, so no schema version
changes: a database without it has none."""

_PUT_SPOT = """INSERT INTO spot_images (trajectory, spot, at, images) VALUES (?, ?, ?, ?)
    ON CONFLICT (trajectory, spot) DO UPDATE SET at = excluded.at, images = excluded.images
    WHERE excluded.at >= spot_images.at"""

_HAS_SPOTS = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'spot_images'"

_GET_SPOT = "SELECT images FROM spot_images WHERE trajectory = ? AND spot = ?"

_prepared: set[Path] = set()
_last_prune: dict[Path, float] = {}
_guard = threading.Lock()


def _close_all(connections: list[sqlite3.Connection], pid: int) -> None:
    """Close the connections (those a forked child inherited are its parent's to close)."""
    if os.getpid() != pid:
        return
    with _guard:
        kept, connections[:] = list(connections), []
    for connection in kept:
        with contextlib.suppress(sqlite3.Error):
            connection.close()


def _stamp(when: datetime) -> str:
    """A start time as stored: UTC, fixed width, so text order is time order."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class SqliteLedger(RunLedger):
    """Entries and summaries in one SQLite file (see the module docstring)."""

    supports_retention = True
    """Pruning keeps the summaries."""

    def __init__(
        self,
        path: str | Path,
        *,
        retention_days: int | None = DEFAULT_LEDGER_RETENTION_DAYS,
        busy_timeout: float = 30.0,
    ) -> None:
        self.path = Path(path).absolute()
        self.retention_days = retention_days
        self.busy_timeout = busy_timeout
        """Seconds a writer waits for another to finish before it fails."""
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        weakref.finalize(self, _close_all, self._connections, os.getpid())

    @contextlib.contextmanager
    def _connection(self, operation: str, *, write: bool) -> Iterator[sqlite3.Connection | None]:
        """This thread's connection (``None`` to a reader when there is no database); SQLite's
        errors become :class:`LedgerUnavailableError`, and the connection is dropped."""
        try:
            if write:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            elif not self.path.is_file():
                yield None
                return
            yield self._thread_connection(write=write)
        except (sqlite3.Error, OSError) as exc:
            if isinstance(exc, LedgerUnavailableError):
                raise
            self._drop()
            raise LedgerUnavailableError(str(self.path), operation, str(exc)) from exc

    def _thread_connection(self, *, write: bool) -> sqlite3.Connection:
        """Connections are kept per thread and process: closing the last one checkpoints the
        database, too slow to do at every append."""
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "held", None)
        if held is not None and held[0] == os.getpid():
            return held[1]
        connection = self._open(write=write)
        self._local.held = (os.getpid(), connection)
        with _guard:
            self._connections.append(connection)
        return connection

    def _drop(self) -> None:
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "held", None)
        self._local.held = None
        if held is not None and held[0] == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                held[1].close()

    def close(self) -> None:
        """Close this process's connections (the ledger opens new ones if used again)."""
        self._local = threading.local()
        _close_all(self._connections, os.getpid())

    def _open(self, *, write: bool) -> sqlite3.Connection:
        fresh = self.path not in _prepared or not self.path.is_file()
        connection = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._prepare(connection, fresh=fresh)
        except sqlite3.OperationalError:
            connection.close()
            if write:
                raise
            # a read-only folder: no -shm can be made; nobody can write it either
            uri = f"{self.path.as_uri()}?immutable=1"
            connection = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False
            )
        return connection

    def _prepare(self, connection: sqlite3.Connection, *, fresh: bool) -> None:
        connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        connection.execute("PRAGMA synchronous = NORMAL")  # in WAL: commits survive a crash
        if not fresh:
            return
        connection.execute("PRAGMA journal_mode = WAL")
        if _schema_version(connection) < SCHEMA_VERSION:
            connection.execute("BEGIN IMMEDIATE")  # one process creates or upgrades at a time
            try:
                _upgrade(connection)
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        with _guard:
            _prepared.add(self.path)

    @contextlib.contextmanager
    def _transaction(self, operation: str) -> Iterator[sqlite3.Connection]:
        with self._connection(operation, write=True) as connection:
            assert connection is not None
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def append(self, record: RunRecord, *, entry_id: str | None = None) -> str:
        unique = self.new_entry_id() if entry_id is None else entry_id
        self.append_many([(unique, record)])
        self._maybe_prune()
        return unique

    def append_many(self, entries: Iterable[tuple[str, RunRecord]]) -> int:
        """Store ``(entry id, record)`` pairs in order, in one transaction, each folded into
        its summary when it was not stored before; how many were new."""
        stored = 0
        with self._transaction("append") as db:
            added: dict[str, list[RunRecord]] = {}
            for entry_id, record in entries:
                inserted = db.execute(
                    _INSERT,
                    (
                        entry_id,
                        record.trajectory,
                        _stamp(record.started_at),
                        record.event,
                        record.status,
                        record.model_dump_json(),
                        waits_key(record),
                    ),
                ).rowcount
                if inserted:
                    stored += 1
                    added.setdefault(record.trajectory, []).append(record)
            for name, records in added.items():
                before = self._read_summary(db, name) or TrajectorySummary(trajectory=name)
                db.execute(
                    "INSERT OR REPLACE INTO summaries VALUES (?, ?)",
                    (name, fold_all(before, records, in_place=True).model_dump_json()),
                )
        return stored

    def records(
        self,
        trajectory: str | None = None,
        *,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[RunRecord]:
        where, values = [], []
        if trajectory is not None:
            where.append("trajectory = ?")
            values.append(trajectory)
        if since is not None:
            where.append("started_at >= ?")
            values.append(_stamp(since))
        sql = "SELECT id, record FROM entries"
        if where:
            sql += " WHERE " + " AND ".join(where)
        if limit is not None:
            sql += f" ORDER BY started_at DESC, rowid DESC LIMIT {int(limit)}"
        else:
            sql += " ORDER BY started_at, rowid"
        with self._connection("read", write=False) as db:
            rows = [] if db is None else db.execute(sql, values).fetchall()
        if limit is not None:
            rows.reverse()
        found = []
        for entry_id, text in rows:
            try:
                found.append(RunRecord.model_validate_json(text))
            except (ValidationError, ValueError) as exc:
                logger.warning(
                    "skipping unreadable ledger entry %s in %s: %s", entry_id, self.path, exc
                )
        return found

    def step_waits(
        self,
        trajectory: str,
        *,
        profile: str | None,
        digest: str,
        limit: int = DEFAULT_WAIT_RUNS,
    ) -> StepWaits:
        """See :meth:`RunLedger.step_waits`: one range of the ``entries_by_waits`` index,
        ``limit`` rows."""
        with self._connection("read", write=False) as db:
            if db is None or "waits_key" not in _columns(db):  # none, or read-only version 1
                return StepWaits()
            rows = db.execute(
                _SELECT_WAITS, (trajectory, key_of(digest, profile), max(limit, 0))
            ).fetchall()
        return merge_waits(
            waits for entry_id, text in rows if (waits := self._waits(entry_id, text)) is not None
        )

    def _waits(self, entry_id: str, text: str) -> dict[int, float] | None:
        """An entry's step waits; ``None``, with a warning naming it, when unreadable."""
        try:
            found = json.loads(text).get("step_waits") or {}
            return {int(index): float(seconds) for index, seconds in found.items()}
        except (ValueError, TypeError, AttributeError) as exc:
            logger.warning(
                "skipping unreadable ledger entry %s in %s: %s", entry_id, self.path, exc
            )
            return None

    def summary(self, trajectory: str) -> TrajectorySummary | None:
        with self._connection("read", write=False) as db:
            return None if db is None else self._read_summary(db, trajectory)

    def _read_summary(self, db: sqlite3.Connection, trajectory: str) -> TrajectorySummary | None:
        row = db.execute(
            "SELECT summary FROM summaries WHERE trajectory = ?", (trajectory,)
        ).fetchone()
        return None if row is None else self._parse_summary(trajectory, row[0])

    def _parse_summary(self, trajectory: str, text: str) -> TrajectorySummary | None:
        try:
            return TrajectorySummary.model_validate_json(text)
        except (ValidationError, ValueError) as exc:
            logger.warning("unreadable ledger summary of %s in %s: %s", trajectory, self.path, exc)
            return None

    def summaries(self) -> list[TrajectorySummary]:
        with self._connection("read", write=False) as db:
            rows = (
                []
                if db is None
                else db.execute(
                    "SELECT trajectory, summary FROM summaries ORDER BY trajectory"
                ).fetchall()
            )
        parsed = (self._parse_summary(name, text) for name, text in rows)
        return [summary for summary in parsed if summary is not None]

    def prune(self, before: datetime) -> int:
        with self._transaction("prune") as db:
            pruned = db.execute("DELETE FROM entries WHERE started_at < ?", (_stamp(before),))
            db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('pruned_at', ?)", (_stamp(datetime.now(UTC)),)
            )
            return pruned.rowcount

    def put_spot_images(self, images: SpotImages) -> None:
        """See :meth:`RunLedger.put_spot_images`: one row of the ``spot_images`` table
        (made by the first write: a database without it has none), keyed by trajectory and
        spot."""
        with self._transaction("write") as db:
            db.execute(_SPOT_TABLE)
            db.execute(
                _PUT_SPOT,
                (images.trajectory, images.spot, _stamp(images.at), images.model_dump_json()),
            )

    def spot_images(self, keys: Iterable[SpotKey]) -> dict[SpotKey, SpotImages]:
        """See :meth:`RunLedger.spot_images`: one primary-key lookup per spot."""
        found: dict[SpotKey, SpotImages] = {}
        with self._connection("read", write=False) as db:
            if db is None or db.execute(_HAS_SPOTS).fetchone() is None:
                return found
            for trajectory, spot in keys:
                row = db.execute(_GET_SPOT, (trajectory, spot)).fetchone()
                if row is None:
                    continue
                try:
                    found[trajectory, spot] = SpotImages.model_validate_json(row[0])
                except (ValidationError, ValueError) as exc:
                    logger.warning(
                        "skipping unreadable failing-region images of %s (%s) in %s: %s",
                        trajectory,
                        spot,
                        self.path,
                        exc,
                    )
        return found

    def meta(self, key: str) -> str | None:
        """A bookkeeping value (``pruned_at``, the migration's state), ``None`` when unset."""
        with self._connection("read", write=False) as db:
            row = (
                None
                if db is None
                else db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            )
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set a bookkeeping value."""
        with self._transaction("write") as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def _maybe_prune(self) -> None:
        """After an append: prune entries older than the retention period, at most once an
        hour per process and per database; a failure is logged, never raised."""
        if self.retention_days is None:
            return
        now = time.monotonic()
        with _guard:
            if now - _last_prune.get(self.path, -PRUNE_EVERY_SECONDS) < PRUNE_EVERY_SECONDS:
                return
            _last_prune[self.path] = now
        try:
            last = self.meta("pruned_at")
            wall = datetime.now(UTC)
            if last is not None and last > _stamp(wall - timedelta(seconds=PRUNE_EVERY_SECONDS)):
                return  # another process pruned lately
            pruned = self.prune(wall - timedelta(days=self.retention_days))
        except LedgerUnavailableError as exc:
            logger.warning("could not prune the run ledger: %s", exc)
            return
        if pruned:
            logger.info(
                "pruned %d run-ledger entries older than %d days", pruned, self.retention_days
            )


def _schema_version(connection: sqlite3.Connection) -> int:
    """The database's ``meta.schema_version`` (0: no tables yet; 1: tables without it)."""
    tables = connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone()
    if tables is None:
        return 0
    row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return 1 if row is None else int(row[0])


def _columns(connection: sqlite3.Connection) -> set[str]:
    return {str(row[1]) for row in connection.execute("PRAGMA table_info(entries)")}


def _upgrade(connection: sqlite3.Connection) -> None:
    """Create the tables, or bring a database of an older version to this one (in the
    caller's transaction); nothing when another process did it meanwhile. Version 1 to 2:
    a column (no entry is rewritten) and a partial index, built in one scan of the table
    and holding none of its entries (none of version 1 has step waits)."""
    if _schema_version(connection) >= SCHEMA_VERSION:
        return
    for statement in _TABLES:
        connection.execute(statement)
    if "waits_key" not in _columns(connection):
        connection.execute(_WAITS_COLUMN)
    connection.execute(_WAITS_INDEX)
    connection.execute(
        "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
    )
