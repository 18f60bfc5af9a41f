"""The run ledger in PostgreSQL, for a fleet: :class:`PostgresLedger` (``postgresql://...``).

Every machine of a fleet appends to one database; each append stores the entry and folds it
into its trajectory's summary row in one transaction (the summary row is locked while it is
folded, so concurrent writers never lose an update), and the reads that need totals read
summary rows: ``summary()`` and the hand-back check one row by its key, ``summaries()`` one
row per trajectory, ``step_waits()`` one index range of at most ``limit`` rows. Raw entries
are kept for the retention period (:meth:`prune`), summaries for ever. The tables
(:mod:`askcache.storage.ledger.postgres_schema`) are created, or upgraded, on first use.

A ledger write must never hold up a replay: connecting and every statement are bounded
(:class:`PostgresTimeouts`), and once the server failed to answer, the ledger fails at once for
:attr:`PostgresTimeouts.retry_after` seconds instead of waiting again. A failure raises
:class:`~askcache.foundation.errors.LedgerUnavailableError` (an ``OSError``): the run's writer keeps
the entry in the outbox, and ``askcache sync`` or the next run sends it (the entry id makes sending
it again harmless).

Needs ``pip install 'askcache[postgres]'`` (psycopg 3 and psycopg_pool).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from askcache.foundation.errors import (
    LedgerUnavailableError,
    LedgerUrlError,
    MissingDependencyError,
)
from askcache.storage.ledger.day_totals import DAY_COUNTS, DayTotals
from askcache.storage.ledger.engine import RunLedger
from askcache.storage.ledger.records import RunRecord
from askcache.storage.ledger.spot_images import SpotImages, SpotKey
from askcache.storage.ledger.summary import TrajectorySummary, fold
from askcache.storage.ledger.url import HIDDEN, PasswordFilter, hide_password, redact_url
from askcache.storage.ledger.waits import (
    DEFAULT_WAIT_RUNS,
    StepWaits,
    key_of,
    merge_waits,
    waits_key,
)

try:
    import psycopg
    from psycopg import conninfo
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as missing:  # pragma: no cover (the dev extra installs them)
    raise MissingDependencyError(
        "the PostgreSQL run ledger (postgresql://...)",
        missing.name or "psycopg",
        "pip install 'askcache[postgres]'",
    ) from missing

from askcache.storage.ledger import postgres_schema as schema

__all__ = ["PostgresLedger", "PostgresTimeouts"]

logger = logging.getLogger(__name__)

_DRIVER_LOGGERS = ("psycopg", "psycopg.pool")
"""The driver's loggers, whose records quote libpq's messages (the password hidden in them:
:class:`~askcache.storage.ledger.url.PasswordFilter`)."""

_DRIVER_FILTER = PasswordFilter()
"""The one filter on :data:`_DRIVER_LOGGERS`, told each ledger URL opened in this process."""

PRUNE_BATCH = 10_000
"""Raw entries deleted per transaction by :meth:`PostgresLedger.prune`."""

PRUNE_EVERY = 3600.0
"""Seconds between the prunes an append makes on its own (per process)."""


class PostgresTimeouts(BaseModel):
    """How long a PostgreSQL ledger waits before it gives up (then the write waits in the
    outbox). A ``connect_timeout`` or ``statement_timeout`` given in the URL
    (``?connect_timeout=2&options=-c%20statement_timeout%3D2000``) wins over these."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    connect: float = 3.0
    """Seconds to get a connection (libpq's ``connect_timeout``, and the pool's wait)."""
    statement: float = 5.0
    """Seconds one statement may run (the server's ``statement_timeout``; ``lock_timeout``
    too), for appends and the one-row reads."""
    bulk: float = 300.0
    """Seconds for a statement of :meth:`PostgresLedger.records` without a limit, and for
    each statement that upgrades the tables from an older version (an index built)."""
    retry_after: float = 30.0
    """After a failure, seconds during which the ledger fails at once without trying."""


class PostgresLedger(RunLedger):
    """A run ledger kept in a PostgreSQL database (see the module docstring).

    Args:
        url: ``postgresql://user:password@host:port/database?...`` (any libpq URL; the
            password is never shown: messages carry :attr:`url`).
        retention_days: An append prunes raw entries older than that, at most once an hour
            per process; ``None`` keeps them for ever.
        timeouts: See :class:`PostgresTimeouts`.
        pool_size: Connections kept open at most (they are opened when needed).
        source: The setting ``url`` came from, for errors (``--ledger``).

    Raises:
        LedgerUrlError: ``url`` is not a URL libpq reads.
    """

    supports_retention = True

    def __init__(
        self,
        url: str,
        *,
        retention_days: int | None = None,
        timeouts: PostgresTimeouts | None = None,
        pool_size: int = 4,
        source: str = "the ledger URL",
    ) -> None:
        self.retention_days = retention_days
        self.timeouts = timeouts or PostgresTimeouts()
        self._raw_url, self._password = url, ""
        try:
            params = conninfo.conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            what = self._hide(_clean(exc), instead="libpq's message quotes part of the password")
            reason = f"not a PostgreSQL URL ({what})"
            raise LedgerUrlError(redact_url(url), source, reason) from None
        self._password = str(params.get("password") or "")
        self.url = self._hide(_shown(params), instead="postgresql://...")
        """The URL as messages show it: user, host, port and database, the password hidden."""
        ports = str(params.get("port") or "0").split(",")
        if not all(port.strip().isdigit() for port in ports):
            raise LedgerUrlError(self.url, source, "its port is not a number")
        _DRIVER_FILTER.add(url, f"{self.url}: {_UNSHOWN}", _DRIVER_LOGGERS)
        self._connect_errors: list[str] = []
        self._pool = ConnectionPool(
            connection_class=_recording_failures(self._connect_errors),
            kwargs=_with_defaults(params, self.timeouts),
            min_size=0,
            max_size=pool_size,
            open=False,
            timeout=self.timeouts.connect,
            check=ConnectionPool.check_connection,
            name="askcache-ledger",
        )
        self._lock = threading.Lock()
        self._opened = False
        self._schema_ready = False
        self._down_until = 0.0
        self._down_reason = ""
        self._next_prune = 0.0

    def append(self, record: RunRecord, *, entry_id: str | None = None) -> str:
        entry = self.new_entry_id() if entry_id is None else entry_id
        with self._transaction("write") as cursor:
            cursor.execute(schema.INSERT_ENTRY, _entry_row(entry, record))
            if cursor.fetchone() is not None:  # stored now, not before: fold it in
                self._fold(cursor, record, self.url)
        self._maybe_prune()
        return entry

    @staticmethod
    def _fold(cursor: psycopg.Cursor[Any], record: RunRecord, url: str) -> None:
        """Fold ``record`` into its trajectory's summary row, locked meanwhile (concurrent
        writers of one trajectory fold one after the other)."""
        name = record.trajectory
        empty = TrajectorySummary(trajectory=name)
        row = cursor.execute(schema.LOCK_SUMMARY, (name,)).fetchone()
        if row is None:  # its first entry (or a writer is giving it its first summary now)
            cursor.execute(schema.ENSURE_SUMMARY, (name, empty.model_dump_json()))
            row = cursor.execute(schema.LOCK_SUMMARY, (name,)).fetchone()
        try:
            current = empty if row is None else TrajectorySummary.model_validate(row[0])
        except ValidationError as exc:  # kept in the outbox until the row is repaired
            reason = f"the summary of {name} is unreadable: {exc}"
            raise LedgerUnavailableError(url, "write", reason) from None
        cursor.execute(schema.UPDATE_SUMMARY, (fold(current, record).model_dump_json(), name))

    def records(
        self,
        trajectory: str | None = None,
        *,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[RunRecord]:
        query, params = schema.select_entries(trajectory, since, limit)
        bulk = None if limit is not None else self.timeouts.bulk
        with self._transaction("read", statement_timeout=bulk) as cursor:
            rows = cursor.execute(query, params).fetchall()
        if limit is not None:
            rows.reverse()
        found: list[RunRecord] = []
        for entry_id, data in rows:
            try:
                found.append(RunRecord.model_validate(data))
            except (ValidationError, ValueError, TypeError) as exc:
                logger.warning("skipping unreadable ledger entry %s: %s", entry_id, exc)
        return found

    def step_waits(
        self,
        trajectory: str,
        *,
        profile: str | None,
        digest: str,
        limit: int = DEFAULT_WAIT_RUNS,
    ) -> StepWaits:
        """See :meth:`RunLedger.step_waits`: one range of the waits index, ``limit`` rows."""
        key = key_of(digest, profile)
        with self._transaction("read") as cursor:
            rows = cursor.execute(schema.SELECT_WAITS, (trajectory, key, max(limit, 0)))
            found = rows.fetchall()
        return merge_waits(
            waits for entry_id, data in found if (waits := _waits(entry_id, data)) is not None
        )

    def summary(self, trajectory: str) -> TrajectorySummary | None:
        with self._transaction("read") as cursor:
            row = cursor.execute(schema.SELECT_SUMMARY, (trajectory,)).fetchone()
        return None if row is None else self._summary(trajectory, row[0])

    def summaries(self) -> list[TrajectorySummary]:
        with self._transaction("read") as cursor:
            rows = cursor.execute(schema.SELECT_SUMMARIES).fetchall()
        found = [self._summary(name, data) for name, data in rows]
        return sorted((s for s in found if s is not None), key=lambda s: s.trajectory)

    def fleet_summaries(self) -> tuple[list[TrajectorySummary], dict[str, DayTotals] | None]:
        """The summaries without their days, and the days added up by the database from the
        day tables its trigger keeps (:data:`~askcache.storage.ledger.postgres_schema.SUM_DAYS`:
        one row per day, not one bucket per trajectory and day), in one repeatable-read
        transaction, so the two agree."""
        with self._transaction("read") as cursor:
            cursor.execute(schema.REPEATABLE_READ)
            rows = cursor.execute(schema.SELECT_SUMMARIES_WITHOUT_DAYS).fetchall()
            day_rows = cursor.execute(schema.SUM_DAYS).fetchall()
            model_rows = cursor.execute(schema.SUM_DAY_MODELS).fetchall()
        found = [self._summary(name, data) for name, data in rows]
        summaries = sorted((s for s in found if s is not None), key=lambda s: s.trajectory)
        return summaries, _day_totals(day_rows, model_rows)

    def prune(self, before: datetime) -> int:
        dropped = 0
        while True:
            with self._transaction("prune") as cursor:
                cursor.execute(schema.PRUNE_BATCH, (_utc(before), PRUNE_BATCH))
                count = cursor.rowcount
            dropped += count
            if count < PRUNE_BATCH:
                return dropped

    def put_spot_images(self, images: SpotImages) -> None:
        """See :meth:`RunLedger.put_spot_images`: one row of
        ``askcache_ledger_spot_images`` (made by the first write)."""
        with self._transaction("write") as cursor:
            schema.ensure_spots(cursor)
            cursor.execute(
                schema.PUT_SPOT,
                (images.trajectory, images.spot, _utc(images.at), images.model_dump_json()),
            )

    def spot_images(self, keys: Iterable[SpotKey]) -> dict[SpotKey, SpotImages]:
        """See :meth:`RunLedger.spot_images`: one query of the spots' primary keys."""
        wanted = list(keys)
        found: dict[SpotKey, SpotImages] = {}
        if not wanted:
            return found
        with self._transaction("read") as cursor:
            exists = cursor.execute(schema.HAS_SPOTS).fetchone()
            if exists is None or exists[0] is None:
                return found
            rows = cursor.execute(
                schema.GET_SPOT, ([t for t, _ in wanted], [s for _, s in wanted])
            ).fetchall()
        for trajectory, spot, text in rows:
            try:
                found[trajectory, spot] = SpotImages.model_validate_json(text)
            except (ValidationError, ValueError) as exc:
                logger.warning(
                    "skipping unreadable failing-region images of %s (%s): %s",
                    trajectory,
                    spot,
                    exc,
                )
        return found

    def close(self) -> None:
        self._pool.close()

    def _summary(self, trajectory: str, data: Any) -> TrajectorySummary | None:
        try:
            if isinstance(data, str):  # JSON text (SELECT_SUMMARIES_WITHOUT_DAYS)
                return TrajectorySummary.model_validate_json(data)
            return TrajectorySummary.model_validate(data)
        except (ValidationError, ValueError, TypeError) as exc:
            logger.warning("skipping unreadable ledger summary of %s: %s", trajectory, exc)
            return None

    def _maybe_prune(self) -> None:
        """Prune one batch of expired entries, at most once per :data:`PRUNE_EVERY` seconds;
        a failure is logged, never raised (the append is done)."""
        if self.retention_days is None or time.monotonic() < self._next_prune:
            return
        self._next_prune = time.monotonic() + PRUNE_EVERY
        before = datetime.now(UTC) - timedelta(days=self.retention_days)
        try:
            with self._transaction("prune") as cursor:
                cursor.execute(schema.PRUNE_BATCH, (before, PRUNE_BATCH))
        except LedgerUnavailableError as exc:
            logger.warning("%s", exc)

    @contextmanager
    def _transaction(
        self, operation: str, *, statement_timeout: float | None = None
    ) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor in one transaction, committed when the block ends; any database failure
        becomes :class:`LedgerUnavailableError`, and makes the ledger fail at once for
        :attr:`PostgresTimeouts.retry_after` seconds."""
        if time.monotonic() < self._down_until:
            raise LedgerUnavailableError(self.url, operation, self._down_reason)
        self._connect_errors.clear()
        try:
            self._open()
            with self._pool.connection() as connection, connection.transaction():
                cursor = connection.cursor()
                if statement_timeout is not None:
                    cursor.execute(schema.SET_STATEMENT_TIMEOUT, (f"{statement_timeout:.0f}s",))
                yield cursor
        except psycopg.Error as exc:
            reason = _clean(exc)
            if isinstance(exc, PoolTimeout) and self._connect_errors:  # say why, not how long
                reason = _clean(self._connect_errors[-1])
            reason = self._hide(reason, instead=_UNSHOWN)
            if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
                wait = self.timeouts.retry_after
                self._down_until = time.monotonic() + wait
                self._down_reason = f"{reason} (not tried again for {wait:g} s)"
            raise LedgerUnavailableError(self.url, operation, reason) from None

    def _hide(self, text: str, *, instead: str) -> str:
        """``text`` with the URL's password masked, as the URL writes it and as libpq read it
        (:func:`~askcache.storage.ledger.url.hide_password`); ``instead`` when it quotes part
        of it."""
        text = hide_password(text, self._raw_url, instead=instead)
        if self._password and self._password in text:  # a password given another way
            text = text.replace(self._password, HIDDEN)
        return text

    def _open(self) -> None:
        """Open the pool and create the tables, once."""
        with self._lock:
            if not self._opened:
                self._pool.open(wait=False)
                self._opened = True
            if not self._schema_ready:
                with self._pool.connection() as connection:
                    schema.create(connection, self.url, timeout=self.timeouts.bulk)
                self._schema_ready = True


def _shown(params: dict[str, Any]) -> str:
    """``postgresql://user:***@host:port/database``, from the parsed URL (so a password given
    anywhere in it, ``?password=`` included, is never part of it)."""
    user = str(params.get("user") or "")
    secret = ":***" if params.get("password") else ""
    who = f"{user}{secret}@" if user or secret else ""
    host = str(params.get("host") or params.get("hostaddr") or "")
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{who}{host}{port}/{params.get('dbname') or ''}"


def _recording_failures(errors: list[str]) -> type[psycopg.Connection[Any]]:
    """A connection class that appends why each connection attempt failed to ``errors`` (the
    pool connects in the background and only says that no connection came in time)."""

    class _Connection(psycopg.Connection[Any]):
        @classmethod
        def connect(cls, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().connect(*args, **kwargs)
            except psycopg.Error as exc:
                errors[:] = [str(exc)]
                raise

    return _Connection


def _with_defaults(params: dict[str, Any], timeouts: PostgresTimeouts) -> dict[str, Any]:
    """libpq connection parameters: the URL's, with the timeouts and UTC added where the URL
    does not set them."""
    merged = dict(params)
    merged.setdefault("connect_timeout", str(max(1, round(timeouts.connect))))
    merged.setdefault("application_name", "askcache")
    options = str(merged.get("options") or "")
    statement_ms = str(round(timeouts.statement * 1000))
    for name, value in (("statement_timeout", statement_ms), ("lock_timeout", statement_ms),
                        ("TimeZone", "UTC")):  # fmt: skip
        if name not in options:
            options = f"{options} -c {name}={value}".strip()
    merged["options"] = options
    return merged


def _entry_row(
    entry_id: str, record: RunRecord
) -> tuple[str, str, datetime, str, str, str, str | None]:
    return (
        entry_id,
        record.trajectory,
        _utc(record.started_at),
        record.event,
        record.status,
        record.model_dump_json(),
        waits_key(record),
    )


def _waits(entry_id: str, data: Any) -> dict[int, float] | None:
    """An entry's step waits (its ``step_waits`` as JSONB); ``None``, with a warning naming
    it, when unreadable."""
    try:
        return {int(index): float(seconds) for index, seconds in (data or {}).items()}
    except (ValueError, TypeError, AttributeError) as exc:
        logger.warning("skipping unreadable ledger entry %s: %s", entry_id, exc)
        return None


def _day_totals(
    day_rows: list[tuple[Any, ...]], model_rows: list[tuple[Any, ...]]
) -> dict[str, DayTotals]:
    """:data:`~askcache.storage.ledger.postgres_schema.SUM_DAYS`' and ``SUM_DAY_MODELS``' rows
    as one :class:`DayTotals` per day."""
    days = {
        str(row[0]): DayTotals(**dict(zip(DAY_COUNTS, row[1:], strict=True))) for row in day_rows
    }
    for day, model, *figures in model_rows:
        days.setdefault(str(day), DayTotals()).models[str(model)] = [int(f) for f in figures]
    return days


def _utc(when: datetime) -> datetime:
    """``when`` with a time zone (a naive time is UTC, as everywhere in the ledger)."""
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


_UNSHOWN = (
    "the server or libpq refused it, and its message, which quotes part of the URL's password, "
    "is not shown (percent-encode the password's @, : and / in the URL)"
)
"""The reason given when the driver's message would show part of the password."""


def _clean(error: BaseException | str) -> str:
    """One line of an error's message (the password is masked by the caller)."""
    text = str(error).strip() or type(error).__name__
    return " ".join(part.strip() for part in text.splitlines() if part.strip())[:500]
