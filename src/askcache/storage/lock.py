"""A lock in a cache storage that names its owner and that a killed owner never leaves stuck.

Changing a trajectory (a heal's commit, ``accept``, ``rollback``, ``tune``) holds the lock of
its versions folder (:mod:`askcache.storage.versions`). The lock needs nothing but what every
:class:`~askcache.storage.base.CacheStorage` offers (exclusive create, list, delete), so it works
the same in a local folder, on S3 and across machines:

- Each holder creates its own lock object, ``FOLDER/lock-<random>.json``, holding a
  :class:`LockOwner`: the host, the process id and its start time, and a lease (when the
  lock expires). Creating is exclusive and names are unique, so no two processes ever write
  the same object.
- To take the lock, a process lists the folder: when another lock object there is *live*,
  the lock is busy. Otherwise it creates its own and lists again: if another live one
  appeared meanwhile, it deletes its own and tries again a moment later (at random, so two
  never keep colliding). Of two processes, the one that lists second always sees the
  other's object, so two never both hold the lock.
- A lock object is *gone* (not live) when its lease has expired, or when its owner ran on
  this host and that process is no longer running (its id is free, a zombie, or now belongs
  to a process started at another time). Gone objects are deleted by whoever finds them.
  The owner of a lock on another host cannot be looked at (a process id means nothing
  there, notably on S3), so there only the lease counts: a machine that died holding the
  lock blocks changes of that one trajectory for at most :data:`LOCK_LEASE_SECONDS`
  (healers meanwhile keep their fix as a proposal). The lease is compared with the local
  clock: the machines' clocks must agree to well within the lease (NTP does).
- Releasing deletes the holder's object (a storage that cannot delete marks it released).
  When releasing fails (the storage went away), the object stays; this process remembers it
  and its next lock takes it over at once (a worker that runs one task after another, or
  ``askcache sync`` in the same process, is not blocked for a lease by its own left-over).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from askcache.errors import AskCacheError, CacheNotFoundError, StorageLockBusyError
from askcache.storage.base import CacheStorage

__all__ = ["LOCK_LEASE_SECONDS", "LockOwner", "StorageLock", "process_start_time"]

logger = logging.getLogger(__name__)

LOCK_LEASE_SECONDS = 120.0
"""How long a lock is held at most: past it, any process may take it over. A change of a
trajectory takes a few storage requests, far less."""

_LOCK = re.compile(r"/lock-[0-9a-f]{32}\.json$")


def process_start_time(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since the machine booted (Linux); ``None``
    where that cannot be read (no such process, or no ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        return int(fields[19])  # field 22 of proc(5); fields[0] is field 3
    except (IndexError, ValueError):
        return None


def _process_state(pid: int) -> str | None:
    with contextlib.suppress(OSError, IndexError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    return None


class LockOwner(BaseModel):
    """What a lock object holds: who holds the lock, and until when."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    host: str
    """The holder's host name."""
    pid: int = Field(ge=1)
    """The holder's process id on that host."""
    started: int | None = None
    """The holder process's start time (clock ticks since boot, Linux), which tells it from
    a later process that got the same id; ``None`` where it cannot be read."""
    acquired_at: datetime
    """When the lock was taken (UTC)."""
    expires_at: datetime
    """When the lease ends (UTC): past it, anyone may take the lock over."""
    released: bool = False
    """Released by a holder whose storage cannot delete the object."""

    def gone(self, now: datetime) -> bool:
        """True when this lock no longer holds: released, its lease expired, or its owner
        ran on this host and is no longer running (see the module docstring)."""
        if self.released or now >= self.expires_at:
            return True
        if self.host != socket.gethostname():
            return False  # another machine's process cannot be looked at: the lease decides
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass  # another user's process: running
        if _process_state(self.pid) == "Z":
            return True  # killed, not yet reaped by its parent
        started = process_start_time(self.pid)
        return self.started is not None and started is not None and started != self.started

    def describe(self) -> str:
        """``host pid N since TIME``, for messages."""
        return f"{self.host} pid {self.pid} since {self.acquired_at:%Y-%m-%d %H:%M:%S} UTC"


_LEFT_HERE: set[str] = set()
"""Lock objects this process failed to release (the storage went away): gone for it."""


class StorageLock:
    """The lock of one folder of a storage (see the module docstring).

    Args:
        storage: Where the folder is.
        folder: The folder the lock protects (``.versions/NAME``).
        lease: Seconds after which a lock taken by this object counts as gone.
        wait: Seconds :meth:`acquire` keeps trying while the lock is busy.
        sleep: How to wait between tries (a test seam).
    """

    def __init__(
        self,
        storage: CacheStorage,
        folder: str,
        *,
        lease: float = LOCK_LEASE_SECONDS,
        wait: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.storage = storage
        self.folder = folder
        self.lease = lease
        self.wait = wait
        self._sleep = sleep
        self._held: str | None = None
        self._deadline = 0.0

    @property
    def held(self) -> bool:
        """True while this object holds the lock (and its lease has not run out)."""
        return self._held is not None and time.monotonic() < self._deadline

    def owners(self) -> dict[str, LockOwner | None]:
        """The lock objects in the folder by storage name, with their owners (``None``: an
        object that does not parse, which counts as gone)."""
        found: dict[str, LockOwner | None] = {}
        for name in self.storage.list_prefix(self.folder):
            if not _LOCK.search(name):
                continue
            try:
                found[name] = LockOwner.model_validate_json(self.storage.read(name))
            except CacheNotFoundError:
                continue  # released meanwhile
            except ValidationError:
                found[name] = None
        return found

    def _others_live(self) -> LockOwner | None:
        """A live lock object other than this one's (deleting the gone ones found)."""
        now = datetime.now(UTC)
        for name, owner in self.owners().items():
            if name == self._held:
                continue
            if owner is None or owner.gone(now) or name in _LEFT_HERE:
                logger.warning(
                    "%s: taking over a lock left by %s",
                    self.folder,
                    "an unreadable lock object" if owner is None else owner.describe(),
                )
                self._delete(name)
                _LEFT_HERE.discard(name)
                continue
            return owner
        return None

    def try_acquire(self) -> LockOwner | None:
        """Take the lock if no live one is held; returns the live holder otherwise."""
        other = self._others_live()
        if other is not None:
            return other
        now = datetime.now(UTC)
        owner = LockOwner(
            host=socket.gethostname(),
            pid=os.getpid(),
            started=process_start_time(os.getpid()),
            acquired_at=now,
            expires_at=now + timedelta(seconds=self.lease),
        )
        name = f"{self.folder}/lock-{uuid.uuid4().hex}.json"
        self._deadline = time.monotonic() + self.lease
        self.storage.create(name, owner.model_dump_json().encode())
        self._held = name
        try:
            other = self._others_live()
        except BaseException:
            self.release()
            raise
        if other is not None:  # taken at the same moment: both step back, then retry
            self.release()
        return other

    def acquire(self) -> None:
        """Take the lock, trying again while it is busy for at most :attr:`wait` seconds.

        Raises:
            StorageLockBusyError: another live process holds it (the error names it).
        """
        give_up = time.monotonic() + self.wait
        pause = 0.01
        while True:
            other = self.try_acquire()
            if other is None:
                return
            if time.monotonic() >= give_up:
                raise StorageLockBusyError(self.storage.describe(self.folder), other.describe())
            self._sleep(random.uniform(pause / 2, pause))
            pause = min(pause * 2, 0.5)

    def release(self) -> None:
        """Give the lock up (nothing happens when it is not held)."""
        name, self._held = self._held, None
        if name is not None:
            self._delete(name, mark=True)

    def _delete(self, name: str, *, mark: bool = False) -> None:
        """Delete a lock object; where the storage cannot (no delete, or no permission to),
        mark this holder's own one released instead."""
        try:
            self.storage.delete(name)
        except (NotImplementedError, AskCacheError, OSError) as exc:
            logger.info("%s: could not delete %s: %s", self.folder, name, exc)
            if not mark:
                return
            try:
                owner = LockOwner.model_validate_json(self.storage.read(name))
                owner.released = True
                self.storage.write(name, owner.model_dump_json().encode())
            except (AskCacheError, OSError, ValidationError) as failed:
                _LEFT_HERE.add(name)
                logger.warning(
                    "%s: the lock %s could not be released (%s); it is taken over when its "
                    "lease ends, or by this process's next lock",
                    self.folder,
                    name,
                    failed,
                )

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the block (:meth:`acquire`, then :meth:`release`)."""
        self.acquire()
        try:
            yield
        finally:
            self.release()
