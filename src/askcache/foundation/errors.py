"""Every error askcache raises: one base class, specific subclasses.

Each subclass also inherits the nearest built-in exception, so ``except FileNotFoundError``
still works for a missing cache file, and each carries structured context as attributes
(the file, the field, the step) besides its readable message.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import PurePath

from askcache.foundation.redaction import redact

__all__ = [
    "AskCacheError",
    "CacheExistsError",
    "CacheFileCorruptError",
    "CacheFileLimitError",
    "CacheFileRefusedError",
    "CacheInvalidatedError",
    "CacheNotFoundError",
    "CacheOverwriteRefusedError",
    "CacheParameterError",
    "CachePathError",
    "CacheSignatureError",
    "CacheStorageError",
    "InvalidHashError",
    "InvalidScreenshotError",
    "InvalidSettingsError",
    "LedgerUnavailableError",
    "LedgerUrlError",
    "MissingApiKeyError",
    "MissingDependencyError",
    "OutboxError",
    "RecordingNotStoredError",
    "RemoteStorageError",
    "ScreenshotTooLargeError",
    "SignatureLossRefusedError",
    "StorageLockBusyError",
    "StorageLockLostError",
    "StorageUnwritableError",
    "ThumbnailError",
    "UnsupportedCacheVersionError",
]


class AskCacheError(Exception):
    """Base class of every error raised by askcache. Its message never shows a registered
    secret (:func:`askcache.foundation.redaction.redact`)."""

    def __str__(self) -> str:
        return redact(super().__str__())

    def __repr__(self) -> str:
        return redact(super().__repr__())


class InvalidSettingsError(AskCacheError, ValueError):
    """A settings object was constructed with a wrong or unknown field. The message is one
    line naming each field and what is wrong; for an unknown field, the closest valid name
    first (``invalid CacheWritingSettings: filenme: unknown field; did you mean 'filename'?
    (valid fields: ...)``).

    Attributes:
        model: Name of the settings class.
        problems: ``(field path, what is wrong)`` per offending field; nested settings'
            fields are dotted (``writing_settings.filename``).
    """

    def __init__(self, model: str, problems: Sequence[tuple[str, str]]) -> None:
        self.model = model
        self.problems = list(problems)
        said = "; ".join(f"{path}: {text}" for path, text in self.problems)
        super().__init__(f"invalid {model}: {said}")  # one line: a traceback ends with it

    @property
    def fields(self) -> list[str]:
        """The offending field paths."""
        return [path for path, _ in self.problems]


class CacheNotFoundError(AskCacheError, FileNotFoundError):
    """No cache file exists under the given name.

    Attributes:
        name: The requested file name, relative to the storage.
        location: Where it was looked for (a directory for local storage).
    """

    def __init__(self, name: str, location: str) -> None:
        self.name = name
        self.location = location
        super().__init__(f"cache file {name!r} not found in {location}")


class CacheExistsError(AskCacheError, FileExistsError):
    """Something is already stored under a name that may only be created once."""

    def __init__(self, name: str, where: str) -> None:
        self.name = name
        self.where = where
        super().__init__(f"{name!r} already exists in {where}")


class CacheOverwriteRefusedError(CacheExistsError):
    """A recording would replace an existing trajectory while versions are turned off
    (``CachingSettings.keep_versions=0``): the earlier recording would be lost, so nothing is
    recorded over it."""

    def __init__(self, name: str, where: str, *, kept_as: str | None = None) -> None:
        """``where``: the trajectory's full location (``CacheStorage.describe``);
        ``kept_as``: where the refused recording was kept instead (a proposal, when the
        trajectory appeared while the model worked), if it was."""
        super().__init__(name, where)
        self.kept_as = kept_as
        kept = (
            f"; this recording is kept as the proposal {kept_as} (`askcache accept` makes it "
            "current)"
            if kept_as
            else ""
        )
        self.args = (
            f"{where} already exists and versions are off (keep_versions=0): "
            "recording over it would lose it; keep versions (keep_versions=1 or more), choose "
            f"another filename, or delete the file first{kept}",
        )


class CacheInvalidatedError(AskCacheError, ValueError):
    """A replay was asked of a cache file marked invalid."""

    def __init__(self, file: str, reason: str | None) -> None:
        self.file = file
        self.reason = reason
        super().__init__(
            f"{file} is marked invalid ({reason or 'no reason given'}); record it again, or "
            "replay it anyway with CacheExecutionSettings(allow_invalidated=True)"
        )


class CachePathError(AskCacheError, ValueError):
    """A cache file name escapes the cache folder or is not a plain relative path.

    Attributes:
        name: The rejected name.
        reason: Why it was rejected.
    """

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"cache file name {name!r} rejected: {reason}")


class CacheFileCorruptError(AskCacheError, ValueError):
    """A cache file could not be parsed or does not match the cache format.

    Attributes:
        name: The file's name (or path).
        detail: What was wrong, naming the field where known.
        field: The offending field's path (``trajectory[2].input.coordinate``), when known.
        step: Index of the offending step, when the problem is inside one.
    """

    def __init__(
        self,
        name: str | PurePath,
        detail: str,
        *,
        field: str | None = None,
        step: int | None = None,
    ) -> None:
        self.name = str(name)
        self.detail = detail
        self.field = field
        self.step = step
        super().__init__(f"cache file {self.name!r} is not a valid askcache file: {detail}")


class CacheFileLimitError(CacheFileCorruptError):
    """A cache file exceeds one of the documented limits (size, nesting, steps, lengths).

    The limits are in :mod:`askcache.cachefile.format` (``MAX_FILE_BYTES`` ...) and
    docs/cache-format.md; they keep a hostile file from exhausting memory or time.
    """


class CacheFileRefusedError(AskCacheError, ValueError):
    """A well-formed cache file that this replay refuses to execute, before any action runs.

    Raised when a step the file wants checked cannot be checked (no validation set-up, no
    hash), when a step calls a tool this run does not allow, or when parameter values are
    unsafe. The replay never meets such a file: it is refused up front.

    Attributes:
        name: The file's name.
        reason: Why it was refused.
        field: The offending field's path, when known.
        step: Index of the offending step, when known.
    """

    def __init__(
        self, name: str, reason: str, *, field: str | None = None, step: int | None = None
    ) -> None:
        self.name = name
        self.reason = reason
        self.field = field
        self.step = step
        super().__init__(f"cache file {name!r} refused: {reason}")


class CacheSignatureError(CacheFileRefusedError):
    """Signature verification failed: the file is unsigned, signed with an unknown key, or
    its content changed after signing (see docs/cache-format.md, "Signed files")."""


class CacheStorageError(AskCacheError, OSError):
    """The storage could not read or write a name: permissions, a directory or a FIFO
    where a file should be, a full disk.

    Attributes:
        name: The cache file's name.
        where: The path or location involved.
        reason: What went wrong.
    """

    def __init__(self, name: str, where: str, reason: str) -> None:
        self.name = name
        self.where = where
        self.reason = reason
        super().__init__(f"cache file {name!r} at {where}: {reason}")


class StorageLockBusyError(AskCacheError, TimeoutError):
    """Another live process holds the lock of a trajectory's versions (it is changing the
    trajectory: a heal's commit, ``accept``, ``rollback``); see :mod:`askcache.storage.lock`.

    Attributes:
        where: The locked folder.
        owner: Who holds the lock (host, process id, since when).
    """

    def __init__(self, where: str, owner: str) -> None:
        self.where = where
        self.owner = owner
        super().__init__(f"{where} is locked by {owner}; try again once it is done")


class StorageLockLostError(AskCacheError, RuntimeError):
    """A process that took the lock of a trajectory's versions no longer holds it when it
    comes to write: its lease ran out (a stall, a suspended machine) and another process took
    the lock over, or its lock object is gone. Nothing more is written by it (a heal keeps
    its fix as a proposal); see :mod:`askcache.storage.lock`, "Fencing".

    Attributes:
        where: The locked folder.
        reason: How the lock was found lost.
    """

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(
            f"{where}: this process no longer holds the lock ({reason}); nothing more was "
            "written by it"
        )


class StorageUnwritableError(CacheStorageError):
    """The cache storage cannot be written: a missing bucket or folder, no permission, a
    server that does not answer. Raised before the first model call of a recording or of a
    replay that may heal, so no tokens are spent on work that could not be kept.

    Attributes:
        name: The cache file that was to be written.
        where: The storage (a folder or a URL).
        reason: What is wrong.
    """

    def __init__(self, name: str, where: str, reason: str) -> None:
        super().__init__(name, where, reason)
        self.args = (f"cannot write to {where}: {reason} (checked before any model call)",)


class RecordingNotStoredError(CacheStorageError):
    """A finished recording could not be written to the cache storage (the disk full, the
    server gone, the folder turned read-only after the preflight). It is never silently
    lost: it is kept in the outbox (:attr:`kept_at`) and sent by the next run of the same
    storage or by ``askcache sync``; when the outbox cannot be written either (it is on the
    same full disk), nothing is kept and :attr:`recording` holds the only copy. The message
    is one line saying which.

    Attributes:
        name: The trajectory's name.
        where: Where it was to be written.
        reason: What the storage said.
        recording: The cache file's bytes, as they were to be stored.
        kept_at: The outbox file that keeps them; ``None``: nothing could be kept.
        not_kept: Why the outbox could not keep them (``None`` when it did).
        kept: The outbox's ``KeptWrite`` of it (``None``: nothing could be kept).
        result: The run's ``ActResult`` (conversation, replays, writes: the recording is
            in its ``kept_locally`` or ``not_written``) when ``Agent.act`` or the user's
            loop raised this; ``None`` otherwise.
    """

    def __init__(
        self,
        name: str,
        where: str,
        reason: str,
        *,
        recording: bytes,
        kept_at: PurePath | None,
        send: str = "askcache sync",
        not_kept: str | None = None,
    ) -> None:
        """``send``: the command that sends the kept recording."""
        super().__init__(name, where, reason)
        self.recording = recording
        self.kept_at = kept_at
        self.not_kept = not_kept
        self.kept: object | None = None
        self.result: object | None = None
        said = f"the recording {name!r} could not be written to {where}: {reason}"
        if kept_at is not None:
            said += (
                f"; it is kept in the outbox at {kept_at}: `{send}` sends it once the storage "
                "can be written (the next run of this storage does too)"
            )
        else:
            said += (
                f"; nothing could be kept: {not_kept or 'the outbox failed too'}; the recording "
                f"({len(recording):,} bytes) is only on this error (its `recording` "
                "attribute, and `result` for the run): save it elsewhere"
            )
        self.args = (said.replace("\r", " ").replace("\n", " "),)  # one line, always


class OutboxError(AskCacheError, OSError):
    """The outbox (the local folder of writes not yet sent, :mod:`askcache.storage.outbox`) cannot
    be read or written either.

    Attributes:
        folder: The outbox folder.
        reason: What went wrong.
    """

    def __init__(self, folder: str, reason: str) -> None:
        self.folder = folder
        self.reason = reason
        super().__init__(f"outbox {folder}: {reason}")


class UnsupportedCacheVersionError(AskCacheError, ValueError):
    """A cache file was written by a newer (or unknown) format version.

    Attributes:
        name: The file's name.
        version: The version found in the file.
        supported: The newest version this askcache reads.
    """

    def __init__(self, name: str, version: object, supported: int) -> None:
        self.name = name
        self.version = version
        self.supported = supported
        super().__init__(
            f"cache file {name!r} has format version {version!r}; this askcache reads versions "
            f"up to {supported}. Upgrade askcache to read it."
        )


class InvalidHashError(AskCacheError, ValueError):
    """A stored visual hash is malformed, or two hashes cannot be compared.

    Attributes:
        detail: What was wrong.
    """

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


class InvalidScreenshotError(AskCacheError, ValueError):
    """A screenshot in the message history is not a decodable image.

    Attributes:
        where: Which message or tool result held it.
    """

    def __init__(self, where: str, detail: str) -> None:
        self.where = where
        super().__init__(f"screenshot in {where} is not a readable image: {detail}")


class ScreenshotTooLargeError(InvalidScreenshotError):
    """An image from outside declares more pixels than askcache decodes
    (:data:`askcache.foundation.limits.MAX_IMAGE_PIXELS`); nothing of it was decoded.

    Attributes:
        where: Which file, message or tool result held it.
        width: Its declared width, in pixels.
        height: Its declared height, in pixels.
        limit: The most pixels askcache decodes.
    """

    def __init__(self, where: str, width: int, height: int, limit: int) -> None:
        self.where = where
        self.width = width
        self.height = height
        self.limit = limit
        AskCacheError.__init__(
            self,
            f"screenshot in {where} is {width}x{height} pixels, more than the {limit:,} "
            "askcache decodes (askcache.foundation.limits.MAX_IMAGE_PIXELS)",
        )


class CacheParameterError(AskCacheError, ValueError):
    """Parameter values given for a trajectory do not match its parameters.

    Attributes:
        name: The cache file's name.
        missing: Parameters the trajectory needs that were not given.
        unknown: Values given for parameters the trajectory does not have.
    """

    def __init__(self, name: str, missing: Iterable[str], unknown: Iterable[str]) -> None:
        self.name = name
        self.missing = sorted(missing)
        self.unknown = sorted(unknown)
        parts = []
        if self.missing:
            parts.append(f"missing values for {', '.join(self.missing)}")
        if self.unknown:
            parts.append(f"unknown parameters {', '.join(self.unknown)}")
        super().__init__(f"cache file {name!r}: {'; '.join(parts)}")


class MissingDependencyError(AskCacheError, ImportError):
    """A feature needs an optional package that is not installed.

    Attributes:
        feature: What needed it (``cache_dir 's3://...'``).
        package: The missing package.
        hint: How to install it.
    """

    def __init__(self, feature: str, package: str, hint: str) -> None:
        self.feature = feature
        self.package = package
        self.hint = hint
        super().__init__(f"{feature} needs the package {package!r}: {hint}")


class LedgerUrlError(AskCacheError, ValueError):
    """A run-ledger URL that names no engine askcache knows (``sqlite:///PATH`` or
    ``postgresql://...``).

    Attributes:
        url: The URL, its password hidden.
        source: Where it came from (``CachingSettings.ledger``, ``--ledger``,
            ``$ASKCACHE_LEDGER``).
        reason: What is wrong with it.
    """

    def __init__(self, url: str, source: str, reason: str) -> None:
        self.url = url
        self.source = source
        self.reason = reason
        super().__init__(
            f"{source} {url!r}: {reason} (give sqlite:///PATH or postgresql://HOST/DB; "
            "docs/ledger.md)"
        )


class LedgerUnavailableError(AskCacheError, OSError):
    """The run ledger's engine did not answer in time, refused the connection or failed: a
    locked or read-only SQLite database, a full disk, a PostgreSQL server that is down. An
    ``OSError``: a run's writer keeps the entry in the outbox, and ``askcache sync`` or the
    next run sends it.

    Attributes:
        url: The ledger's URL (its password hidden) or database path.
        operation: ``open``, ``append``, ``write``, ``read``, ``prune`` or ``migrate``.
        reason: What the engine, the server or the network said.
    """

    def __init__(self, url: str, operation: str, reason: str) -> None:
        self.url = url
        self.operation = operation
        self.reason = reason
        super().__init__(f"run ledger {url}: could not {operation}: {reason}")


class RemoteStorageError(AskCacheError, OSError):
    """Shared storage (S3, ...) failed: the server or the network did not answer as expected.

    Nothing is half-written: an object is replaced whole or not at all.

    Attributes:
        url: The storage's URL.
        operation: ``read``, ``write``, ``create``, ``list`` or ``exists``.
        name: The cache file or folder involved (``""`` for the whole storage).
        reason: What the server or network said.
        kept_at: For a failed ``write``, the local file that keeps the unsent bytes.
    """

    def __init__(self, url: str, operation: str, name: str, reason: str) -> None:
        self.url = url
        self.operation = operation
        self.name = name
        self.reason = reason
        self.kept_at: PurePath | None = None
        target = f"{url}/{name}" if name else url
        super().__init__(
            f"could not {operation} {target}: {reason} (check the URL, the network and the "
            "credentials: docs/fleet.md)"
        )


class MissingApiKeyError(AskCacheError, RuntimeError):
    """Claude was asked for, but ``ANTHROPIC_API_KEY`` is not set.

    Attributes:
        what: What needed the key.
        offline: How to run the same thing without a key, if there is a way.
    """

    def __init__(self, what: str, offline: str | None = None) -> None:
        self.what = what
        self.offline = offline
        alternative = f", or run offline: {offline}" if offline else ""
        super().__init__(
            f"{what} needs ANTHROPIC_API_KEY: export ANTHROPIC_API_KEY=...{alternative}"
        )


class SignatureLossRefusedError(AskCacheError, ValueError):
    """A change would make a signed trajectory unsigned (it was made where no signing key is
    set: a heal, a learned screen profile, a re-recording, ``tune``), and is not committed.

    A signed trajectory becomes unsigned only by an explicit command (``askcache accept`` or
    ``askcache rollback`` of an unsigned version); a heal or a re-recording that cannot be
    signed is kept as a proposal instead (see docs/cache-format.md, "Signed files").

    Attributes:
        name: The trajectory's name.
        reason: Why the change was not committed, and what to do.
    """

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"{name} not changed: {reason}")


class ThumbnailError(AskCacheError, ValueError):
    """A failing region's thumbnail kept beside a run-ledger entry is not a PNG image of the
    size askcache writes (damaged, truncated, foreign): the fleet page shows it as not kept.

    Attributes:
        entry: The ledger entry the thumbnail was kept beside (its id).
        which: ``recorded`` or ``latest``.
        reason: What is wrong with it.
    """

    def __init__(self, entry: str, which: str, reason: str) -> None:
        self.entry = entry
        self.which = which
        self.reason = reason
        super().__init__(
            f"the {which} thumbnail kept beside ledger entry {entry} is unreadable: {reason}"
        )
