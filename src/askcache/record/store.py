"""Storing a finished recording: created exclusively, else a version or a proposal; kept in the
outbox when the storage does not take it.

A first recording of a name is *created*
(:meth:`~askcache.storage.cache_storage.CacheStorage.create`: an exclusive link of a whole file on a
folder, a conditional ``PutObject`` with ``If-None-Match: *`` on S3), never written over whatever is
there. Of two recordings of one name finishing at once, exactly one creates the trajectory; the
other finds it there and is recorded over it as any recording of an existing name is: both become
versions (the later the current one, :class:`~askcache.storage.versions.TrajectoryVersions`), or,
when the trajectory keeps changing or stays locked, the recording is kept as a proposal. Neither is
lost.

A recording is written after the model has done the whole task, so the storage may be gone by
then (the disk full, the server down, the folder turned read-only). Then the recording is kept
in the outbox (:mod:`askcache.storage.outbox`, kind ``recording``) and
:class:`~askcache.foundation.errors.RecordingNotStoredError` says in one line where it is and which
command sends it; the next run of the same storage sends it too
(:func:`send_recording`, idempotent). When the outbox cannot be written either, the error
says that nothing could be kept and carries the recording's bytes.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from askcache.cachefile.signing import SIGNING_KEY_ENV
from askcache.foundation.errors import (
    AskCacheError,
    CacheExistsError,
    CacheNotFoundError,
    OutboxError,
    RecordingNotStoredError,
    SignatureLossRefusedError,
)
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.index import create_cache_file
from askcache.storage.outbox import Outbox, default_outbox_dir
from askcache.storage.versions import TrajectoryVersions

__all__ = [
    "RECORDING_KIND",
    "PendingRecording",
    "StoredRecording",
    "send_recording",
    "store_or_keep",
    "store_recording",
]

logger = logging.getLogger(__name__)

RECORDING_KIND = "recording"
"""The outbox kind of a recording the storage did not take."""

_ATTEMPTS = 5
"""Times a recording tries to become the trajectory while others keep changing it."""


@dataclass(frozen=True)
class StoredRecording:
    """How a recording was stored."""

    name: str
    """The trajectory's name."""
    how: Literal["created", "version", "proposal", "already"]
    """``created``: it is the trajectory, the first of its name; ``version``: it is the
    trajectory's newest version, the one it replaced kept before it; ``proposal``: the
    trajectory kept changing (or versions are off), so it is kept as a proposal;
    ``already``: sent again from the outbox, it was stored before."""
    where: str
    """The storage name that holds it (the trajectory, a version or a proposal)."""
    version: int | None = None
    """Its version number, for ``version``."""


class PendingRecording(BaseModel):
    """A recording kept in the outbox."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    kind: Literal["recording"] = "recording"
    """The outbox kind."""
    name: str = Field(min_length=1)
    """The trajectory's name."""
    data: str
    """The cache file, as it is to be stored (JSON text)."""
    keep_versions: int = Field(ge=0)
    """``CachingSettings.keep_versions`` of the run that recorded it."""


def store_recording(
    storage: CacheStorage, name: str, data: bytes, *, keep_versions: int
) -> StoredRecording:
    """Store ``data`` as the trajectory ``name`` (see the module docstring): created when the
    name is free, else the newest version (``keep_versions`` > 0) or a proposal.

    Raises:
        AskCacheError, OSError: the storage failed (nothing is kept here:
            :func:`store_or_keep` keeps it).
    """
    versions = TrajectoryVersions(storage, name, keep=max(keep_versions, 1))
    for _ in range(_ATTEMPTS):
        if not storage.exists(name):
            try:
                create_cache_file(storage, name, data)
            except CacheExistsError:  # another recording created it meanwhile
                logger.info("%s was created meanwhile by another writer", storage.describe(name))
            else:
                return StoredRecording(name, "created", name)
        if keep_versions == 0:
            break
        try:
            old = storage.read(name)
        except CacheNotFoundError:  # deleted meanwhile: create it
            continue
        try:
            number = versions.commit(old, data)
        except SignatureLossRefusedError as exc:  # recorded where no signing key is set
            proposal = versions.propose(data)
            label = proposal.rsplit("/", 1)[-1]  # named: the newest may be another by then
            logger.warning(
                "%s; the recording is kept unsigned as %s: review it (askcache diff %s "
                "current %s) and, where %s is set, sign it (askcache sign %s --proposal %s) "
                "and accept it (askcache accept %s %s)",
                exc,
                storage.describe(proposal),
                name,
                label,
                SIGNING_KEY_ENV,
                name,
                label,
                name,
                label,
            )
            return StoredRecording(name, "proposal", proposal)
        if number is not None:
            logger.info(
                "%s recorded again: now version %d; the earlier recording is kept as the "
                "version before it (askcache diff / rollback)",
                storage.describe(name),
                number,
            )
            return StoredRecording(name, "version", versions.version_name(number), number)
    # versions are off, or it kept changing, or another process kept it locked
    proposal = versions.propose(data)
    logger.warning(
        "%s %s: the recording is kept as %s (askcache accept %s makes it current)",
        storage.describe(name),
        "exists and versions are off" if keep_versions == 0 else "kept changing",
        storage.describe(proposal),
        name,
    )
    return StoredRecording(name, "proposal", proposal)


def store_or_keep(
    storage: CacheStorage,
    name: str,
    data: bytes,
    *,
    keep_versions: int,
    outbox: Outbox,
) -> StoredRecording:
    """:func:`store_recording`, or, when the storage fails, keep the recording in ``outbox``.

    Raises:
        RecordingNotStoredError: the storage did not take it; the error says where it is kept
            or that nothing could be (and then carries it).
    """
    try:
        return store_recording(storage, name, data, keep_versions=keep_versions)
    except (AskCacheError, OSError) as exc:
        where = storage.describe(name)
        reason = _reason(exc)
        pending = PendingRecording(
            name=name, data=data.decode("utf-8"), keep_versions=keep_versions
        )
        try:
            kept = outbox.put(
                RECORDING_KIND, pending, summary=f"recording of {name}", reason=reason
            )
        except OutboxError as lost:
            logger.error(
                "the recording %s was NOT written (%s) and not kept: %s", where, reason, lost
            )
            raise RecordingNotStoredError(
                name, where, reason, recording=data, kept_at=None, not_kept=str(lost)
            ) from exc
        error = RecordingNotStoredError(
            name, where, reason, recording=data, kept_at=kept.path, send=_sync_command(outbox)
        )
        error.kept = kept
        raise error from exc


def send_recording(storage: CacheStorage, pending: PendingRecording) -> StoredRecording:
    """Store a recording kept in the outbox, idempotently: when the trajectory, a version or a
    proposal already holds these bytes (sent before, and perhaps replaced since), nothing is
    written again.

    Raises:
        AskCacheError, OSError: the storage failed (the item stays in the outbox).
    """
    data = pending.data.encode("utf-8")
    name = pending.name
    try:
        current: bytes | None = storage.read(name)
    except CacheNotFoundError:
        current = None
    if current == data:
        return StoredRecording(name, "already", name)
    if current is not None:
        versions = TrajectoryVersions(storage, name, keep=max(pending.keep_versions, 1))
        if storage.exists(versions.journal):  # a commit cut off: its version may be undone
            versions.recover()
        number = versions.holding(data)
        if number is not None:
            return StoredRecording(name, "already", versions.version_name(number), number)
        for proposal in versions.proposals():
            with contextlib.suppress(CacheNotFoundError):  # accepted meanwhile
                if storage.read(proposal) == data:
                    return StoredRecording(name, "already", proposal)
    return store_recording(storage, name, data, keep_versions=pending.keep_versions)


def _reason(exc: BaseException) -> str:
    """The storage's own words, one line (without the name and place the error repeats)."""
    reason = getattr(exc, "reason", None)
    text = reason if isinstance(reason, str) and reason else str(exc) or type(exc).__name__
    return text.strip().splitlines()[0][:300] if text.strip() else type(exc).__name__


def _sync_command(outbox: Outbox) -> str:
    """The ``askcache sync`` command that sends what ``outbox`` keeps."""
    command = f"askcache sync --cache-dir {shlex.quote(outbox.destination)}"
    if outbox.root != default_outbox_dir():
        command += f" --outbox-dir {shlex.quote(str(outbox.root))}"
    return command
