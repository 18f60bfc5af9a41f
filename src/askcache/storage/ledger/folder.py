"""The folder engine: one JSON object per entry under ``.ledger/<trajectory>/``, askcache 0.1's
format.

Each entry is stored with :meth:`~askcache.storage.cache_storage.CacheStorage.create` as
``.ledger/<trajectory name>/<UTC time>-<id>.json``; entries are created, never rewritten, so
any number of processes append at once without locks. There is no index: every read lists
and parses the entries, and a summary is the :func:`~askcache.storage.ledger.summary.fold` of
all of them, so reads grow with the number of runs. It remains as an engine for tests and for
reading an old ledger (:mod:`askcache.storage.ledger.migrate`); the default for a folder is
:class:`~askcache.storage.ledger.sqlite.SqliteLedger`.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime

from pydantic import ValidationError

from askcache.foundation.errors import AskCacheError, CacheExistsError, CacheNotFoundError
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.ledger.engine import LEDGER_FOLDER, RunLedger
from askcache.storage.ledger.records import RunRecord, newest_records
from askcache.storage.ledger.spot_images import (
    SpotImages,
    SpotKey,
    put_object,
    read_objects,
)
from askcache.storage.ledger.summary import TrajectorySummary, fold_all

__all__ = ["FolderLedger", "create_entry", "entry_id_of"]

logger = logging.getLogger(__name__)

_STAMP = "%Y%m%dT%H%M%S.%fZ"


def create_entry(
    storage: CacheStorage, folder: str, record: RunRecord, entry_id: str | None
) -> str:
    """Create ``record`` as ``<folder>/<UTC time>-<id>.json`` and return its name. With
    ``entry_id`` (a re-sent entry), an object already there under that id is the same entry:
    it is kept, not an error."""
    stamp = record.started_at.astimezone(UTC).strftime(_STAMP)
    unique = RunLedger.new_entry_id() if entry_id is None else entry_id
    name = f"{folder}/{stamp}-{unique}.json"
    try:
        storage.create(name, record.model_dump_json().encode("utf-8") + b"\n")
    except CacheExistsError:
        if entry_id is None:
            raise
    return name


def entry_id_of(name: str) -> str:
    """The id under which another engine keeps the folder entry ``name``: its file name's
    stem (``<UTC time>-<id>``), unique and stable, so copying it twice stores it once."""
    return name.rsplit("/", 1)[-1].removesuffix(".json")


class FolderLedger(RunLedger):
    """Entries as JSON objects in a storage's ``.ledger/`` folder (see the module docstring)."""

    def __init__(self, storage: CacheStorage) -> None:
        self.storage = storage

    @staticmethod
    def folder(trajectory: str) -> str:
        """The ledger folder of one trajectory."""
        return f"{LEDGER_FOLDER}/{trajectory}"

    def append(self, record: RunRecord, *, entry_id: str | None = None) -> str:
        return create_entry(self.storage, self.folder(record.trajectory), record, entry_id)

    def entry_names(self, trajectory: str | None = None) -> list[str]:
        """The names of the JSON entries stored (of one trajectory, or all)."""
        prefix = LEDGER_FOLDER if trajectory is None else self.folder(trajectory)
        return [name for name in self.storage.list_prefix(prefix) if name.endswith(".json")]

    def read_entry(self, name: str) -> RunRecord | None:
        """The entry ``name``; ``None``, with a warning naming it, when it cannot be read."""
        try:
            return RunRecord.model_validate_json(self.storage.read(name))
        except CacheNotFoundError:
            return None  # deleted meanwhile
        except (AskCacheError, ValidationError, ValueError) as exc:
            logger.warning("skipping unreadable ledger entry %s: %s", name, exc)
            return None

    def records(
        self,
        trajectory: str | None = None,
        *,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[RunRecord]:
        found = [self.read_entry(name) for name in self.entry_names(trajectory)]
        return newest_records([r for r in found if r is not None], since, limit)

    def summary(self, trajectory: str) -> TrajectorySummary | None:
        records = self.records(trajectory)
        if not records:
            return None
        return fold_all(TrajectorySummary(trajectory=trajectory), records)

    def summaries(self) -> list[TrajectorySummary]:
        by_name: defaultdict[str, list[RunRecord]] = defaultdict(list)
        for record in self.records():
            by_name[record.trajectory].append(record)
        return [
            fold_all(TrajectorySummary(trajectory=name), by_name[name]) for name in sorted(by_name)
        ]

    def put_spot_images(self, images: SpotImages) -> None:
        """See :meth:`RunLedger.put_spot_images`: one object per hot spot under
        ``.ledger-images/`` (:func:`~askcache.storage.ledger.spot_images.put_object`)."""
        put_object(self.storage, images)

    def spot_images(self, keys: Iterable[SpotKey]) -> dict[SpotKey, SpotImages]:
        """See :meth:`RunLedger.spot_images`: one object read per spot."""
        return read_objects(self.storage, keys)

    def prune(self, before: datetime) -> int:
        """Nothing: this engine's summaries are folded from its entries, so it keeps every
        entry (retention needs an engine with summaries of their own)."""
        return 0
