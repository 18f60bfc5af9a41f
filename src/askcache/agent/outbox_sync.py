"""A run's writes (its heal and its run-ledger entries): sent now, or kept in the outbox and
sent later.

:class:`RunWriter` writes to the storage and, when the storage cannot be written (the server
is down, the disk full, the folder read-only), keeps the write in the outbox
(:mod:`askcache.storage.outbox`) instead of dropping it; it remembers what it wrote and what it
kept, so a run's result never reports a write that did not happen.

:func:`sync_outbox` sends what the outbox keeps for a storage, oldest first; it runs at the
start of every :meth:`~askcache.agent.act.Agent.act` and as ``askcache sync``. Sending again is
harmless: a ledger entry carries a fixed id and is stored at most once; a heal that was
written before (or whose commit was cut off after its version) is recognised and not
written twice; a heal whose trajectory changed meanwhile becomes a proposal, as any heal
does.

Kinds of item: ``ledger_entry`` (:class:`PendingLedgerEntry`), ``heal``
(:class:`PendingHeal`: the heal and the ledger entry that says what it wrote) and
``recording`` (:class:`~askcache.record.store.PendingRecording`, kept by the recorder itself:
sent by :func:`~askcache.record.store.send_recording`).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from askcache.foundation.errors import (
    AskCacheError,
    CacheExistsError,
    CacheNotFoundError,
    LedgerUnavailableError,
    OutboxError,
)
from askcache.heal.trajectory import HealOutcome, PreparedHeal, apply_heal
from askcache.record.store import (
    RECORDING_KIND,
    PendingRecording,
    StoredRecording,
    send_recording,
)
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.ledger import RunLedger, RunRecord, open_ledger
from askcache.storage.outbox import KeptWrite, Outbox, OutboxItem

__all__ = [
    "PendingHeal",
    "PendingLedgerEntry",
    "RunWriter",
    "SyncReport",
    "is_outage",
    "sync_outbox",
    "within",
]

logger = logging.getLogger(__name__)

LEDGER_WRITE_TIMEOUT = 5.0
"""Default of :attr:`RunWriter.ledger_timeout`."""

_T = TypeVar("_T")


def within(seconds: float, call: Callable[[], _T]) -> _T:
    """``call()``, run on a daemon thread and given up after ``seconds``: its result, or the
    exception it raised.

    Raises:
        LedgerUnavailableError: it did not answer in time (it goes on in the background).
    """
    outcome: list[_T] = []
    failure: list[BaseException] = []
    finished = threading.Event()

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # handed to the caller
            failure.append(exc)
        finally:
            finished.set()

    threading.Thread(target=run, name="askcache-ledger-write", daemon=True).start()
    if not finished.wait(seconds):
        raise LedgerUnavailableError("the run ledger", "append", f"no answer in {seconds:g} s")
    if failure:
        raise failure[0]
    return outcome[0]


_ENTRY_ID = r"^[0-9a-f]{12}$"


def is_outage(exc: BaseException) -> bool:
    """True when ``exc`` says the storage could not be reached or written (an operating
    system or storage error), as opposed to a name that exists or is missing."""
    return isinstance(exc, OSError) and not isinstance(exc, CacheExistsError | CacheNotFoundError)


class PendingLedgerEntry(BaseModel):
    """A run-ledger entry kept in the outbox."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    kind: Literal["ledger_entry"] = "ledger_entry"
    """The outbox kind."""
    entry_id: str = Field(pattern=_ENTRY_ID)
    """The entry's fixed id: appending it again stores nothing more."""
    record: RunRecord
    """The entry."""


class PendingHeal(BaseModel):
    """A heal kept in the outbox, with its ledger entry (whose ``event``, ``status`` and
    ``version`` say what the heal turned out to write when it is sent)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    kind: Literal["heal"] = "heal"
    """The outbox kind."""
    heal: PreparedHeal
    """The heal."""
    entry_id: str = Field(pattern=_ENTRY_ID)
    """The fixed id of its ledger entry."""
    record: RunRecord
    """Its ledger entry."""


def _heal_record(record: RunRecord, healed: HealOutcome) -> RunRecord:
    return record.model_copy(
        update={
            "event": healed.event,
            "status": healed.event,
            "version": healed.version,
            "reason": healed.reason or record.reason,
        }
    )


def _steps(steps: list[int]) -> str:
    return ", ".join(str(step) for step in steps)


@dataclass
class RunWriter:
    """Writes one run's heal and ledger entries; keeps in the outbox what the storage does
    not take (see the module docstring)."""

    storage: CacheStorage
    """Where the writes go."""
    outbox: Outbox
    """Where they wait when they cannot go there."""
    ledger: RunLedger
    """The storage's run ledger (:func:`~askcache.storage.ledger.open_ledger`)."""
    entries: list[str] = field(default_factory=list)
    """Ledger entries written to the storage."""
    kept: list[KeptWrite] = field(default_factory=list)
    """Writes kept in the outbox: local, not yet shared."""
    not_written: list[str] = field(default_factory=list)
    """Writes neither the storage nor the outbox took (both failed), for people."""
    ledger_timeout: float = LEDGER_WRITE_TIMEOUT
    """Seconds a ledger entry may take to be written before it is kept in the outbox
    instead: a slow or locked engine never holds up the end of a run for longer."""

    def append(self, record: RunRecord) -> str:
        """Write a ledger entry, or keep it: when the ledger fails, or does not answer within
        :attr:`ledger_timeout` seconds (the entry has a fixed id: if the slow write lands
        after all, sending it again from the outbox stores nothing more). Returns the
        entry's id, written or kept."""
        entry_id = RunLedger.new_entry_id()
        try:
            self.entries.append(
                within(self.ledger_timeout, lambda: self.ledger.append(record, entry_id=entry_id))
            )
        except OSError as exc:
            if not is_outage(exc):
                raise
            summary = f"run-ledger entry of {record.trajectory} ({record.event}, {record.status})"
            self._keep(PendingLedgerEntry(entry_id=entry_id, record=record), summary, exc)
        return entry_id

    def heal(self, heal: PreparedHeal, record: RunRecord) -> HealOutcome | None:
        """Write a heal and its ledger entry (``record``, completed with what was written),
        or keep them; ``None`` when the heal was kept, not written."""
        try:
            healed = apply_heal(self.storage, heal)
        except OSError as exc:
            if not is_outage(exc):
                raise
            summary = f"heal of {heal.name} (steps {_steps(heal.healed_steps)} from the model)"
            pending = PendingHeal(heal=heal, entry_id=RunLedger.new_entry_id(), record=record)
            self._keep(pending, summary, exc)
            return None
        self.append(_heal_record(record, healed))
        return healed

    def _keep(self, payload: PendingLedgerEntry | PendingHeal, summary: str, exc: OSError) -> None:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        try:
            self.kept.append(self.outbox.put(payload.kind, payload, summary=summary, reason=reason))
        except OutboxError as lost:
            logger.error("%s NOT written: %s; and not kept: %s", summary, reason, lost)
            self.not_written.append(f"{summary}: {reason}; the outbox failed too: {lost}")


@dataclass
class SyncReport:
    """What :func:`sync_outbox` did."""

    sent: list[KeptWrite] = field(default_factory=list)
    """Items sent (and removed from the outbox)."""
    heals: list[HealOutcome] = field(default_factory=list)
    """What the heals among them wrote (``proposed``: the trajectory had changed)."""
    recordings: list[StoredRecording] = field(default_factory=list)
    """How the recordings among them were stored."""
    left: list[KeptWrite] = field(default_factory=list)
    """Items still kept (the storage still cannot be written, or the item is unusable)."""
    error: str | None = None
    """Why sending stopped early (the storage's error), if it did."""


def sync_outbox(
    storage: CacheStorage, outbox: Outbox, ledger: RunLedger | None = None
) -> SyncReport:
    """Send what ``outbox`` keeps for ``storage`` (its ledger entries to ``ledger``, by default
    the storage's own), oldest first, removing each item once it is sent. Stops at the first
    item the storage does not take (it is still unreachable);
    an item that cannot be used (an unknown kind, a damaged payload) is left in place with a
    warning and does not stop the others.

    Raises:
        OutboxError: the outbox folder cannot be read.
    """
    report = SyncReport()
    pending = outbox.pending()
    ledger = ledger or open_ledger(storage)
    for position, kept in enumerate(pending):
        try:
            sent = _send(storage, ledger, kept.item)
        except OSError as exc:
            if not is_outage(exc):
                raise
            report.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            report.left.extend(pending[position:])
            logger.warning(
                "the outbox keeps %d writes for %s: %s",
                len(report.left),
                outbox.destination,
                report.error,
            )
            break
        except (AskCacheError, ValidationError, ValueError) as exc:
            logger.warning("outbox item %s cannot be sent and is left in place: %s", kept.path, exc)
            report.left.append(kept)
            continue
        outbox.remove(kept)
        report.sent.append(kept)
        if isinstance(sent, HealOutcome):
            report.heals.append(sent)
        elif isinstance(sent, StoredRecording):
            report.recordings.append(sent)
        logger.warning("sent from the outbox to %s: %s", outbox.destination, kept.summary)
    return report


def _send(
    storage: CacheStorage, ledger: RunLedger, item: OutboxItem
) -> HealOutcome | StoredRecording | None:
    """Send one item, idempotently; what a heal or a recording wrote, if it is one."""
    raw = json.dumps(item.payload)
    if item.kind == "ledger_entry":
        entry = PendingLedgerEntry.model_validate_json(raw)
        ledger.append(entry.record, entry_id=entry.entry_id)
        return None
    if item.kind == "heal":
        pending = PendingHeal.model_validate_json(raw)
        healed = apply_heal(storage, pending.heal, again=True)
        ledger.append(_heal_record(pending.record, healed), entry_id=pending.entry_id)
        return healed
    if item.kind == RECORDING_KIND:
        return send_recording(storage, PendingRecording.model_validate_json(raw))
    raise AskCacheError(f"unknown outbox item kind {item.kind!r}")
