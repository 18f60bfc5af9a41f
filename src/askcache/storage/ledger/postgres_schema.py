"""The PostgreSQL run ledger's tables and statements (:mod:`askcache.storage.ledger.postgres`).

Five tables, created on first use by :func:`create` (idempotent; under an advisory lock, so
any number of processes starting at once create them once):

* ``askcache_ledger_entries``: one row per entry: its id (the primary key: an entry sent twice
  is stored once), trajectory, start time, event, status, the whole entry as JSONB, a
  sequence number (the order entries were stored in), and for a replay that kept step waits
  their key (:func:`~askcache.storage.ledger.waits.waits_key`: the steps' digest and the
  screen profile); indexed by (trajectory, start time), by start time (retention), and the
  rows with waits by (trajectory, waits key, start time) (:data:`SELECT_WAITS`).
* ``askcache_ledger_summaries``: one row per trajectory, its
  :class:`~askcache.storage.ledger.summary.TrajectorySummary` as JSONB.
* ``askcache_ledger_days`` and ``askcache_ledger_day_models``: each summary's per-day figures
  (its ``days``) as rows, one per trajectory and day (and recording model), for a page of the
  whole fleet to add up with ``GROUP BY`` (:data:`SUM_DAYS`) instead of reading every
  summary's buckets. They are a projection of the summaries, kept by a trigger on
  ``askcache_ledger_summaries`` (:data:`FOLD_DAYS_FUNCTION`): every write of a summary, by any
  askcache or a bulk load, writes the days it changed, in the same transaction.
* ``askcache_ledger_meta``: ``schema_version``, the version of these tables
  (:data:`SCHEMA_VERSION`). Tables of an older version are upgraded on first use, under the
  same lock: version 1 to 2 adds the ``waits_key`` column (no row is rewritten) and its
  partial index (one scan of the table; appends wait for it, up to their lock timeout, then
  go to the outbox); version 2 to 3 changes no table (the summaries gain per-day figures as
  entries are folded); version 3 to 4 adds the two day tables and their trigger and fills
  them from the summaries (one read of them: nothing is rewritten or lost; a summary whose
  days cannot be read, edited by hand, fails the upgrade with PostgreSQL's message naming
  the value until it is repaired). An askcache refuses tables of a newer version than its
  own ("upgrade askcache"): its entries wait in its outbox until it is upgraded.

A fourth, ``askcache_ledger_spot_images`` (failing-region thumbnails, the latest per hot
spot: :mod:`~askcache.storage.ledger.spot_images`), is made by its first write
(:func:`ensure_spots`): no schema version changes for it.

To keep the tables in a schema of their own, give the URL a search path:
``postgresql://.../db?options=-csearch_path%3Daskcache`` (the schema must exist).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, LiteralString

from psycopg import Connection, Cursor, sql

from askcache.foundation.errors import LedgerUnavailableError
from askcache.storage.ledger.day_totals import DAY_COUNTS, MODEL_FIGURES

__all__ = [
    "CREATE_SPOTS",
    "GET_SPOT",
    "HAS_SPOTS",
    "PUT_SPOT",
    "SCHEMA_VERSION",
    "SELECT_WAITS",
    "create",
    "ensure_spots",
    "select_entries",
]

SCHEMA_VERSION = 4
"""The version of the tables this askcache writes (``askcache_ledger_meta``): 1, the first;
2, step waits (``waits_key`` and its index); 3, summaries with per-day figures, hot spots and
profiles (:mod:`~askcache.storage.ledger.day_totals`; no table changes, but an askcache of
version 2 would fold entries into a summary and drop them, so it must refuse these tables);
4, the per-day figures also as rows (``askcache_ledger_days``, ``askcache_ledger_day_models``,
kept by a trigger; an askcache of version 3 would not keep them)."""

_LOCK_KEY = 0x61736B6C6564  # "askled": the advisory lock held while the tables are created

_CREATE: list[LiteralString] = [
    """CREATE TABLE IF NOT EXISTS askcache_ledger_meta (
        key text PRIMARY KEY,
        value text NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS askcache_ledger_entries (
        entry_id text PRIMARY KEY,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        trajectory text NOT NULL,
        started_at timestamptz NOT NULL,
        event text NOT NULL,
        status text NOT NULL,
        record jsonb NOT NULL,
        stored_at timestamptz NOT NULL DEFAULT now(),
        waits_key text)""",
    """ALTER TABLE askcache_ledger_entries ADD COLUMN IF NOT EXISTS waits_key text""",
    """CREATE INDEX IF NOT EXISTS askcache_ledger_entries_by_trajectory
        ON askcache_ledger_entries (trajectory, started_at)""",
    """CREATE INDEX IF NOT EXISTS askcache_ledger_entries_by_time
        ON askcache_ledger_entries (started_at)""",
    """CREATE INDEX IF NOT EXISTS askcache_ledger_entries_by_waits
        ON askcache_ledger_entries (trajectory, waits_key, started_at, seq)
        WHERE waits_key IS NOT NULL""",
    """CREATE TABLE IF NOT EXISTS askcache_ledger_summaries (
        trajectory text PRIMARY KEY,
        summary jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now())""",
    """INSERT INTO askcache_ledger_meta (key, value) VALUES ('schema_version', %s)
        ON CONFLICT (key) DO UPDATE SET value = excluded.value
        WHERE askcache_ledger_meta.value::int < excluded.value::int""",
]

_VERSION = "SELECT value FROM askcache_ledger_meta WHERE key = 'schema_version'"

INSERT_ENTRY = """INSERT INTO askcache_ledger_entries
    (entry_id, trajectory, started_at, event, status, record, waits_key)
    VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s)
    ON CONFLICT (entry_id) DO NOTHING
    RETURNING seq"""
"""Store an entry; returns its row only when it was not stored before."""

ENSURE_SUMMARY = """INSERT INTO askcache_ledger_summaries (trajectory, summary)
    VALUES (%s, %s::jsonb) ON CONFLICT (trajectory) DO NOTHING"""
"""Give a trajectory its first (empty) summary, unless it has one (waits for a writer that is
giving it one)."""

LOCK_SUMMARY = "SELECT summary FROM askcache_ledger_summaries WHERE trajectory = %s FOR UPDATE"
"""A trajectory's summary, locked until the transaction ends."""

UPDATE_SUMMARY = """UPDATE askcache_ledger_summaries SET summary = %s::jsonb, updated_at = now()
    WHERE trajectory = %s"""
"""Write the trajectory's summary that :data:`LOCK_SUMMARY` locked."""

SELECT_WAITS = """SELECT entry_id, record->'step_waits' FROM askcache_ledger_entries
    WHERE trajectory = %s AND waits_key = %s
    ORDER BY started_at DESC, seq DESC LIMIT %s"""
"""The step waits of a trajectory's newest runs of some steps on a profile (a range of
``askcache_ledger_entries_by_waits``), newest first."""

SELECT_SUMMARY = "SELECT summary FROM askcache_ledger_summaries WHERE trajectory = %s"
SELECT_SUMMARIES = "SELECT trajectory, summary FROM askcache_ledger_summaries"

REPEATABLE_READ = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"
"""The first statement of a transaction whose reads must see one snapshot."""

SELECT_SUMMARIES_WITHOUT_DAYS = (
    "SELECT trajectory, (summary - 'days')::text FROM askcache_ledger_summaries"
)
"""Every summary but its per-day figures (a fleet page reads :data:`SUM_DAYS` instead), as
JSON text (read by pydantic's own parser)."""

_MODEL_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "saved_tokens",
)
"""The columns of ``askcache_ledger_day_models``, in the order of
:data:`~askcache.storage.ledger.day_totals.MODEL_FIGURES`."""


def _kind(name: str) -> str:
    return "float8" if name == "saved_seconds" else "bigint"


def _each(pattern: str, names: Iterable[str]) -> str:
    return ", ".join(pattern.format(name=name, kind=_kind(name)) for name in names)


_DAY_COLUMNS = ", ".join(DAY_COUNTS)
_DAY_DEFS = _each("{name} {kind} NOT NULL DEFAULT 0", DAY_COUNTS)
_DAY_RECORD = _each("{name} {kind}", DAY_COUNTS)
_DAY_VALUES = _each("coalesce(r.{name}, 0)", DAY_COUNTS)
_DAY_SETS = _each("{name} = EXCLUDED.{name}", DAY_COUNTS)
_DAY_SUMS = _each("sum({name})::{kind}", DAY_COUNTS)
_MODEL_LIST = ", ".join(_MODEL_COLUMNS)
_MODEL_DEFS = _each("{name} bigint NOT NULL DEFAULT 0", _MODEL_COLUMNS)
_MODEL_VALUES = _each(
    "coalesce((m.value ->> {name})::bigint, 0)", map(str, range(len(MODEL_FIGURES)))
)
_MODEL_SETS = _each("{name} = EXCLUDED.{name}", _MODEL_COLUMNS)
_MODEL_SUMS = _each("sum({name})::bigint", _MODEL_COLUMNS)

_DAY_TABLES = [
    f"""CREATE TABLE IF NOT EXISTS askcache_ledger_days (
        trajectory text NOT NULL,
        day text NOT NULL,
        {_DAY_DEFS},
        PRIMARY KEY (trajectory, day))""",
    f"""CREATE TABLE IF NOT EXISTS askcache_ledger_day_models (
        trajectory text NOT NULL,
        day text NOT NULL,
        model text NOT NULL,
        {_MODEL_DEFS},
        PRIMARY KEY (trajectory, day, model))""",
]


def _upsert_days(source: str, changed: str) -> str:
    """The two statements that write the day rows of ``source`` (rows of ``trajectory`` and
    ``summary``, named ``src``), for the days ``d`` for which ``changed`` holds."""
    days = f"FROM {source} CROSS JOIN LATERAL jsonb_each(src.summary -> 'days') AS d"
    return f"""INSERT INTO askcache_ledger_days AS t (trajectory, day, {_DAY_COLUMNS})
        SELECT src.trajectory, d.key, {_DAY_VALUES}
        {days}
        CROSS JOIN LATERAL jsonb_to_record(d.value) AS r({_DAY_RECORD})
        WHERE {changed}
        ON CONFLICT (trajectory, day) DO UPDATE SET {_DAY_SETS};
    INSERT INTO askcache_ledger_day_models AS t (trajectory, day, model, {_MODEL_LIST})
        SELECT src.trajectory, d.key, m.key, {_MODEL_VALUES}
        {days}
        CROSS JOIN LATERAL jsonb_each(d.value -> 'models') AS m
        WHERE {changed}
        ON CONFLICT (trajectory, day, model) DO UPDATE SET {_MODEL_SETS};"""


_NEW_ROW = "(SELECT NEW.trajectory, NEW.summary) AS src (trajectory, summary)"
_CHANGED = "TG_OP = 'INSERT' OR d.value IS DISTINCT FROM (OLD.summary -> 'days' -> d.key)"

FOLD_DAYS_FUNCTION = f"""CREATE OR REPLACE FUNCTION askcache_ledger_fold_days()
    RETURNS trigger LANGUAGE plpgsql AS $fold$
    BEGIN
    {_upsert_days(_NEW_ROW, _CHANGED)}
    RETURN NEW;
    END
    $fold$"""
"""The trigger's function: a summary written (inserted, or updated by a fold) writes the rows
of the days whose bucket it changed, as the bucket now reads (a projection, not a sum: a
fold rewrites the summary under its row lock, so the rows follow it exactly). Summary rows
are never deleted, and a summary's days never go away."""

_DAY_TRIGGER = [
    FOLD_DAYS_FUNCTION,
    "DROP TRIGGER IF EXISTS askcache_ledger_fold_days ON askcache_ledger_summaries",
    """CREATE TRIGGER askcache_ledger_fold_days
        AFTER INSERT OR UPDATE OF summary ON askcache_ledger_summaries
        FOR EACH ROW EXECUTE FUNCTION askcache_ledger_fold_days()""",
    # the summaries written before the trigger (an upgrade from version 3): all their days,
    # read once the trigger holds its lock on the table, so no fold is missed in between
    _upsert_days("askcache_ledger_summaries AS src", "true"),
]

SUM_DAYS = f"SELECT day, {_DAY_SUMS} FROM askcache_ledger_days GROUP BY day"
"""Every trajectory's per-day figures added up, one row per UTC day: the day, then
:data:`~askcache.storage.ledger.day_totals.DAY_COUNTS` in order."""

SUM_DAY_MODELS = (
    f"SELECT day, model, {_MODEL_SUMS} FROM askcache_ledger_day_models GROUP BY day, model"
)
"""The same per day and recording model: the day, the model, then the five numbers of
:data:`~askcache.storage.ledger.day_totals.MODEL_FIGURES` added up."""

PRUNE_BATCH = """DELETE FROM askcache_ledger_entries WHERE entry_id IN (
    SELECT entry_id FROM askcache_ledger_entries WHERE started_at < %s LIMIT %s)"""
"""Delete up to a number of raw entries started before a time (summaries stay)."""

SET_STATEMENT_TIMEOUT = "SELECT set_config('statement_timeout', %s, true)"
"""This transaction's statement timeout."""

CREATE_SPOTS = """CREATE TABLE IF NOT EXISTS askcache_ledger_spot_images (
    trajectory text NOT NULL,
    spot text NOT NULL,
    at timestamptz NOT NULL,
    images text NOT NULL,
    PRIMARY KEY (trajectory, spot))"""
"""Failing-region thumbnails, the latest per hot spot
(:mod:`~askcache.storage.ledger.spot_images`), as their JSON: a table apart, made by the
first write (:func:`ensure_spots`), so the schema version does not change and no read of
entries or summaries touches it."""

HAS_SPOTS = "SELECT to_regclass('askcache_ledger_spot_images')"

PUT_SPOT = """INSERT INTO askcache_ledger_spot_images (trajectory, spot, at, images)
    VALUES (%s, %s, %s, %s)
    ON CONFLICT (trajectory, spot) DO UPDATE SET at = excluded.at, images = excluded.images
    WHERE excluded.at >= askcache_ledger_spot_images.at"""
"""Keep a hot spot's images unless those kept are of a replay that started later."""

GET_SPOT = """SELECT trajectory, spot, images FROM askcache_ledger_spot_images
    WHERE (trajectory, spot) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"""
"""The images of some hot spots (primary-key lookups)."""


def ensure_spots(cursor: Cursor[Any]) -> None:
    """Make :data:`CREATE_SPOTS`'s table unless it exists (under the tables' advisory lock:
    two processes making it at once would collide)."""
    found = cursor.execute(HAS_SPOTS).fetchone()
    if found is not None and found[0] is not None:
        return
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
    cursor.execute(CREATE_SPOTS)


def select_entries(
    trajectory: str | None, since: datetime | None, limit: int | None
) -> tuple[sql.Composed, list[Any]]:
    """The query of :meth:`~askcache.storage.ledger.postgres.PostgresLedger.records`: rows of
    (entry id, entry), oldest first; with ``limit``, the newest ``limit`` newest first."""
    where: list[sql.Composable] = []
    params: list[Any] = []
    if trajectory is not None:
        where.append(sql.SQL("trajectory = %s"))
        params.append(trajectory)
    if since is not None:
        where.append(sql.SQL("started_at >= %s"))
        params.append(since)
    parts: list[sql.Composable] = [sql.SQL("SELECT entry_id, record FROM askcache_ledger_entries")]
    if where:
        parts += [sql.SQL(" WHERE "), sql.SQL(" AND ").join(where)]
    if limit is None:
        return sql.Composed([*parts, sql.SQL(" ORDER BY started_at, seq")]), params
    parts.append(sql.SQL(" ORDER BY started_at DESC, seq DESC LIMIT %s"))
    return sql.Composed(parts), [*params, limit]


def create(connection: Connection[Any], url: str, *, timeout: float = 300.0) -> None:
    """Create the tables if they are missing, or upgrade them from an older version
    (idempotent, safe with many processes at once); an upgrade's statements may take up to
    ``timeout`` seconds (an index built over a large table).

    Raises:
        LedgerUnavailableError: the tables were made by a newer askcache (``url``, the
            ledger's URL without its password, names it).
    """
    with connection.transaction():
        exists = connection.execute("SELECT to_regclass('askcache_ledger_meta')").fetchone()
        if exists is not None and exists[0] is not None:
            found = connection.execute(_VERSION).fetchone()
            if found is not None and int(found[0]) >= SCHEMA_VERSION:
                _check_version(int(found[0]), url)
                return
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        connection.execute(SET_STATEMENT_TIMEOUT, (f"{timeout:.0f}s",))
        for statement in [*_CREATE[:-1], *_DAY_TABLES, *_DAY_TRIGGER]:
            connection.execute(statement)
        connection.execute(_CREATE[-1], (str(SCHEMA_VERSION),))
        found = connection.execute(_VERSION).fetchone()
        _check_version(int(found[0]) if found else SCHEMA_VERSION, url)


def _check_version(version: int, url: str) -> None:
    if version > SCHEMA_VERSION:
        raise LedgerUnavailableError(
            url,
            "open",
            f"its tables are version {version}, this askcache knows up to {SCHEMA_VERSION}: "
            "upgrade askcache",
        )
