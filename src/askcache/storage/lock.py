"""A lock in a cache storage that names its owner and that a killed owner never leaves stuck.

Changing a trajectory (a heal's commit, ``accept``, ``rollback``, ``tune``) holds the lock of
its versions folder (:mod:`askcache.storage.versions`). The lock needs nothing but what every
:class:`~askcache.storage.cache_storage.CacheStorage` offers (exclusive create, list, delete), so it
works the same in a local folder, on S3 and across machines:

- Each holder creates its own lock object, ``FOLDER/lock-<random>.json``, holding a
  :class:`LockOwner`: the host, the process id and its start time, and a lease (when the
  lock expires). Creating is exclusive and names are unique, so no two processes ever write
  the same object.
- To take the lock, a process lists the folder: when another lock object there is *live*,
  the lock is busy. Otherwise it creates its own and lists again: if another live one
  appeared meanwhile, it deletes its own and tries again a moment later (at random, so two
  never keep colliding). Of two processes, the one that lists second always sees the
  other's object, so two never both hold the lock.
- A lock object is *gone* (not live) when its lease has expired, or when its owner ran in
  this very PID namespace of this very boot of this machine and that process is no longer
  running (its id is free, a zombie, or now belongs to a process started at another time).
  Gone objects are deleted by whoever finds them. The owner's identity is its machine's
  boot id (``/proc/sys/kernel/random/boot_id``: random at every boot, so no two machines,
  cloned VMs included, share it) and the inode of its PID namespace
  (``/proc/self/ns/pid``: no two namespaces of one kernel share it); the host name is kept
  for messages only, since containers with host networking and cloned VMs share it. A
  process id is looked at only when both match (:func:`local_identity`); the owner of a
  lock in another namespace or on another machine cannot be looked at (a process id means
  nothing there, notably on S3), so there only the lease counts: a machine that died
  holding the lock blocks changes of that one trajectory for at most
  :data:`LOCK_LEASE_SECONDS` (healers meanwhile keep their fix as a proposal). Where the
  identity cannot be read (no ``/proc``), only the lease counts. The lease is compared with
  the local clock: the machines' clocks must agree to well within the lease (NTP does).
- Fencing: a holder proves it still holds the lock each time it is about to write
  (:meth:`StorageLock.check_held`), not from its own clock alone: at least
  :data:`LOCK_WRITE_MARGIN` of its lease must be left, its own lock object must still be in
  the storage with the bytes it wrote (a process that took the lock over deleted it), and
  no other live lock object may have been taken before it (one taken after it is a
  contender that steps back at once; one that stays is a process that took the lock
  over, and the holder yields). A holder that finds it lost the lock raises
  :class:`~askcache.foundation.errors.StorageLockLostError` instead of writing. The writes of a
  commit are fenced as well by the storage itself (:mod:`askcache.storage.versions`): its
  version is created exclusively under the number it chose while holding the lock, so of
  two commits only one can ever make that version.
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

from askcache.foundation.errors import (
    AskCacheError,
    CacheNotFoundError,
    StorageLockBusyError,
    StorageLockLostError,
)
from askcache.storage.cache_storage import CacheStorage

__all__ = [
    "LOCK_LEASE_SECONDS",
    "LOCK_WRITE_MARGIN",
    "LockOwner",
    "StorageLock",
    "local_identity",
    "process_start_time",
]

logger = logging.getLogger(__name__)

LOCK_LEASE_SECONDS = 120.0
"""How long a lock is held at most: past it, any process may take it over. A change of a
trajectory takes a few storage requests, far less."""

LOCK_WRITE_MARGIN = 0.25
"""The part of its lease a holder must still have left to write (a quarter: 30 s of the
default lease). A holder's last check and its write are a few storage requests apart; the
margin is what keeps a process that stalls between them (or whose clock is a little off)
from writing after its lease ran out elsewhere."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


wall_clock: Callable[[], datetime] = _utc_now
"""The time leases are set and judged by: a test seam (a machine whose clock runs ahead, or
one that stalled past another's lease: tests/integration/test_lock_namespaces.py)."""

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


def _boot_id() -> str | None:
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    return None


def _pid_namespace() -> int | None:
    with contextlib.suppress(OSError):
        return os.stat("/proc/self/ns/pid").st_ino
    return None


def local_identity() -> tuple[str | None, int | None]:
    """Who this process is beyond its process id: the machine's boot id and the inode of its
    PID namespace (Linux); ``None`` for what cannot be read. Process ids mean the same
    process only where both are equal (see the module docstring)."""
    return _boot_id(), _pid_namespace()


class LockOwner(BaseModel):
    """What a lock object holds: who holds the lock, and until when."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    host: str
    """The holder's host name (for messages: machines and containers may share one)."""
    pid: int = Field(ge=1)
    """The holder's process id in its PID namespace."""
    started: int | None = None
    """The holder process's start time (clock ticks since boot, Linux), which tells it from
    a later process that got the same id; ``None`` where it cannot be read."""
    acquired_at: datetime
    """When the lock was taken (UTC)."""
    expires_at: datetime
    """When the lease ends (UTC): past it, anyone may take the lock over."""
    released: bool = False
    """Released by a holder whose storage cannot delete the object."""
    boot_id: str | None = None
    """The boot id of the holder's machine (``/proc/sys/kernel/random/boot_id``); ``None``
    where it cannot be read, or written by an older askcache: then only the lease counts."""
    pid_namespace: int | None = None
    """The inode of the holder's PID namespace (``/proc/self/ns/pid``); ``None`` as for
    :attr:`boot_id`."""

    def local(self) -> bool:
        """True when the holder's process id can be looked at here: it ran on this boot of
        this machine, in this PID namespace (both known, both equal)."""
        boot_id, namespace = local_identity()
        return (
            self.boot_id is not None
            and self.pid_namespace is not None
            and (self.boot_id, self.pid_namespace) == (boot_id, namespace)
        )

    def gone(self, now: datetime) -> bool:
        """True when this lock no longer holds: released, its lease expired, or its owner
        ran in this PID namespace of this machine and is no longer running (see the module
        docstring)."""
        if self.released or now >= self.expires_at:
            return True
        if not self.local():
            return False  # another namespace's or machine's process: the lease decides
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
        self._mine = b""
        self._deadline = 0.0

    @property
    def held(self) -> bool:
        """True while this object holds the lock and its lease has not run out, by its own
        clock only: :meth:`check_held` proves it against the storage before a write."""
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
        now = wall_clock()
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
        now = wall_clock()
        boot_id, namespace = local_identity()
        owner = LockOwner(
            host=socket.gethostname(),
            pid=os.getpid(),
            started=process_start_time(os.getpid()),
            acquired_at=now,
            expires_at=now + timedelta(seconds=self.lease),
            boot_id=boot_id,
            pid_namespace=namespace,
        )
        name = f"{self.folder}/lock-{uuid.uuid4().hex}.json"
        mine = owner.model_dump_json().encode()
        self._deadline = time.monotonic() + self.lease
        self.storage.create(name, mine)
        self._held, self._mine = name, mine
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

    def check_held(self) -> None:
        """Prove that this object holds the lock now, before a write made under it (see
        "Fencing" in the module docstring): enough of the lease is left, its own lock object
        is still stored as written, and no other live lock object was taken before it (one
        taken after it must step back within a few tries).

        Raises:
            StorageLockLostError: the lock is not held any more; the message says why.
            AskCacheError: the storage could not be read (its own error, e.g. an outage).
        """
        where = self.storage.describe(self.folder)
        name = self._held
        if name is None:
            raise StorageLockLostError(where, "it was released")
        left = self._deadline - time.monotonic()
        if left < self.lease * LOCK_WRITE_MARGIN:
            raise StorageLockLostError(
                where,
                f"{max(left, 0):.0f} s of its {self.lease:.0f} s lease left, less than the "
                f"{self.lease * LOCK_WRITE_MARGIN:.0f} s a write needs",
            )
        pause = 0.05
        other = self._rival(where, name)
        for _ in range(5):
            if other is None:
                return
            self._sleep(random.uniform(pause / 2, pause))
            pause *= 2
            other = self._rival(where, name)
        if other is not None:
            raise StorageLockLostError(where, f"{other.describe()} holds it too, and kept it")

    def _rival(self, where: str, name: str) -> LockOwner | None:
        """Another live lock object that was taken after this one's (``None``: none); raises
        when this one's is gone or replaced, or another was taken before it."""
        found = self.owners()  # one listing, and each lock object read once
        if name not in found:
            raise StorageLockLostError(
                where, "its lock object is gone: another process took the lock over"
            )
        mine = LockOwner.model_validate_json(self._mine)
        if found[name] != mine:
            raise StorageLockLostError(where, "its lock object was replaced")
        now = wall_clock()
        later: LockOwner | None = None
        for other_name, owner in found.items():
            if other_name == name or owner is None or owner.gone(now):
                continue
            if owner.acquired_at <= mine.acquired_at:
                raise StorageLockLostError(where, f"{owner.describe()} holds it since before")
            later = owner
        return later

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
