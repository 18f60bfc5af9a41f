"""The cache-file index: what ``askcache list`` and ``list_cached_trajectories`` show of each
cache file, without opening every file.

One small :class:`CacheFileRecord` per cache file (goal, steps, parameters, validity, versions,
signature, size and a content hash) is kept in the storage's hidden ``.index/`` folder:

- ``.index/files/<name>``: the record of one file, replaced whenever askcache writes the file
  (recorded, healed, rolled back, accepted, invalidated, signed: :func:`write_cache_file`).
  One object per file, so writers of different files never touch the same object.
- ``.index/snapshot.json``: every record in one object, rewritten by a listing that found
  records missing or stale, so a listing reads one object instead of one per file. Two
  listings may rewrite it at once and the later one wins; that costs nothing but a refresh,
  because no record is ever trusted without the check below.

A listing lists the cache files with their sizes and ETags (S3) or modification times (a
folder) and uses a record only when it still matches its file: same size, and the ETag equal
to the record's MD5 or to the tag it was made from. A file written by an older askcache, by
hand or by another tool has no matching record: it is opened, and its record written, so the
listing is the same with or without the index. A storage that cannot tell sizes and tags
(a third-party :class:`~askcache.storage.cache_storage.CacheStorage` without
:meth:`~askcache.storage.cache_storage.CacheStorage.list_info`) has every file opened, as before.
"""

from __future__ import annotations

import hashlib
import logging
import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from askcache.cachefile.format import CacheFile, dump_cache_file
from askcache.cachefile.parse import parse_cache_file
from askcache.foundation.errors import AskCacheError, CacheFileCorruptError, CacheNotFoundError
from askcache.foundation.parameters import placeholders_in
from askcache.storage.cache_storage import CacheStorage, ObjectInfo

__all__ = [
    "INDEX_FOLDER",
    "INDEX_FORMAT",
    "SNAPSHOT_NAME",
    "CacheFileIndex",
    "CacheFileRecord",
    "ProfileEntry",
    "create_cache_file",
    "save_indexed",
    "write_cache_file",
]

logger = logging.getLogger(__name__)

INDEX_FOLDER = ".index"
"""Folder of the index inside the cache storage (hidden: never listed as a cache file)."""

SNAPSHOT_NAME = f"{INDEX_FOLDER}/snapshot.json"

_VERSIONS_FOLDER = ".versions"  # askcache.storage.versions.VERSIONS_FOLDER (which imports this)
_VERSION = re.compile(r"/v\d{6}\.json$")


INDEX_FORMAT = 1
"""The version of :class:`CacheFileRecord`: a record of another version is made again (a
newer askcache may index more)."""


class ProfileEntry(BaseModel):
    """One screen profile a cache file replays on (docs/fleet.md, "Screens")."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    key: str
    """The profile (``1280x800@2x``; ``unknown`` for a recording that saw no screenshot)."""
    steps: int
    """Steps of its trajectory."""
    learned_at: datetime | None = None
    """When it was learned; ``None`` for the recorded profile."""

    def describe(self) -> str:
        """``KEY (recorded, N steps)`` or ``KEY (learned TIME, N steps)``."""
        if self.learned_at is None:
            return f"{self.key} (recorded, {self.steps} steps)"
        return f"{self.key} (learned {self.learned_at:%Y-%m-%d %H:%M}, {self.steps} steps)"


class CacheFileRecord(BaseModel):
    """What a listing shows of one cache file, and what tells whether it is still true."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    format: int = 0
    """:data:`INDEX_FORMAT` of the askcache that made it (0: unknown, made again)."""

    name: str
    """The cache file's name."""
    size: int
    """Its size in bytes."""
    md5: str
    """MD5 of its bytes (an S3 object's ETag, when written in one request)."""
    tag: str | None = None
    """The storage's tag of the file when the record was made from a listing (ETag,
    modification time); ``None`` when made by a write."""
    readable: bool = True
    """False when the file could not be parsed; :attr:`error` says why."""
    error: str | None = None
    """Why it could not be read."""
    goal: str = ""
    """The task, with ``{{name}}`` placeholders."""
    steps: int = 0
    """Steps in the trajectory."""
    parameters: list[str] = Field(default_factory=list)
    """The declared cache parameters, sorted."""
    placeholders: list[str] = Field(default_factory=list)
    """The parameters and every placeholder in the goal and the typed text, sorted."""
    valid: bool = True
    """False once the trajectory was invalidated."""
    invalidation_reason: str | None = None
    """Why it was invalidated."""
    created_at: datetime | None = None
    """When the recording was written."""
    versions: int = 0
    """Versions kept under ``.versions/<name>/`` (see :mod:`askcache.storage.versions`)."""
    signature_key: str | None = None
    """The key id of its signature (``None``: unsigned). Whether the signature holds is
    checked when the file is loaded, with the key."""
    profiles: list[ProfileEntry] = Field(default_factory=list)
    """The recorded screen profile, then the learned ones by key."""

    @classmethod
    def describing(cls, name: str, cache_file: CacheFile, **fields: object) -> CacheFileRecord:
        """The record of a parsed cache file (``fields``: ``size``, ``md5`` and the others
        that need the bytes or the storage; unknown ones default to nothing)."""
        values: dict[str, object] = {"size": 0, "md5": "", **fields, **_fields_of(cache_file)}
        return cls.model_validate({"name": name, **values})

    def matches(self, info: ObjectInfo) -> bool:
        """True when this record still describes the file a listing reports as ``info``."""
        if info.size is None or info.size != self.size or self.format != INDEX_FORMAT:
            return False
        return (info.md5 is not None and info.md5 == self.md5) or (
            info.tag is not None and info.tag == self.tag
        )


class _Snapshot(BaseModel):
    model_config = ConfigDict(extra="ignore")

    records: dict[str, CacheFileRecord] = Field(default_factory=dict)


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def record_of(
    name: str, data: bytes, *, where: str, versions: int = 0, tag: str | None = None
) -> CacheFileRecord:
    """The record of the cache file ``name`` holding ``data`` (``where``: its location, for
    errors)."""
    known = {
        "format": INDEX_FORMAT,
        "size": len(data),
        "md5": _md5(data),
        "tag": tag,
        "versions": versions,
    }
    try:
        if not data.strip():
            raise CacheFileCorruptError(where, "the file is empty")
        cache_file = parse_cache_file(data, where)
    except AskCacheError as exc:
        return CacheFileRecord.model_validate(
            {"name": name, **known, "readable": False, "error": str(exc)}
        )
    return CacheFileRecord.describing(name, cache_file, **known)


def _fields_of(cache_file: CacheFile) -> dict[str, object]:
    meta = cache_file.metadata
    texts = [meta.goal, *(step.input for step in cache_file.trajectory)]
    recorded = ProfileEntry(
        key=str(cache_file.profile or "unknown"), steps=len(cache_file.trajectory)
    )
    learned = [
        ProfileEntry(key=key, steps=len(profile.trajectory), learned_at=profile.learned_at)
        for key, profile in sorted(cache_file.profiles.items())
    ]
    return {
        "format": INDEX_FORMAT,
        "profiles": [recorded, *learned],
        "goal": meta.goal,
        "steps": len(cache_file.trajectory),
        "parameters": sorted(cache_file.cache_parameters),
        "placeholders": sorted(set(cache_file.cache_parameters) | placeholders_in(texts)),
        "valid": meta.is_valid,
        "invalidation_reason": meta.invalidation_reason,
        "created_at": meta.created_at,
        "signature_key": cache_file.signature.key_id if cache_file.signature else None,
    }


class CacheFileIndex:
    """The index of a storage's cache files (see the module docstring)."""

    def __init__(self, storage: CacheStorage) -> None:
        self.storage = storage

    @staticmethod
    def record_name(name: str) -> str:
        """Where the record of the cache file ``name`` is kept."""
        return f"{INDEX_FOLDER}/files/{name}"

    def update(self, name: str, data: bytes) -> None:
        """Write the record of ``name``, just written with ``data``. A failure is logged and
        costs only a re-read at the next listing."""
        record = record_of(
            name, data, where=self.storage.describe(name), versions=self._versions(name)
        )
        self._put(self.record_name(name), record.model_dump_json().encode())

    def records(self) -> list[CacheFileRecord]:
        """A record for every cache file, by name; missing or stale ones are made from the
        files (and written back)."""
        listed = self.storage.list_info()
        snapshot = self._snapshot()
        found = {n: r for n, r in snapshot.records.items() if n in listed and r.matches(listed[n])}
        missing = [name for name in listed if name not in found]
        if missing:
            kept = self.storage.read_many(self.record_name(name) for name in missing)
            for name in missing:
                record = _parse_record(kept.get(self.record_name(name)))
                if record is not None and record.matches(listed[name]):
                    found[name] = record
            self._refresh([n for n in missing if n not in found], listed, found)
        if missing or set(snapshot.records) != set(found):
            snapshot = _Snapshot(records={name: found[name] for name in listed if name in found})
            self._put(SNAPSHOT_NAME, snapshot.model_dump_json().encode())
        return [found[name] for name in listed if name in found]

    def _refresh(
        self, names: list[str], listed: dict[str, ObjectInfo], found: dict[str, CacheFileRecord]
    ) -> None:
        """Open the files ``names`` and make their records (kept in the snapshot, which the
        caller writes: one write however many files were opened)."""
        if not names:
            return
        versions = self._all_versions() if len(names) > 1 else {}
        for name, data in self._read_files(names).items():
            count = versions.get(name, 0) if len(names) > 1 else self._versions(name)
            if isinstance(data, AskCacheError):  # not even readable: not indexed
                found[name] = CacheFileRecord(
                    format=INDEX_FORMAT,
                    name=name,
                    size=-1,
                    md5="",
                    readable=False,
                    error=str(data),
                    versions=count,
                )
                continue
            record = record_of(name, data, where=self.storage.describe(name), versions=count)
            if listed[name].size == record.size:  # unchanged since listed: its tag is this
                record.tag = listed[name].tag
            found[name] = record

    def _read_files(self, names: list[str]) -> dict[str, bytes | AskCacheError]:
        """The bytes of each file, or why it cannot be read (a file gone meanwhile is left
        out)."""
        try:
            return dict(self.storage.read_many(names))
        except AskCacheError:
            pass
        found: dict[str, bytes | AskCacheError] = {}
        for name in names:
            try:
                found[name] = self.storage.read(name)
            except CacheNotFoundError:
                continue
            except AskCacheError as exc:
                found[name] = exc
        return found

    def _versions(self, name: str) -> int:
        try:
            listed = self.storage.list_prefix(f"{_VERSIONS_FOLDER}/{name}")
        except (AskCacheError, OSError):
            return 0
        return sum(1 for n in listed if _VERSION.search(n))

    def _all_versions(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        try:
            listed = self.storage.list_prefix(_VERSIONS_FOLDER)
        except (AskCacheError, OSError):
            return counts
        for n in listed:
            if _VERSION.search(n):
                name = n.removeprefix(_VERSIONS_FOLDER + "/").rsplit("/", 1)[0]
                counts[name] = counts.get(name, 0) + 1
        return counts

    def _snapshot(self) -> _Snapshot:
        raw = self.storage.read_many([SNAPSHOT_NAME]).get(SNAPSHOT_NAME)
        if raw is None:
            return _Snapshot()
        try:
            return _Snapshot.model_validate_json(raw)
        except (ValidationError, ValueError) as exc:
            logger.warning("ignoring an unreadable index %s: %s", SNAPSHOT_NAME, exc)
            return _Snapshot()

    def _put(self, name: str, data: bytes) -> None:
        try:
            self.storage.write(name, data)
        except (AskCacheError, OSError) as exc:  # read-only storage: the index is a cache
            logger.info("could not write the index record %s: %s", name, exc)


def _parse_record(raw: bytes | None) -> CacheFileRecord | None:
    if raw is None:
        return None
    try:
        return CacheFileRecord.model_validate_json(raw)
    except (ValidationError, ValueError):
        return None


def write_cache_file(storage: CacheStorage, name: str, data: bytes) -> None:
    """Store the cache file ``name`` (:meth:`~askcache.storage.cache_storage.CacheStorage.write`)
    and its index record."""
    storage.write(name, data)
    CacheFileIndex(storage).update(name, data)


def create_cache_file(storage: CacheStorage, name: str, data: bytes) -> None:
    """Store the cache file ``name`` where nothing is stored yet
    (:meth:`~askcache.storage.cache_storage.CacheStorage.create`: exclusive, so of two writers
    creating it at once exactly one succeeds) and its index record.

    Raises:
        CacheExistsError: something is stored under ``name`` already.
    """
    storage.create(name, data)
    CacheFileIndex(storage).update(name, data)


def save_indexed(storage: CacheStorage, name: str, cache_file: CacheFile) -> None:
    """Serialize and store ``cache_file`` under ``name`` with its index record (as
    :func:`~askcache.storage.cache_storage.save_cache_file`, which leaves the record to the next
    listing)."""
    write_cache_file(storage, name, dump_cache_file(cache_file))
