"""A process migrating a cache folder's JSON ledger into SQLite that stops, after its second
committed batch, to wait for a line on stdin (so a test can ``kill -9`` it there):
``python -m tests.ledger.migrator CACHE_DIR BATCH``."""

from __future__ import annotations

import sys

from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger.migrate import migrate_folder
from askcache.storage.ledger.sqlite import SQLITE_FILE, SqliteLedger


def main(cache_dir: str, batch: int) -> None:
    storage = LocalCacheStorage(cache_dir)

    def progress(done: int, total: int) -> None:
        if done == 2 * batch:
            print(f"committed {done} of {total}", flush=True)
            sys.stdin.readline()

    migrate_folder(
        storage, SqliteLedger(storage.directory / SQLITE_FILE), batch=batch, progress=progress
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
