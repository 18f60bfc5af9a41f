"""Versions of a trajectory, and healed versions proposed for review.

Every version a trajectory had since it was first healed is kept, immutable, in the
storage's hidden folder ``.versions/NAME/`` (never listed as a cache file):

- ``v000001.json``, ``v000002.json``, ...: the versions in order; the first is the recording
  the first heal started from. The trajectory file ``NAME`` is a copy of the newest one
  (or of an older one after ``askcache rollback``, which adds that older one again as the
  newest version, so the history only grows);
- ``proposed-<UTC time>-<random>.json``: healed versions written with ``heal="propose"``;
  nothing is replayed from them until ``askcache accept NAME``;
- ``lock-<random>.json``: the lock of the trajectory while it is changed
  (:mod:`askcache.storage.lock`), and ``commit.json``, the journal of a change under way.

Every change of the trajectory (a heal's :meth:`~TrajectoryVersions.commit`,
:meth:`~TrajectoryVersions.accept`, :meth:`~TrajectoryVersions.rollback`) is one commit,
made holding the lock, in this order (:data:`COMMIT_POINTS` names the points in between):

1. take the lock; complete or roll back the journal a killed commit left (below);
2. check that the trajectory is still the bytes the change started from (a heal's
   ``base``): otherwise nothing is written and a heal keeps its fix as a proposal;
3. archive those bytes as a version when no version holds them (the recording, at the
   first heal);
4. write the journal: the new version's number and the hashes of the old and new bytes;
5. create the new version (write-new: a new, exclusive name; never a visible partial file);
6. replace the trajectory with it (atomic: readers see the old or the new bytes) -- the
   point of no return;
7. remove the journal, prune the oldest versions beyond :attr:`TrajectoryVersions.keep`,
   release the lock.

A process killed anywhere in there leaves the old trajectory (killed before 6) or the new one
(after), never a mixture. The next commit finds its journal and completes it: when the
trajectory is the new bytes it only removes the journal; when it is still the old bytes,
the new version never became current and is deleted (rolled back), so version numbers stay
dense and the next heal commits normally. The lock it left is taken over at once in the
same PID namespace of the same machine (its process is gone), after the lease elsewhere.

Each write of steps 3 to 6 is fenced: just before it the holder proves it still holds the
lock (:meth:`~askcache.storage.lock.StorageLock.check_held`), and the new version's number,
chosen holding the lock, is created exclusively, so a holder that lost the lock (it stalled
past its lease and another process took over and committed) cannot make that version, and
is refused with :class:`~askcache.foundation.errors.StorageLockLostError` before writing anything
more. After step 6 the holder reads its version back: were it no longer its own (a take-over
between the last check and the write), the trajectory is put back to the newest version and
the lock counts as lost.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from askcache.cachefile.format import CacheFile
from askcache.cachefile.signing import SIGNING_KEY_ENV, carries_signature, parse_verified
from askcache.foundation.errors import (
    AskCacheError,
    CacheExistsError,
    CacheNotFoundError,
    SignatureLossRefusedError,
    StorageLockBusyError,
    StorageLockLostError,
)
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.index import CacheFileIndex
from askcache.storage.lock import LOCK_LEASE_SECONDS, StorageLock

__all__ = [
    "COMMIT_POINTS",
    "JOURNAL_NAME",
    "VERSIONS_FOLDER",
    "CommitJournal",
    "CommitPoint",
    "TrajectoryVersions",
]

logger = logging.getLogger(__name__)

VERSIONS_FOLDER = ".versions"
"""Folder of the versions inside the cache storage (hidden: never listed as a cache file)."""

JOURNAL_NAME = "commit.json"
"""The journal of a commit under way, in the versions folder."""

CommitPoint = Literal["locked", "archived", "journaled", "created", "replaced", "cleared"]
"""The points between the steps of a commit (see the module docstring): after taking the lock
(and recovering), after archiving the base, after writing the journal, after creating the
new version, after replacing the trajectory, after removing the journal."""

COMMIT_POINTS: tuple[CommitPoint, ...] = get_args(CommitPoint)
"""Every :data:`CommitPoint`, in order."""

commit_point_hook: Callable[[CommitPoint], None] | None = None
"""Called at each point of a commit when set: a test seam, to stop a process there and kill
it (tests/s3/test_heal_crashes.py). ``None`` in normal use."""


class CommitJournal(BaseModel):
    """What a commit under way is about to do (``commit.json``)."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    version: int = Field(ge=1)
    """The number of the version the commit creates."""
    new_sha256: str
    """SHA-256 of the new bytes (the version and then the trajectory)."""
    old_sha256: str
    """SHA-256 of the trajectory the commit replaces."""
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    """When the commit started (UTC)."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _point(point: CommitPoint) -> None:
    if commit_point_hook is not None:
        commit_point_hook(point)


_VERSION = re.compile(r"/v(\d{6})\.json$")
_PROPOSAL = re.compile(r"/(proposed-[^/]+\.json)$")


class TrajectoryVersions:
    """The versions and proposals of one trajectory (see the module docstring).

    Args:
        storage: Where the trajectory lives.
        name: The trajectory's name (``login.json``).
        keep: Versions kept; older ones are deleted when a new one is written.
        require_signature: Whether a version read by :meth:`load`, :meth:`accept` and
            :meth:`rollback` must carry a valid signature; ``None``: whenever a signing key
            is set, as loading (``CacheExecutionSettings.require_signature``).
        lock_wait: Seconds a change waits while another process holds the lock.
        lease: Seconds after which a lock taken here counts as gone (see
            :mod:`askcache.storage.lock`).
    """

    def __init__(
        self,
        storage: CacheStorage,
        name: str,
        *,
        keep: int = 10,
        require_signature: bool | None = None,
        lock_wait: float = 10.0,
        lease: float = LOCK_LEASE_SECONDS,
    ) -> None:
        self.storage = storage
        self.name = name
        self.keep = keep
        self.require_signature = require_signature
        self.folder = f"{VERSIONS_FOLDER}/{name}"
        self.journal = f"{self.folder}/{JOURNAL_NAME}"
        self.lock = StorageLock(storage, self.folder, lease=lease, wait=lock_wait)
        self.refused: str | None = None
        """Why the last :meth:`commit` wrote nothing, when the lock was the reason (busy, or
        lost before writing); ``None`` otherwise."""

    # reading ----------------------------------------------------------------------------

    def numbers(self) -> list[int]:
        """The version numbers kept, oldest first."""
        found = (_VERSION.search(n) for n in self.storage.list_prefix(self.folder))
        return sorted(int(match.group(1)) for match in found if match)

    def version_name(self, number: int) -> str:
        """The storage name of version ``number``."""
        return f"{self.folder}/v{number:06d}.json"

    def proposals(self) -> list[str]:
        """The storage names of the proposals, oldest first."""
        found = (_PROPOSAL.search(n) for n in self.storage.list_prefix(self.folder))
        return sorted(f"{self.folder}/{match.group(1)}" for match in found if match)

    def current_number(self) -> int | None:
        """The newest version whose bytes are the trajectory file's (``None``: none is, e.g.
        it was re-recorded or edited since, or never healed)."""
        try:
            current = self.storage.read(self.name)
        except CacheNotFoundError:
            return None
        return self._number_of(current)

    def _number_of(self, data: bytes) -> int | None:
        return self._number_in(data, self.numbers())

    def _number_in(self, data: bytes, numbers: list[int]) -> int | None:
        for number in reversed(numbers):
            try:
                if self.storage.read(self.version_name(number)) == data:
                    return number
            except CacheNotFoundError:  # pruned meanwhile
                continue
        return None

    def resolve(self, ref: str) -> tuple[str, bytes]:
        """A version by reference: ``current``, ``previous`` (the version before the current
        one), ``proposed`` (the newest proposal), a number (``3``, ``v3``), or a proposal's
        file name. Returns a label and the bytes (unchecked: :meth:`load` checks them).

        Raises:
            AskCacheError: no such version or proposal (the message lists what there is).
        """
        label, _, data = self._resolve(ref)
        return label, data

    def load(self, ref: str) -> tuple[str, CacheFile]:
        """A version by reference (as :meth:`resolve`), parsed and its signature checked as
        loading does (:func:`~askcache.cachefile.signing.parse_verified`, with this object's
        ``require_signature``).

        Raises:
            AskCacheError: no such version or proposal.
            CacheFileCorruptError, CacheSignatureError: the version may not be loaded; the
                error names its file and the reason.
        """
        label, where, data = self._resolve(ref)
        return label, self._verified(where, data)

    def _verified(self, where: str, data: bytes) -> CacheFile:
        return parse_verified(data, self.storage.describe(where), required=self.require_signature)

    def _resolve(self, ref: str) -> tuple[str, str, bytes]:
        """The label, storage name and bytes of a version by reference."""
        if ref == "current":
            data = self.storage.read(self.name)
            number = self._number_of(data)
            return (self.name if number is None else f"v{number} (current)"), self.name, data
        if ref == "proposed":
            proposals = self.proposals()
            if not proposals:
                raise AskCacheError(f"{self.name} has no proposed version")
            label = proposals[-1].rsplit("/", 1)[1]
            return label, proposals[-1], self.storage.read(proposals[-1])
        if ref == "previous":
            number = self.current_number()
            older = [n for n in self.numbers() if number is None or n < number]
            if not older:
                raise AskCacheError(f"{self.name} has no version before the current one")
            where = self.version_name(older[-1])
            return f"v{older[-1]}", where, self.storage.read(where)
        match = re.fullmatch(r"v?(\d+)", ref)
        if match and int(match.group(1)) in self.numbers():
            where = self.version_name(int(match.group(1)))
            return f"v{int(match.group(1))}", where, self.storage.read(where)
        proposal = f"{self.folder}/{ref}"
        if proposal in self.proposals():
            return ref, proposal, self.storage.read(proposal)
        kept = ", ".join(f"v{n}" for n in self.numbers()) or "none"
        proposed = ", ".join(p.rsplit("/", 1)[1] for p in self.proposals()) or "none"
        raise AskCacheError(
            f"{self.name} has no version {ref!r}; versions: {kept}; proposals: {proposed}; "
            "also: current, previous, proposed"
        )

    # writing ----------------------------------------------------------------------------

    def commit(self, base: bytes, new: bytes) -> int | None:
        """Make ``new`` the current version, healed from ``base`` (the bytes the replay
        read). Returns the new version's number, or ``None`` when the trajectory changed
        since ``base`` was read (another healer, a re-recording), another live process
        kept it locked for ``lock_wait`` seconds, or this process lost the lock before it
        could write (:class:`~askcache.foundation.errors.StorageLockLostError`, logged): then the
        trajectory is not written and the caller keeps ``new`` as a proposal.

        A signed trajectory never becomes unsigned here: ``new`` is signed by the caller
        that produced it (:func:`~askcache.heal.trajectory.healed_bytes`), and when it is not
        (made where no signing key is set) while ``base`` is, nothing is written.

        Raises:
            SignatureLossRefusedError: ``base`` is signed and ``new`` is not; the caller
                keeps ``new`` as a proposal (a heal, a re-recording) or says so (``tune``).
        """
        self.refused = None
        if carries_signature(base) and not carries_signature(new):
            raise SignatureLossRefusedError(
                self.name,
                f"it is signed and the new version is not ({SIGNING_KEY_ENV} is not set "
                "where it was made)",
            )
        try:
            return self._change(new, base=base)
        except (StorageLockBusyError, StorageLockLostError) as exc:
            logger.warning("%s not changed: %s", self.name, exc)
            self.refused = str(exc)
            return None

    def proposal_name(self) -> str:
        """A new, unique storage name for a proposal."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        return f"{self.folder}/proposed-{stamp}-{uuid.uuid4().hex[:8]}.json"

    def propose(self, new: bytes, *, name: str | None = None) -> str:
        """Keep ``new`` as a proposal beside the current version; returns its storage name.

        With a ``name`` (from :meth:`proposal_name`) proposing is idempotent: the same bytes
        proposed again under that name make no second proposal."""
        target = self.proposal_name() if name is None else name
        try:
            self.storage.create(target, new)
        except CacheExistsError:
            if name is None or self.storage.read(target) != new:
                raise
        return target

    def holding(self, data: bytes) -> int | None:
        """The newest kept version whose bytes are ``data`` (``None``: none is)."""
        return self._number_of(data)

    def accept(self, proposal: str | None = None) -> int:
        """Make a proposal (the newest by default) the current version; it is then removed
        from the proposals. Returns the new version's number.

        Raises:
            AskCacheError: there is no such proposal.
            CacheFileCorruptError, CacheSignatureError: the proposal may not be loaded
                (checked as loading does: :meth:`load`); nothing is changed.
            StorageLockBusyError: another process kept the trajectory locked.
            StorageLockLostError: this process lost the lock before it could write.
        """
        _, where, data = self._resolve(proposal or "proposed")
        self._verified(where, data)
        number = self._append(data)
        self._delete(where)
        return number

    def rollback(self, to: str | None = None) -> int:
        """Make an older version (the one before the current by default) current again; it
        is added as the newest version, so nothing is lost. Returns its new number.

        Raises:
            AskCacheError: there is no such version.
            CacheFileCorruptError, CacheSignatureError: the version may not be loaded
                (checked as loading does: :meth:`load`); nothing is changed.
            StorageLockBusyError: another process kept the trajectory locked.
            StorageLockLostError: this process lost the lock before it could write.
        """
        _, where, data = self._resolve(to or "previous")
        self._verified(where, data)
        return self._append(data)

    def recover(self) -> None:
        """Complete or roll back a commit that a killed process left (taking the lock; a
        later commit does this by itself).

        Raises:
            StorageLockBusyError: another process kept the trajectory locked.
        """
        with self.lock.hold():
            self._recover()

    def _append(self, data: bytes) -> int:
        """Add ``data`` as the newest version and make it current (one commit)."""
        number = self._change(data)
        assert number is not None  # no base to differ from
        return number

    def _change(self, new: bytes, *, base: bytes | None = None) -> int | None:
        """One commit (see the module docstring): ``new`` becomes the newest version and
        the trajectory, when the trajectory is still ``base`` (any bytes: ``None``)."""
        with self.lock.hold():
            _point("locked")
            self._recover()
            try:
                current = self.storage.read(self.name)
            except CacheNotFoundError:
                if base is not None:
                    return None
                raise
            if base is not None and current != base:
                return None
            self._archive(current)
            _point("archived")
            return self._replace(current, new)

    def _archive(self, base: bytes) -> int:
        """The number of the version holding ``base``, archiving it first when it is not
        kept yet (the recording, at the first heal; a file edited since)."""
        found = self._number_of(base)
        if found is not None:
            return found
        self.lock.check_held()
        return self._create_next(base)

    def _create_next(self, data: bytes) -> int:
        """Create ``data`` as the version after the newest (exclusive: a writer without the
        lock, such as an older askcache, never makes two versions of one number)."""
        for _ in range(100):
            numbers = self.numbers()
            number = (numbers[-1] if numbers else 0) + 1
            try:
                self.storage.create(self.version_name(number), data)
            except CacheExistsError:
                continue
            return number
        raise AskCacheError(f"could not add a version of {self.name}: too many at once")

    def _replace(self, old: bytes, new: bytes) -> int:
        """Steps 4 to 7 of a commit (see the module docstring), holding the lock and
        proving it before each write (:meth:`~askcache.storage.lock.StorageLock.check_held`).
        The version's number is the commit's fencing token: it is chosen once, and the
        version is created exclusively under it, so a holder that lost the lock to a commit
        that made that number first is refused by the storage itself."""
        numbers = self.numbers()
        number = (numbers[-1] if numbers else 0) + 1
        journal = CommitJournal(version=number, new_sha256=_sha256(new), old_sha256=_sha256(old))
        entry = journal.model_dump_json().encode()
        self.lock.check_held()
        self.storage.write(self.journal, entry)
        _point("journaled")
        self.lock.check_held()
        try:
            self.storage.create(self.version_name(number), new)
        except CacheExistsError:
            raise StorageLockLostError(
                self.storage.describe(self.folder),
                f"another process made version {number} first",
            ) from None
        _point("created")
        self.lock.check_held()
        self.storage.write(self.name, new)
        _point("replaced")
        self._check_written(number, new)
        self._clear_journal(entry)
        _point("cleared")
        self._prune()
        CacheFileIndex(self.storage).update(self.name, new)
        return number

    def _check_written(self, number: int, new: bytes) -> None:
        """After the trajectory's write: its version must still be this commit's. When it is
        not, the lock was taken over between the last check and the write (a stall longer
        than :data:`~askcache.storage.lock.LOCK_WRITE_MARGIN` of the lease) and the other
        commit rolled this one back: the trajectory is put back to the newest version and
        the lock counts as lost."""
        try:
            kept = self.storage.read(self.version_name(number))
        except CacheNotFoundError:
            kept = None
        if kept == new:
            return
        numbers = self.numbers()
        if numbers:
            with contextlib.suppress(CacheNotFoundError):
                self.storage.write(self.name, self.storage.read(self.version_name(numbers[-1])))
        raise StorageLockLostError(
            self.storage.describe(self.folder),
            f"another process took the lock over and rolled version {number} back while "
            "it was written; the trajectory is the newest version again",
        )

    def _clear_journal(self, entry: bytes) -> None:
        """Remove this commit's journal (another commit's, written after a take-over, is
        left to it)."""
        try:
            if self.storage.read(self.journal) != entry:
                return
        except CacheNotFoundError:
            return
        self._delete(self.journal)

    def _recover(self) -> None:
        """Complete or roll back the commit a killed process left (its journal)."""
        try:
            raw = self.storage.read(self.journal)
        except CacheNotFoundError:
            return
        try:
            journal = CommitJournal.model_validate_json(raw)
        except ValidationError:
            logger.warning("%s: an unreadable commit journal was removed", self.name)
            self._delete(self.journal)
            return
        try:
            current: bytes | None = self.storage.read(self.name)
        except CacheNotFoundError:
            current = None
        version = self.version_name(journal.version)
        now = None if current is None else _sha256(current)
        if now == journal.new_sha256:
            logger.warning("%s: completed a commit interrupted after it took effect", self.name)
        elif now == journal.old_sha256:  # the new version never became current: undo it
            try:
                created = self.storage.read(version)
            except CacheNotFoundError:
                created = None
            if created is not None and _sha256(created) == journal.new_sha256:
                self._delete(version)
            logger.warning(
                "%s: rolled back a commit interrupted before it took effect (version %d)",
                self.name,
                journal.version,
            )
        # else the trajectory was replaced since, without the lock (a re-recording): the
        # versions are all kept, none is current
        self._delete(self.journal)

    def _prune(self) -> None:
        numbers = self.numbers()
        for number in numbers[: max(0, len(numbers) - self.keep)]:
            self._delete(self.version_name(number))

    def _delete(self, name: str) -> None:
        """Delete what is no longer needed (an old version, an accepted proposal, the
        journal); a storage that cannot, or may not, keeps it, which breaks nothing."""
        try:
            self.storage.delete(name)
        except NotImplementedError:
            logger.info("%s kept: the storage cannot delete", name)
        except (AskCacheError, OSError) as exc:
            logger.warning("%s kept: %s", name, exc)
