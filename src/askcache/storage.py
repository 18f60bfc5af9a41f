"""Where cache files live: a small interface, and a local directory by default.

Storage deals in bytes and names; parsing is :mod:`askcache.cache_file`'s job. The two meet
in :func:`load_cache_file` and :func:`save_cache_file`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path, PurePosixPath

from askcache.cache_file import CacheFile, dump_cache_file, parse_cache_file
from askcache.errors import (
    CacheExistsError,
    CacheFileCorruptError,
    CacheNotFoundError,
    CachePathError,
)

__all__ = [
    "CacheStorage",
    "LocalCacheStorage",
    "load_cache_file",
    "read_cache_file",
    "save_cache_file",
]


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
        try:
            return path.read_bytes()
        except FileNotFoundError as exc:
            raise CacheNotFoundError(name, str(self.directory)) from exc
        except IsADirectoryError as exc:
            raise CachePathError(name, "is a directory") from exc

    def write(self, name: str, data: bytes) -> None:
        path = self.path_for(name)
        tmp = self._write_temp(path, data)
        try:
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def create(self, name: str, data: bytes) -> None:
        path = self.path_for(name)
        tmp = self._write_temp(path, data)
        try:
            os.link(tmp, path)  # atomic and exclusive: readers never see a partial entry
        except FileExistsError as exc:
            raise CacheExistsError(name, str(self.directory)) from exc
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    @staticmethod
    def _write_temp(path: Path, data: bytes) -> str:
        """``data`` written and synced to a hidden temporary file beside ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return tmp

    def list_names(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        found = []
        for path in self.directory.rglob("*.json"):
            relative = path.relative_to(self.directory)
            if path.is_file() and not any(part.startswith(".") for part in relative.parts):
                found.append(relative.as_posix())
        return sorted(found)

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
    raw = storage.read(name)
    if not raw.strip():
        raise CacheFileCorruptError(storage.describe(name), "the file is empty")
    return raw, parse_cache_file(raw, storage.describe(name))


def save_cache_file(storage: CacheStorage, name: str, cache_file: CacheFile) -> None:
    """Serialize and store ``cache_file`` atomically under ``name``."""
    storage.write(name, dump_cache_file(cache_file))
