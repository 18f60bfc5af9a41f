"""The outbox: writes that could not reach the storage, kept in a local folder until they can.

When the storage cannot be written (the server is down, the disk is full, the folder is
read-only), a heal or a run-ledger entry is not dropped: it is kept as one file in the
outbox and sent later, on the next run of the same storage or by ``askcache sync``.

The outbox knows nothing of what it keeps. An item is a *kind* (``heal``,
``ledger_entry``), the *destination* it is for (a storage's
:meth:`~askcache.storage.cache_storage.CacheStorage.destination`), a short summary for people, why
it was not sent, and a JSON *payload* that only the sender of that kind parses
(:mod:`askcache.agent.outbox_sync`). The sender must be idempotent: an item is removed only after it
was sent, so a crash between the two sends it again.

Layout: ``<folder>/<key>/<UTC time>-<random>.json``, where ``key`` is the first 16 hex digits
of the SHA-256 of the destination (one sub-folder per storage, so one outbox folder serves
any number of cache folders and buckets). Each item is written to a temporary file, synced,
and linked into place: a reader sees a whole item or none, and a killed writer leaves no
half-written one. Items are readable by their owner only (mode 0600): they hold what the
storage would hold, a heal's trajectory bytes included.

The folder is :attr:`~askcache.foundation.settings.CachingSettings.outbox_dir`, by default
:func:`default_outbox_dir`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from askcache.foundation.errors import OutboxError

__all__ = ["KeptWrite", "Outbox", "OutboxItem", "default_outbox_dir"]

logger = logging.getLogger(__name__)


def default_outbox_dir() -> Path:
    """Where writes not yet sent are kept by default: ``$ASKCACHE_OUTBOX_DIR``, else
    ``$XDG_STATE_HOME/askcache/outbox``, else ``~/.local/state/askcache/outbox`` (state, not a
    cache: deleting it loses what it keeps)."""
    explicit = os.environ.get("ASKCACHE_OUTBOX_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "askcache" / "outbox"


def _now() -> datetime:
    return datetime.now(UTC)


class OutboxItem(BaseModel):
    """One write kept locally, as stored in the outbox."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    kind: str
    """What the payload is (``heal``, ``ledger_entry``); it selects the sender."""
    destination: str
    """The storage it is for (a folder's absolute path, or a URL)."""
    summary: str
    """What it is, for people (``heal of login.json (steps 2, 3)``)."""
    reason: str
    """Why it was not sent when it was made (the storage's error, one line)."""
    created_at: datetime = Field(default_factory=_now)
    """When it was kept (UTC)."""
    payload: dict[str, Any]
    """What the sender of ``kind`` needs; only that sender reads it."""


@dataclass(frozen=True)
class KeptWrite:
    """A write that is in the outbox, not in the storage: kept locally, not yet shared."""

    path: Path
    """The outbox file that keeps it."""
    item: OutboxItem
    """What it keeps."""

    @property
    def summary(self) -> str:
        """What it is, for people."""
        return self.item.summary


class Outbox:
    """The writes kept for one destination (see the module docstring).

    Args:
        folder: The outbox folder (all destinations); default :func:`default_outbox_dir`.
        destination: The storage whose writes this outbox keeps.
    """

    def __init__(self, folder: str | os.PathLike[str] | None, destination: str) -> None:
        self.root = default_outbox_dir() if folder is None else Path(folder)
        self.destination = destination
        key = hashlib.sha256(destination.encode("utf-8")).hexdigest()[:16]
        self.folder = self.root / key
        """The sub-folder of this destination's items."""

    def put(self, kind: str, payload: BaseModel, *, summary: str, reason: str) -> KeptWrite:
        """Keep one write; returns where it is kept.

        Raises:
            OutboxError: the outbox folder cannot be written either.
        """
        item = OutboxItem(
            kind=kind,
            destination=self.destination,
            summary=summary,
            reason=reason,
            payload=payload.model_dump(mode="json"),
        )
        stamp = item.created_at.strftime("%Y%m%dT%H%M%S.%fZ")
        path = self.folder / f"{stamp}-{uuid.uuid4().hex[:12]}.json"
        data = item.model_dump_json().encode("utf-8") + b"\n"
        tmp: str | None = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=self.folder)
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), 0o600)
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.link(tmp, path)  # atomic and exclusive: a reader sees a whole item or none
            _sync_folder(self.folder)
        except OSError as exc:
            raise OutboxError(str(self.folder), _reason(exc)) from exc
        finally:
            if tmp is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        logger.warning(
            "%s kept locally in %s, not yet sent to %s (%s)",
            summary,
            path,
            self.destination,
            reason,
        )
        return KeptWrite(path, item)

    def pending(self) -> list[KeptWrite]:
        """The writes kept for this destination, oldest first. A file that is not a readable
        item (damaged, foreign) is skipped with a warning and left in place."""
        try:
            paths = sorted(p for p in self.folder.iterdir() if p.suffix == ".json")
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise OutboxError(str(self.folder), _reason(exc)) from exc
        kept: list[KeptWrite] = []
        for path in paths:
            try:
                item = OutboxItem.model_validate_json(path.read_bytes())
            except FileNotFoundError:  # sent by another process meanwhile
                continue
            except (OSError, ValidationError, ValueError) as exc:
                logger.warning("skipping unreadable outbox item %s: %s", path, _reason(exc))
                continue
            if item.destination != self.destination:
                logger.warning("skipping outbox item %s: it is for %s", path, item.destination)
                continue
            kept.append(KeptWrite(path, item))
        return kept

    def remove(self, kept: KeptWrite) -> None:
        """Forget a write once it was sent (nothing happens when it is gone already)."""
        with contextlib.suppress(FileNotFoundError):
            kept.path.unlink()


def _sync_folder(folder: Path) -> None:
    """Make a new entry of ``folder`` survive a power cut (where the system allows)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
