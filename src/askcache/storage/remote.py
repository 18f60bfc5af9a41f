"""Cache files in shared storage: S3 (or anything fsspec reaches) behind ``CacheStorage``.

``CachingSettings(cache_dir="s3://bucket/prefix")`` records once and replays on every machine
that can read the bucket. :func:`storage_for` turns a ``cache_dir`` into a storage: a plain
folder (or a ``file://`` URL) gives :class:`~askcache.storage.cache_storage.LocalCacheStorage`, the
zero-configuration default; any other URL (``s3://``, ``memory://``, ...) gives
:class:`FsspecCacheStorage`, built on fsspec and, for S3, s3fs (``pip install 'askcache[s3]'``).

Credentials are never handled here: s3fs asks botocore, which reads the usual AWS
environment variables, ``~/.aws/config`` and ``~/.aws/credentials`` profiles, and instance or
container roles. Nothing is written with them.

What each operation does on S3:

- ``write``: one ``PutObject``; S3 replaces an object whole, so readers see the old or the
  new bytes, never a mix. A failed write leaves the old object and keeps the bytes in a local
  file (``unsent/`` in the read-through copy's folder) named in the error, so an expensive
  recording is not lost.
- ``create``: a conditional ``PutObject`` with ``If-None-Match: *``; of two processes (or
  machines) creating the same name, exactly one succeeds and the other gets
  :class:`~askcache.foundation.errors.CacheExistsError`. S3 has honoured this since 2024; a server
  that ignores the header would let the later write win, which the run ledger does not depend on
  (its entry names are unique).
- ``delete``: one ``DeleteObject`` (pruning old versions, releasing the lock of a
  trajectory's versions: :mod:`askcache.storage.lock`); nothing happens when there is no
  such object.
- ``check_writable`` (the preflight of a recording or of a replay that may heal): an empty
  probe object is created under ``.askcache-probe/`` and deleted; a missing bucket, no
  permission or no answer is a :class:`~askcache.foundation.errors.StorageUnwritableError` before
  any model call.
- ``read``: a cache file is kept in a local, content-addressed read-through copy. A read asks
  the server for the object's ETag (a ``HeadObject``) and fetches the bytes only when no copy
  with that content is on disk, so a replay fetches the same file once. Run-ledger entries
  (hidden folders) are read directly.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

from askcache.foundation.errors import (
    CacheExistsError,
    CacheNotFoundError,
    CachePathError,
    MissingDependencyError,
    RemoteStorageError,
    StorageUnwritableError,
)
from askcache.storage.cache_storage import CacheStorage, LocalCacheStorage, ObjectInfo

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = ["FsspecCacheStorage", "default_local_copy_dir", "is_url", "storage_for"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_MD5 = re.compile(r"^[0-9a-f]{32}$")
_T = TypeVar("_T")


def is_url(cache_dir: str | os.PathLike[str]) -> bool:
    """True when ``cache_dir`` is a URL (``scheme://...``) rather than a folder."""
    return isinstance(cache_dir, str) and bool(_URL.match(cache_dir))


def default_local_copy_dir() -> Path:
    """Where read-through copies of remote cache files are kept by default:
    ``$ASKCACHE_LOCAL_COPY_DIR``, else ``$XDG_CACHE_HOME/askcache/remote``, else
    ``~/.cache/askcache/remote``."""
    explicit = os.environ.get("ASKCACHE_LOCAL_COPY_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "askcache" / "remote"


def storage_for(
    cache_dir: str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    local_copy_dir: str | os.PathLike[str] | None = None,
) -> CacheStorage:
    """The storage for a ``cache_dir``: a local folder, or a URL.

    Args:
        cache_dir: A folder (``.askcache``), a ``file://`` URL (both give
            :class:`~askcache.storage.cache_storage.LocalCacheStorage`), or any URL fsspec knows
            (``s3://bucket/prefix``, ``memory://name``), which gives :class:`FsspecCacheStorage`.
        storage_options: Passed to the fsspec filesystem (for s3fs e.g.
            ``{"endpoint_url": ..., "profile": ...}``); credentials are better left to the
            AWS environment and configuration.
        local_copy_dir: Folder of the read-through copy (default
            :func:`default_local_copy_dir`).

    Raises:
        MissingDependencyError: the URL needs a package that is not installed (the message
            says what to install).
        CachePathError: the URL is not one fsspec understands.
    """
    if not is_url(cache_dir):
        return LocalCacheStorage(cache_dir)
    url = str(cache_dir)
    if url.startswith("file://"):
        return LocalCacheStorage(url.removeprefix("file://"))
    return FsspecCacheStorage(
        url,
        storage_options=storage_options,
        local_copy_dir=default_local_copy_dir() if local_copy_dir is None else local_copy_dir,
    )


def _filesystem(url: str, options: Mapping[str, Any]) -> tuple[AbstractFileSystem, str]:
    scheme = url.split("://", 1)[0].lower()
    try:
        import fsspec
    except ImportError as exc:
        raise MissingDependencyError(
            f"cache_dir {url!r}", "fsspec", "pip install 'askcache[s3]'"
        ) from exc
    try:
        fs, root = fsspec.core.url_to_fs(url, **options)
    except ImportError as exc:
        from fsspec.registry import known_implementations

        known = known_implementations.get(scheme, {})
        package = str(known.get("class", "")).split(".")[0] or exc.name or scheme
        hint = "pip install 'askcache[s3]'" if package == "s3fs" else f"pip install {package}"
        raise MissingDependencyError(f"cache_dir {url!r}", package, hint) from exc
    except ValueError as exc:  # unknown protocol
        raise CachePathError(url, f"not a storage URL fsspec knows: {exc}") from exc
    return fs, str(root).rstrip("/")


class FsspecCacheStorage(CacheStorage):
    """Cache files under a URL prefix of an fsspec filesystem (S3 through s3fs, memory, ...).

    Names are relative POSIX paths under the prefix, checked as for local storage: ``..``,
    absolute paths and NUL bytes are refused with
    :class:`~askcache.foundation.errors.CachePathError`. Failures of the server or the network raise
    :class:`~askcache.foundation.errors.RemoteStorageError` naming the URL and the operation.

    Args:
        url: ``s3://bucket/prefix`` or another fsspec URL.
        storage_options: Options of the fsspec filesystem.
        local_copy_dir: Folder of the read-through copy of cache files; ``None``: none.
        filesystem: An fsspec filesystem to use instead of one built from ``url`` (its
            protocol must match the URL's).
    """

    def __init__(
        self,
        url: str,
        *,
        storage_options: Mapping[str, Any] | None = None,
        local_copy_dir: str | os.PathLike[str] | None = None,
        filesystem: AbstractFileSystem | None = None,
    ) -> None:
        if not is_url(url):
            raise CachePathError(url, "not a URL (scheme://...)")
        self.url = url.rstrip("/")
        if filesystem is None:
            self.fs, self.root = _filesystem(url, storage_options or {})
        else:
            self.fs, self.root = filesystem, str(filesystem._strip_protocol(url)).rstrip("/")
        self.local_copy_dir = None if local_copy_dir is None else Path(local_copy_dir)
        self.remote_reads = 0
        """Object bodies fetched from the server by :meth:`read` (the read-through copy
        serves the others)."""
        self._writable = False

    # -- names -----------------------------------------------------------------------------

    def _check(self, name: str) -> str:
        if not name or "\x00" in name:
            raise CachePathError(name, "empty or contains a NUL byte")
        pure = PurePosixPath(name.replace("\\", "/"))
        if pure.is_absolute() or ".." in pure.parts or "." in name.split("/"):
            raise CachePathError(name, f"must be a relative path inside {self.url}")
        return pure.as_posix()

    def path_for(self, name: str) -> str:
        """The filesystem path (bucket/prefix/name) for ``name``."""
        return f"{self.root}/{self._check(name)}"

    def describe(self, name: str) -> str:
        return f"{self.url}/{self._check(name)}"

    def destination(self) -> str:
        return self.url

    def _name(self, path: str) -> str:
        return path.removeprefix(self.root + "/")

    @contextlib.contextmanager
    def _remote(self, operation: str, name: str) -> Iterator[None]:
        """Turn the filesystem's and the network's errors into askcache errors."""
        try:
            yield
        except (CacheNotFoundError, CacheExistsError, CachePathError):
            raise
        except FileNotFoundError as exc:
            if operation == "list":  # a missing prefix lists as empty: the bucket is missing
                raise RemoteStorageError(
                    self.url, operation, name, f"the bucket does not exist ({_reason(exc)})"
                ) from exc
            raise CacheNotFoundError(name, self.url) from exc
        except FileExistsError as exc:
            raise CacheExistsError(name, self.url) from exc
        except Exception as exc:  # botocore/aiohttp/OSError: the server or network failed
            raise RemoteStorageError(self.url, operation, name, _reason(exc)) from exc

    def _call(self, operation: str, name: str, call: Callable[[], _T]) -> _T:
        with self._remote(operation, name):
            return call()
        raise AssertionError("unreachable")  # pragma: no cover

    # -- reading ---------------------------------------------------------------------------

    def read(self, name: str) -> bytes:
        path = self.path_for(name)
        hidden = any(part.startswith(".") for part in PurePosixPath(name).parts)
        if self.local_copy_dir is None or hidden:
            return self._fetch(name, path)
        self.fs.invalidate_cache(path)  # an earlier listing's ETag may be stale
        info = self._call("read", name, lambda: self.fs.info(path))
        if info.get("type") == "directory":
            raise CachePathError(name, "is a directory")
        etag = str(info.get("ETag") or info.get("etag") or "").strip('"').lower()
        if not _MD5.match(etag):  # no content hash (a multipart upload, another filesystem)
            return self._fetch(name, path)
        copy = self.local_copy_dir / etag[:2] / f"{etag}.json"
        with contextlib.suppress(OSError):
            return copy.read_bytes()
        data = self._fetch(name, path)
        if hashlib.md5(data, usedforsecurity=False).hexdigest() == etag:
            self._keep(copy, data)  # stored under its own hash: a copy is never mislabelled
        return data

    def _fetch(self, name: str, path: str) -> bytes:
        data = self._call("read", name, lambda: self.fs.cat_file(path))
        self.remote_reads += 1
        return bytes(data)

    @staticmethod
    def _keep(copy: Path, data: bytes) -> None:
        """Add ``data`` to the read-through copy atomically; a failure only costs a re-fetch."""
        with contextlib.suppress(OSError):
            copy.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=copy.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(tmp, copy)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)

    def exists(self, name: str) -> bool:
        path = self.path_for(name)
        self.fs.invalidate_cache(path)
        return bool(self._call("exists", name, lambda: self.fs.isfile(path)))

    def read_many(self, names: Iterable[str]) -> dict[str, bytes]:
        """Every object's bytes fetched concurrently (fsspec's ``cat`` of a list of paths, one
        ``GetObject`` each), never from the read-through copy; missing ones are left out."""
        paths = {self.path_for(name): name for name in names}
        if not paths:
            return {}
        # s3fs asks for an object's size (a HeadObject) before each GetObject, to read big
        # ones in concurrent ranges; these objects are small: one request each
        options = {"max_concurrency": 1} if getattr(self.fs, "max_concurrency", 1) > 1 else {}
        found = self._call(
            "read", "", lambda: self.fs.cat(list(paths), on_error="return", **options)
        )
        result: dict[str, bytes] = {}
        for path, data in found.items():
            name = paths.get(str(path)) or paths.get(self.fs._strip_protocol(str(path)), "")
            if isinstance(data, FileNotFoundError) or not name:
                continue
            if isinstance(data, BaseException):
                with self._remote("read", name):
                    raise data
            result[name] = bytes(data)
        self.remote_reads += len(result)
        return result

    def delete_many(self, names: Iterable[str]) -> None:
        """One ``DeleteObjects`` request per thousand names."""
        paths = [self.path_for(name) for name in names]
        if paths:
            try:
                with contextlib.suppress(CacheNotFoundError), self._remote("delete", paths[0]):
                    self.fs.rm(paths)
            finally:
                for path in paths:
                    self.fs.invalidate_cache(path)

    def _find(self, folder: str) -> list[str]:
        self.fs.invalidate_cache()  # other machines write too: always list afresh
        found = self.fs.find(folder)
        return sorted(self._name(str(path)) for path in found)

    def _walk_visible(self, folder: str, found: dict[str, ObjectInfo]) -> None:
        """The objects under ``folder``, skipping hidden folders (the run ledger, versions,
        the index) without listing what is inside them."""
        for info in self.fs.ls(folder, detail=True, refresh=True):
            path = str(info["name"]).rstrip("/")
            if path.rsplit("/", 1)[-1].startswith(".") or path == folder:
                continue
            if info.get("type") == "directory":
                with contextlib.suppress(FileNotFoundError):  # emptied meanwhile
                    self._walk_visible(path, found)
            elif path.endswith(".json"):
                etag = str(info.get("ETag") or info.get("etag") or "").strip('"').lower()
                size = info.get("size")
                found[self._name(path)] = ObjectInfo(
                    size=None if size is None else int(size),
                    tag=etag or None,
                    md5=etag if _MD5.match(etag) else None,
                )

    def list_info(self) -> dict[str, ObjectInfo]:
        found: dict[str, ObjectInfo] = {}
        with self._remote("list", ""):
            try:
                self._walk_visible(self.root, found)
            except FileNotFoundError:  # an empty prefix, or no bucket (an error)
                if not self.fs.exists(self.root.split("/", 1)[0] or "/"):
                    raise
        return dict(sorted(found.items()))

    def list_names(self) -> list[str]:
        return list(self.list_info())

    def list_prefix(self, prefix: str) -> list[str]:
        folder = self.path_for(prefix)
        return self._call("list", prefix, lambda: self._find(folder))

    # -- writing ---------------------------------------------------------------------------

    def write(self, name: str, data: bytes) -> None:
        path = self.path_for(name)
        try:
            with self._remote("write", name):
                self.fs.pipe_file(path, data)
        except RemoteStorageError as exc:
            exc.kept_at = _keep_unsent(self.local_copy_dir or default_local_copy_dir(), name, data)
            exc.args = (f"{exc.args[0]}; the data was kept at {exc.kept_at}",)
            raise
        finally:
            self.fs.invalidate_cache(path)

    def check_writable(self, name: str) -> None:
        """S3 tells whether a prefix can be written only by writing to it: an empty probe
        object is created under ``.askcache-probe/`` and deleted at once (once per storage
        object)."""
        self._check(name)
        if self._writable:
            return
        probe = f"{self.root}/.askcache-probe/{uuid.uuid4().hex}"
        try:
            self.fs.pipe_file(probe, b"")
        except FileNotFoundError as exc:
            bucket = self.root.split("/", 1)[0]
            raise StorageUnwritableError(
                name, self.url, f"the bucket {bucket!r} does not exist ({_reason(exc)})"
            ) from exc
        except PermissionError as exc:
            raise StorageUnwritableError(
                name, self.url, f"no permission to write ({_reason(exc)})"
            ) from exc
        except Exception as exc:  # botocore/aiohttp/OSError: the server or network failed
            raise StorageUnwritableError(
                name, self.url, f"the storage did not answer ({_reason(exc)})"
            ) from exc
        finally:
            self.fs.invalidate_cache(probe)
        with contextlib.suppress(Exception):  # a storage that cannot delete keeps the probe
            self.fs.rm_file(probe)
        self._writable = True

    def create(self, name: str, data: bytes) -> None:
        path = self.path_for(name)
        try:
            with self._remote("create", name):
                self.fs.pipe_file(path, data, mode="create")
        finally:
            self.fs.invalidate_cache(path)

    def delete(self, name: str) -> None:
        path = self.path_for(name)
        try:
            with contextlib.suppress(CacheNotFoundError), self._remote("delete", name):
                self.fs.rm_file(path)
        finally:
            self.fs.invalidate_cache(path)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def _keep_unsent(local_copy_dir: Path, name: str, data: bytes) -> Path | None:
    """Save bytes a failed write could not send (in ``unsent/`` of the local copy's folder),
    so that nothing recorded is lost."""
    folder = local_copy_dir / "unsent"
    target = folder / PurePosixPath(name).name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f"{target.stem}-", suffix=".json", dir=folder)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except OSError:
        return None
    return Path(tmp)
