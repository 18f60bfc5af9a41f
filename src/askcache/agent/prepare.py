"""Before a run, whoever owns its loop (:class:`~askcache.agent.act.Agent`, or the user's own
loop through :mod:`askcache.loop`): its run ledger is opened, the writes earlier runs left in
the outbox are sent, the
named trajectory is found usable or not, and a replay that may heal knows its destination can
be written before the first model call.
"""

from __future__ import annotations

import logging

from askcache.agent.outbox_sync import sync_outbox
from askcache.foundation.errors import AskCacheError, CacheStorageError, StorageUnwritableError
from askcache.foundation.settings import CacheStrategy, CachingSettings, HealMode
from askcache.storage.cache_storage import CacheStorage, load_cache_file
from askcache.storage.ledger import RunLedger, open_ledger
from askcache.storage.outbox import KeptWrite, Outbox

__all__ = ["check_heal_destination", "open_outbox", "open_run_ledger", "usable"]

logger = logging.getLogger(__name__)


def open_run_ledger(storage: CacheStorage, settings: CachingSettings) -> RunLedger:
    """The run ledger the settings name (``ledger``, else ``$ASKCACHE_LEDGER``, else the
    storage's own), pruned after ``ledger_retention_days``."""
    return open_ledger(storage, settings.ledger, retention_days=settings.ledger_retention_days)


def open_outbox(
    storage: CacheStorage, settings: CachingSettings, ledger: RunLedger
) -> tuple[Outbox, list[KeptWrite]]:
    """The storage's outbox, and the writes of earlier runs it sent now (ledger entries to
    ``ledger``; none under strategy ``off``); a failure to send is logged, never raised (they
    stay kept)."""
    outbox = Outbox(settings.outbox_dir, storage.destination())
    if settings.strategy == CacheStrategy.OFF:
        return outbox, []
    try:
        return outbox, sync_outbox(storage, outbox, ledger).sent
    except (AskCacheError, OSError) as exc:
        logger.warning("could not send the outbox %s: %s", outbox.folder, exc)
        return outbox, []


def check_heal_destination(storage: CacheStorage, filename: str, settings: CachingSettings) -> None:
    """Before the first model call of a replay that may heal: the destination exists and
    can be written (a heal must have somewhere to go).

    Raises:
        StorageUnwritableError: it cannot be written.
    """
    if settings.heal_mode == HealMode.OFF:
        return
    try:
        storage.check_writable(filename)
    except StorageUnwritableError:
        raise
    except CacheStorageError as exc:
        raise StorageUnwritableError(filename, exc.where, exc.reason) from exc


def usable(storage: CacheStorage, filename: str) -> bool:
    """True when the file exists and is valid. A corrupt file raises: re-recording over it
    would destroy it, and the user should decide."""
    return storage.exists(filename) and load_cache_file(storage, filename).metadata.is_valid
