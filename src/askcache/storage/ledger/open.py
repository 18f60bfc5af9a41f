"""Which engine keeps a storage's run ledger: :func:`open_ledger`.

``url`` (``CachingSettings.ledger``, the CLI's ``--ledger``, ``$ASKCACHE_LEDGER``, in that
order) chooses:

* ``None``: the default for the storage: a local folder keeps it in SQLite at
  ``<folder>/.ledger/ledger.sqlite3`` (:mod:`.sqlite`; the JSON entries of askcache 0.1 are
  moved in on first open, :mod:`.migrate`); an S3 (fsspec) storage keeps it as objects in the
  storage (:mod:`.segments`); others keep JSON objects (:mod:`.folder`);
* ``sqlite:///PATH``: SQLite at ``PATH`` (relative; ``sqlite:////abs/path`` for an absolute
  one, as SQLAlchemy writes it);
* ``postgresql://...``: PostgreSQL (needs ``askcache[postgres]``).

A URL's password is never shown: messages carry :func:`redact_url`'s form, and an engine's
messages about its URL have the password masked (:mod:`.url`).
"""

from __future__ import annotations

import logging
import os
import re

from askcache.foundation.errors import LedgerUnavailableError, LedgerUrlError
from askcache.foundation.retention import DEFAULT_LEDGER_RETENTION_DAYS
from askcache.storage.cache_storage import CacheStorage, LocalCacheStorage
from askcache.storage.ledger.engine import RunLedger
from askcache.storage.ledger.folder import FolderLedger
from askcache.storage.ledger.migrate import Progress, migrate_folder
from askcache.storage.ledger.sqlite import SQLITE_FILE, SqliteLedger
from askcache.storage.ledger.url import redact_url
from askcache.storage.remote import FsspecCacheStorage

__all__ = ["LEDGER_ENV", "LEDGER_URL_SCHEMES", "open_ledger", "redact_url"]

logger = logging.getLogger(__name__)

LEDGER_ENV = "ASKCACHE_LEDGER"
"""The environment variable giving the ledger URL when neither the settings nor the command
line do."""

LEDGER_URL_SCHEMES = ("sqlite", "postgresql", "postgres")
"""The URL schemes :func:`open_ledger` knows."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def open_ledger(
    storage: CacheStorage,
    url: str | None = None,
    *,
    retention_days: int | None = DEFAULT_LEDGER_RETENTION_DAYS,
    source: str = "CachingSettings.ledger",
    progress: Progress | None = None,
) -> RunLedger:
    """The run ledger of ``storage``, kept where ``url`` (else ``$ASKCACHE_LEDGER``) says (see
    the module docstring).
    ``retention_days``: raw entries older than that are pruned (summaries stay); ``None``
    keeps them for ever. ``source`` names the setting ``url`` came from, for errors;
    ``progress`` is told how a first open's migration goes.

    Raises:
        LedgerUrlError: ``url`` names no engine askcache knows.
        MissingDependencyError: a PostgreSQL URL without ``askcache[postgres]`` installed.
    """
    if url is None and os.environ.get(LEDGER_ENV):
        url, source = os.environ[LEDGER_ENV], f"${LEDGER_ENV}"
    if url is None:
        return _default(storage, retention_days, progress)
    match = _SCHEME.match(url)
    scheme = match.group(1).lower() if match else ""
    if scheme not in LEDGER_URL_SCHEMES:
        raise LedgerUrlError(redact_url(url), source, "not a ledger URL")
    if scheme in ("postgresql", "postgres"):
        from askcache.storage.ledger.postgres import PostgresLedger  # optional: askcache[postgres]

        return PostgresLedger(url, retention_days=retention_days, source=source)
    path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
    if not path:
        raise LedgerUrlError(redact_url(url), source, "names no file after sqlite:///")
    return SqliteLedger(path, retention_days=retention_days)


def _default(
    storage: CacheStorage, retention_days: int | None, progress: Progress | None
) -> RunLedger:
    """A local folder's own SQLite ledger (its JSON entries moved in on first open); the
    folder engine elsewhere, and where the database cannot be made (a read-only folder)."""
    if isinstance(storage, FsspecCacheStorage):  # S3: no database the fleet shares
        from askcache.storage.ledger.segments import SegmentLedger  # only S3 needs it

        return SegmentLedger(storage, retention_days=retention_days)
    if not isinstance(storage, LocalCacheStorage):
        return FolderLedger(storage)
    ledger = SqliteLedger(storage.directory / SQLITE_FILE, retention_days=retention_days)
    try:
        migrate_folder(storage, ledger, progress=progress)
    except LedgerUnavailableError as exc:
        logger.warning("reading the JSON run ledger of %s as it is: %s", storage.directory, exc)
        return FolderLedger(storage)
    return ledger
