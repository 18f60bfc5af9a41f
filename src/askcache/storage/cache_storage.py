"""Where cache files live: a small interface, and a local directory by default.

Storage deals in bytes and names; parsing is :mod:`askcache.cachefile.format`'s job. The two meet
in :func:`load_cache_file` and :func:`save_cache_file`.

:class:`LocalCacheStorage` is a good citizen on disk: it reads only regular files (a FIFO or
a directory where a file should be is a clear error, never a blocked read), never reads more
than the file size limit, keeps a file's permissions when it replaces it, removes the
temporary files of writes that were killed (after an hour), and turns every operating
system error into a :class:`~askcache.foundation.errors.CacheStorageError` naming the path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from askcache.foundation.errors import (
    CacheExistsError,
    CacheFileCorruptError,
    CacheFileLimitError,
    CacheNotFoundError,
    CachePathError,
    CacheStorageError,
    StorageUnwritableError,
)
from askcache.foundation.limits import MAX_FILE_BYTES

if TYPE_CHECKING:  # the cache file's model is imported where a file is read or written, so
    # that the commands reading only the ledger (stats, dashboard) start without it
    from askcache.cachefile.format import CacheFile

__all__ = [
    "STALE_TEMP_SECONDS",
    "CacheStorage",
    "LocalCacheStorage",
    "ObjectInfo",
    "load_cache_file",
    "read_cache_file",
    "save_cache_file",
]

STALE_TEMP_SECONDS = 3600.0
"""Age after which a temporary file of a write (``.<name>.<random>.tmp``) counts as left
behind by a killed process and is removed."""


@dataclass(frozen=True)
class ObjectInfo:
    """What a listing tells about one stored object without reading it: enough to tell
    whether a record made from its bytes earlier (:mod:`askcache.storage.index`) still
    describes it."""

    size: int | None = None
    """Its size in bytes (``None``: unknown)."""
    tag: str | None = None
    """Changes whenever the object is replaced: the ETag on S3, the modification time,
    size and inode of a local file (``None``: the storage cannot tell)."""
    md5: str | None = None
    """The MD5 of its bytes when the storage knows it without reading them (the ETag of
    an S3 object written in one request); ``None`` otherwise."""


class CacheStorage(ABC):
    """Reads and writes cache files by name. Implement it to keep caches elsewhere."""

    @abstractmethod
    def read(self, name: str) -> bytes:
        """The bytes stored under ``name``.

        Raises:
            CacheNotFoundError: nothing is stored under that name.
            CachePathError: the name is not acceptable to this storage.
        """

    @abstractmethod
    def write(self, name: str, data: bytes) -> None:
        """Store ``data`` under ``name`` atomically: readers see the old or the new bytes."""

    @abstractmethod
    def create(self, name: str, data: bytes) -> None:
        """Store ``data`` under a ``name`` nothing is stored under yet; never overwrites.

        Several processes may create different names at once (the run ledger writes one
        entry per run this way), and two creating the same name cannot both succeed.

        Raises:
            CacheExistsError: something is already stored under ``name``.
        """

    @abstractmethod
    def list_names(self) -> list[str]:
        """Names of the stored cache files, sorted (entries under hidden folders such as the
        run ledger's ``.ledger/`` are not cache files and are left out)."""

    @abstractmethod
    def list_prefix(self, prefix: str) -> list[str]:
        """Every name stored under the folder ``prefix`` (e.g. ``.ledger/login.json``),
        hidden ones included, sorted; ``[]`` when there is none."""

    @abstractmethod
    def exists(self, name: str) -> bool:
        """True when something is stored under ``name``."""

    @abstractmethod
    def describe(self, name: str) -> str:
        """Where ``name`` lives, for messages (a path for local storage)."""

    def read_many(self, names: Iterable[str]) -> dict[str, bytes]:
        """The bytes stored under each of ``names``; a name nothing is stored under is left
        out. The default reads one name after another; a remote storage overrides it to
        read them concurrently (a ledger's entries, the index's records).

        Raises:
            CachePathError: a name is not acceptable to this storage.
        """
        found: dict[str, bytes] = {}
        for name in names:
            with contextlib.suppress(CacheNotFoundError):
                found[name] = self.read(name)
        return found

    def list_info(self) -> dict[str, ObjectInfo]:
        """The cache files of :meth:`list_names`, with what the listing tells about each
        (:class:`ObjectInfo`). The default knows nothing beyond the names, so every record
        made of a file is re-checked by reading it."""
        return {name: ObjectInfo() for name in self.list_names()}

    def delete_many(self, names: Iterable[str]) -> None:
        """:meth:`delete` each of ``names`` (a remote storage deletes them in batches).

        Raises:
            NotImplementedError: this storage cannot delete.
        """
        for name in names:
            self.delete(name)

    def destination(self) -> str:
        """What tells this storage apart from others: the key of its writes kept in the
        outbox (:mod:`askcache.storage.outbox`) while it cannot be written. The default is the
        class's name; storages that can point at different places override it."""
        return f"{type(self).__module__}.{type(self).__qualname__}"

    def check_writable(self, name: str) -> None:  # noqa: B027 (optional, no-op by default)
        """Raise now if ``name`` clearly cannot be written later. Recording, and a replay
        that may heal, call it before the first model call, so no tokens are spent on work
        that could not be kept. The default checks nothing.

        Raises:
            CachePathError: the name is not acceptable to this storage.
            StorageUnwritableError: the place is missing or cannot be written.
        """

    def delete(self, name: str) -> None:
        """Remove what is stored under ``name`` (nothing happens when nothing is). Used to
        prune old versions and accepted proposals; a storage that cannot delete keeps them.

        Raises:
            NotImplementedError: this storage cannot delete.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot delete {name!r}")


class LocalCacheStorage(CacheStorage):
    """Cache files as ``*.json`` files under one directory (sub-folders allowed).

    Names are relative POSIX paths; anything that would resolve outside the directory,
    through ``..``, an absolute path or a symbolic link, is refused with
    :class:`CachePathError`.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def path_for(self, name: str) -> Path:
        """The file path for ``name``, checked to stay inside the directory."""
        if not name or "\x00" in name:
            raise CachePathError(name, "empty or contains a NUL byte")
        pure = PurePosixPath(name.replace("\\", "/"))
        if pure.is_absolute() or ".." in pure.parts or Path(name).is_absolute():
            raise CachePathError(name, f"must be a relative path inside {self.directory}")
        path = self.directory.joinpath(*pure.parts)
        root = self.directory.resolve()
        if not path.resolve().is_relative_to(root):
            raise CachePathError(name, f"resolves outside {self.directory}")
        return path

    def read(self, name: str) -> bytes:
        path = self.path_for(name)
        try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError as exc:
            raise CacheNotFoundError(name, str(self.directory)) from exc
        except IsADirectoryError as exc:
            raise CachePathError(name, "is a directory, not a cache file") from exc
        except OSError as exc:
            raise CacheStorageError(name, str(path), _reason(exc)) from exc
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            if stat.S_ISDIR(info.st_mode):
                raise CachePathError(name, "is a directory, not a cache file")
            raise CachePathError(name, "is not a regular file (a FIFO, socket or device)")
        with os.fdopen(fd, "rb") as handle:
            if info.st_size > MAX_FILE_BYTES:
                raise CacheFileLimitError(
                    str(path),
                    f"the file is {info.st_size:,} bytes; the limit is {MAX_FILE_BYTES:,}",
                )
            try:
                data = handle.read(MAX_FILE_BYTES + 1)
            except OSError as exc:
                raise CacheStorageError(name, str(path), _reason(exc)) from exc
        if len(data) > MAX_FILE_BYTES:  # grew while being read
            raise CacheFileLimitError(str(path), f"the file is over {MAX_FILE_BYTES:,} bytes")
        return data

    def write(self, name: str, data: bytes) -> None:
        path = self.path_for(name)
        self._check_target(name, path)
        tmp = self._write_temp(name, path, data)
        try:
            os.replace(tmp, path)
        except BaseException as exc:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            if isinstance(exc, OSError) and not isinstance(exc, CacheStorageError):
                raise CacheStorageError(name, str(path), _reason(exc)) from exc
            raise

    def create(self, name: str, data: bytes) -> None:
        path = self.path_for(name)
        tmp = self._write_temp(name, path, data)
        try:
            os.link(tmp, path)  # atomic and exclusive: readers never see a partial entry
        except FileExistsError as exc:
            raise CacheExistsError(name, str(self.directory)) from exc
        except OSError as exc:
            raise CacheStorageError(name, str(path), _reason(exc)) from exc
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def destination(self) -> str:
        return str(self.directory.resolve())

    def check_writable(self, name: str) -> None:
        """A missing cache folder is fine (the first write creates it) when its nearest
        existing parent is a writable folder; a read-only folder (permissions or a read-only
        file system) is not."""
        path = self.path_for(name)
        self._check_target(name, path)
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir():
            raise StorageUnwritableError(name, str(folder), "it is not a directory")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise StorageUnwritableError(name, str(folder), "the folder is not writable")
        try:
            readonly = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
        except OSError:
            readonly = False
        if readonly:
            raise StorageUnwritableError(name, str(folder), "the file system is read-only")

    @staticmethod
    def _check_target(name: str, path: Path) -> None:
        """A directory or special file where the cache file should be is an error."""
        try:
            info = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise CacheStorageError(name, str(path), _reason(exc)) from exc
        if stat.S_ISDIR(info.st_mode):
            raise CachePathError(name, "is a directory, not a cache file")
        if not stat.S_ISREG(info.st_mode):
            raise CachePathError(name, "is not a regular file (a FIFO, socket or device)")

    def _write_temp(self, name: str, path: Path, data: bytes) -> str:
        """``data`` written and synced to a hidden temporary file beside ``path``, with the
        permissions ``path`` has (or a new file's usual ones)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.clean_stale_temp_files(path.parent)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        except OSError as exc:
            raise CacheStorageError(name, str(path), _reason(exc)) from exc
        try:
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), _mode_for(path))
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException as exc:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise CacheStorageError(name, str(path), _reason(exc)) from exc
            raise
        return tmp

    @staticmethod
    def clean_stale_temp_files(folder: Path, max_age: float = STALE_TEMP_SECONDS) -> int:
        """Remove the temporary files of writes older than ``max_age`` seconds in ``folder``
        (left behind by killed processes); return how many. Younger ones may belong to a
        write in progress and are kept."""
        removed = 0
        cutoff = time.time() - max_age
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                if not (entry.name.startswith(".") and entry.name.endswith(".tmp")):
                    continue
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode) and info.st_mtime < cutoff:
                        os.unlink(entry.path)
                        removed += 1
        return removed

    def list_names(self) -> list[str]:
        return list(self.list_info())

    def list_info(self) -> dict[str, ObjectInfo]:
        found: dict[str, ObjectInfo] = {}
        for folder, subfolders, files in os.walk(self.directory):
            subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
            for file in files:
                if file.startswith(".") or not file.endswith(".json"):
                    continue
                path = Path(folder, file)
                with contextlib.suppress(OSError):
                    info = path.stat()
                    if stat.S_ISREG(info.st_mode):
                        tag = f"{info.st_mtime_ns}:{info.st_size}:{info.st_ino}"
                        name = path.relative_to(self.directory).as_posix()
                        found[name] = ObjectInfo(size=info.st_size, tag=tag)
        return dict(sorted(found.items()))

    def list_prefix(self, prefix: str) -> list[str]:
        folder = self.path_for(prefix)
        if not folder.is_dir():
            return []
        return sorted(
            p.relative_to(self.directory).as_posix() for p in folder.rglob("*") if p.is_file()
        )

    def exists(self, name: str) -> bool:
        return self.path_for(name).is_file()

    def describe(self, name: str) -> str:
        return str(self.path_for(name))

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path_for(name).unlink()


def _reason(exc: OSError) -> str:
    text = exc.strerror or str(exc)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        text += " (check the folder's permissions, or choose another cache_dir)"
    return text


def _mode_for(path: Path) -> int:
    """The permission bits a write of ``path`` keeps: the file's own, or 0o666 less the
    umask for a new file, as ``open()`` would create it."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process umask, read without changing it where Linux allows."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def load_cache_file(storage: CacheStorage, name: str) -> CacheFile:
    """Read and parse the cache file ``name``.

    Raises:
        CacheNotFoundError, CachePathError, CacheFileCorruptError, UnsupportedCacheVersionError
    """
    return read_cache_file(storage, name)[1]


def read_cache_file(storage: CacheStorage, name: str) -> tuple[bytes, CacheFile]:
    """The bytes stored under ``name`` and the cache file they hold (one read).

    Raises:
        CacheNotFoundError, CachePathError, CacheFileCorruptError, UnsupportedCacheVersionError
    """
    from askcache.cachefile.parse import parse_cache_file

    raw = storage.read(name)
    if not raw.strip():
        raise CacheFileCorruptError(storage.describe(name), "the file is empty")
    return raw, parse_cache_file(raw, storage.describe(name))


def save_cache_file(storage: CacheStorage, name: str, cache_file: CacheFile) -> None:
    """Serialize and store ``cache_file`` atomically under ``name``."""
    from askcache.cachefile.format import dump_cache_file

    storage.write(name, dump_cache_file(cache_file))
