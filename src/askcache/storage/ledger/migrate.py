"""Moving askcache 0.1's JSON ledger (``.ledger/<trajectory>/<time>-<id>.json``) into SQLite, on
the first open of a local cache folder's ledger.

Entries are copied in batches, each batch one transaction, in the order they were made (per
trajectory, by start time), so the summaries fold them as the folder engine would have. An
entry keeps its file name's stem as its id, so copying it again stores nothing: a migration
cut short (a crash, ``kill -9``) resumes where its last committed batch ended. When every
entry is in, the database says so (``meta.json_migrated``) and the folder is not read again.

The JSON files are left where they are: nothing is deleted, older askcache versions still see
the entries made before the migration (not those made after), and once the migration is done
they may be removed by hand.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from askcache.storage.cache_storage import CacheStorage
from askcache.storage.ledger.folder import FolderLedger, entry_id_of
from askcache.storage.ledger.sqlite import SqliteLedger

__all__ = ["MIGRATED_KEY", "Progress", "migrate_folder"]

logger = logging.getLogger(__name__)

MIGRATED_KEY = "json_migrated"
"""The database's note that the JSON entries are in (its value: how many were found)."""

Progress = Callable[[int, int], None]
"""Told ``(entries done, entries in all)`` after each committed batch."""


def migrate_folder(
    storage: CacheStorage,
    ledger: SqliteLedger,
    *,
    batch: int = 1000,
    progress: Progress | None = None,
) -> int:
    """Copy the JSON entries of ``storage``'s ``.ledger/`` folder into ``ledger`` unless that
    was done; how many it stored now (see the module docstring).

    Raises:
        LedgerUnavailableError: the database cannot be written (nothing is lost: the JSON
            files stay, and the next open resumes).
    """
    if ledger.meta(MIGRATED_KEY) is not None:
        return 0
    folder = FolderLedger(storage)
    names = sorted(folder.entry_names(), key=lambda name: name.rsplit("/", 1))
    if not names and not ledger.path.is_file():
        return 0  # nothing to migrate, and no reason to create the database yet
    stored = 0
    for start in range(0, len(names), batch):
        chunk = names[start : start + batch]
        found = ((entry_id_of(name), folder.read_entry(name)) for name in chunk)
        stored += ledger.append_many((key, r) for key, r in found if r is not None)
        if progress is not None:
            progress(start + len(chunk), len(names))
    ledger.set_meta(MIGRATED_KEY, str(len(names)))
    if names:
        logger.info(
            "moved %d run-ledger entries of %s into %s (the JSON files are left in place)",
            stored,
            storage.destination(),
            ledger.path,
        )
    return stored
