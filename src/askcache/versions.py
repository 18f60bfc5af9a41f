"""Versions of a trajectory, and healed versions proposed for review.

Every version a trajectory had since it was first healed is kept, immutable, in the
storage's hidden folder ``.versions/NAME/`` (never listed as a cache file):

- ``v000001.json``, ``v000002.json``, ...: the versions in order; the first is the recording
  the first heal started from. The trajectory file ``NAME`` is a copy of the newest one
  (or of an older one after ``askcache rollback``, which adds that older one again as the
  newest version, so the history only grows);
- ``proposed-<UTC time>-<random>.json``: healed versions written with ``heal="propose"``;
  nothing is replayed from them until ``askcache accept NAME``.

Versions are created with :meth:`~askcache.storage.CacheStorage.create` (exclusive): a heal
that started from version *n* may only create version *n + 1*. When two healers start from
the same version, one creates it and replaces the trajectory; the other's version is kept as
a proposal. So concurrent healers never lose a version nor interleave two of them.
Only the newest :attr:`TrajectoryVersions.keep` versions are kept.
"""

from __future__ import annotations

import logging
import re
import uuid
from datetime import UTC, datetime

from askcache.cache_file import CacheFile
from askcache.errors import AskCacheError, CacheExistsError, CacheNotFoundError
from askcache.signing import parse_verified
from askcache.storage import CacheStorage

__all__ = ["VERSIONS_FOLDER", "TrajectoryVersions"]

logger = logging.getLogger(__name__)

VERSIONS_FOLDER = ".versions"
"""Folder of the versions inside the cache storage (hidden: never listed as a cache file)."""

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
    """

    def __init__(
        self,
        storage: CacheStorage,
        name: str,
        *,
        keep: int = 10,
        require_signature: bool | None = None,
    ) -> None:
        self.storage = storage
        self.name = name
        self.keep = keep
        self.require_signature = require_signature
        self.folder = f"{VERSIONS_FOLDER}/{name}"

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
        loading does (:func:`~askcache.signing.parse_verified`, with this object's
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
        since ``base`` was read (another healer, a re-recording): then nothing is written
        and the caller keeps ``new`` as a proposal."""
        number = self._archive(base)
        if number is None:
            return None
        target = number + 1
        try:
            self.storage.create(self.version_name(target), new)
        except CacheExistsError:
            return None
        # Re-signing hook: a signed trajectory is re-signed before this write, by the caller
        # that produced ``new`` (see askcache.heal.healed_bytes).
        self.storage.write(self.name, new)
        self._prune()
        return target

    def propose(self, new: bytes) -> str:
        """Keep ``new`` as a proposal beside the current version; returns its storage name."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        name = f"{self.folder}/proposed-{stamp}-{uuid.uuid4().hex[:8]}.json"
        self.storage.create(name, new)
        return name

    def accept(self, proposal: str | None = None) -> int:
        """Make a proposal (the newest by default) the current version; it is then removed
        from the proposals. Returns the new version's number.

        Raises:
            AskCacheError: there is no such proposal.
            CacheFileCorruptError, CacheSignatureError: the proposal may not be loaded
                (checked as loading does: :meth:`load`); nothing is changed.
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
        """
        _, where, data = self._resolve(to or "previous")
        self._verified(where, data)
        return self._append(data)

    def _archive(self, base: bytes) -> int | None:
        """The number of the version holding ``base``, archiving it first when it is not
        kept yet (the recording, at the first heal). ``None``: the trajectory file is no
        longer ``base``. One listing per attempt: a version another healer adds meanwhile is
        seen at the next attempt, never archived twice."""
        try:
            if self.storage.read(self.name) != base:
                return None
        except CacheNotFoundError:
            return None
        for _ in range(100):
            numbers = self.numbers()
            found = self._number_in(base, numbers)
            if found is not None:
                return found
            number = (numbers[-1] if numbers else 0) + 1
            try:
                self.storage.create(self.version_name(number), base)
            except CacheExistsError:
                continue
            return number
        return None

    def _append(self, data: bytes) -> int:
        """Add ``data`` as the newest version and make it current."""
        current = self.storage.read(self.name)
        if self._number_of(current) is None:
            self._archive(current)
        for _ in range(100):
            numbers = self.numbers()
            number = (numbers[-1] if numbers else 0) + 1
            try:
                self.storage.create(self.version_name(number), data)
            except CacheExistsError:
                continue
            self.storage.write(self.name, data)
            self._prune()
            return number
        raise AskCacheError(f"could not add a version of {self.name}: too many at once")

    def _prune(self) -> None:
        numbers = self.numbers()
        for number in numbers[: max(0, len(numbers) - self.keep)]:
            self._delete(self.version_name(number))

    def _delete(self, name: str) -> None:
        try:
            self.storage.delete(name)
        except NotImplementedError:
            logger.info("%s kept: the storage cannot delete", name)
