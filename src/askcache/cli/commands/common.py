"""What every subcommand shares: exit codes, options, opening the storage, output."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO, cast

from askcache.foundation.errors import AskCacheError, CacheNotFoundError
from askcache.foundation.parameters import secret_placeholders_in
from askcache.foundation.redaction import redact, redact_value, register_secrets
from askcache.storage.cache_storage import CacheStorage, LocalCacheStorage
from askcache.storage.ledger import RunLedger, open_ledger
from askcache.storage.remote import is_url, storage_for

if TYPE_CHECKING:
    from askcache.cachefile.format import CacheFile

__all__ = [
    "DEFAULT_CACHE_DIR",
    "EXIT_ERROR",
    "EXIT_FINDINGS",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_USAGE",
    "CacheFolderMissingError",
    "add_cache_dir",
    "describe_profiles",
    "emit_json",
    "location",
    "open_run_ledger",
    "open_storage",
    "redacted_output",
    "resolve_name",
]

EXIT_OK = 0
"""Success."""
EXIT_FINDINGS = 1
"""The command ran and found a problem (lint errors, parity FAIL, a failed demo)."""
EXIT_ERROR = 3
"""An error the user fixes: a missing key, folder or file; an unreadable file; storage down."""
EXIT_USAGE = 64
"""A bad command line (as sysexits' EX_USAGE)."""
EXIT_INTERNAL = 70
"""A bug (as sysexits' EX_SOFTWARE)."""
EXIT_INTERRUPTED = 130
"""Ctrl-C."""
EXIT_PIPE = 141
"""The output's reader went away (as a process ended by SIGPIPE)."""

DEFAULT_CACHE_DIR = ".askcache"
"""The cache folder when neither ``--cache-dir`` nor ``$ASKCACHE_CACHE_DIR`` says."""


class CacheFolderMissingError(AskCacheError, FileNotFoundError):
    """The local cache folder named on the command line does not exist."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        super().__init__(
            f"no cache folder {folder!r} (give --cache-dir, or set ASKCACHE_CACHE_DIR; "
            f"recordings create it)"
        )


def add_cache_dir(parser: argparse.ArgumentParser) -> None:
    """The ``--cache-dir`` and ``--ledger`` options."""
    parser.add_argument(
        "--cache-dir",
        default=os.environ.get("ASKCACHE_CACHE_DIR", DEFAULT_CACHE_DIR),
        metavar="DIR_OR_URL",
        help="a folder or a URL such as s3://bucket/prefix "
        "(default: $ASKCACHE_CACHE_DIR, else .askcache)",
    )
    parser.add_argument(
        "--ledger",
        default=None,
        metavar="URL",
        help="where the run ledger is: sqlite:///PATH or postgresql://... "
        "(default: $ASKCACHE_LEDGER, else kept with the cache; docs/ledger.md)",
    )


def open_run_ledger(
    args: argparse.Namespace,
    storage: CacheStorage,
    progress: Callable[[int, int], None] | None = None,
) -> RunLedger:
    """The run ledger of ``storage``, where ``--ledger`` (else ``$ASKCACHE_LEDGER``) says;
    ``progress`` is told how a first open's migration goes."""
    return open_ledger(storage, getattr(args, "ledger", None), source="--ledger", progress=progress)


def open_storage(cache_dir: str) -> CacheStorage:
    """The storage of ``--cache-dir``; a local folder must exist.

    Raises:
        CacheFolderMissingError: a local folder that does not exist.
    """
    storage = storage_for(cache_dir)
    if (
        not is_url(cache_dir)
        and isinstance(storage, LocalCacheStorage)
        and not storage.directory.is_dir()
    ):
        raise CacheFolderMissingError(cache_dir)
    return storage


def resolve_name(storage: CacheStorage, name: str) -> str:
    """``name`` as stored: ``login`` finds ``login.json``.

    Raises:
        CacheNotFoundError: neither exists; the message lists the closest names.
    """
    candidates = [name] if name.endswith(".json") else [name, f"{name}.json"]
    for candidate in candidates:
        if storage.exists(candidate):
            return candidate
    known = storage.list_names()
    close = difflib.get_close_matches(candidates[-1], known, n=3, cutoff=0.5)
    error = CacheNotFoundError(candidates[-1], location(storage))
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    hint += " (askcache list shows them)" if known else ""
    error.args = (f"{error.args[0]}{hint}",)
    raise error


def location(storage: CacheStorage) -> str:
    """Where the storage keeps its files, for messages."""
    if isinstance(storage, LocalCacheStorage):
        return str(storage.directory)
    return str(getattr(storage, "url", type(storage).__name__))


def parameter_argument(text: str) -> tuple[str, str]:
    """``--param NAME=VALUE`` as ``(NAME, VALUE)`` (argparse ``type``: a usage error without
    ``=``)."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def register_given_secrets(cache_file: CacheFile, values: dict[str, str]) -> None:
    """Register the values given for ``cache_file``'s secret parameters, so that no output
    of this process shows them (:mod:`askcache.foundation.redaction`)."""
    secrets = secret_placeholders_in(
        [cache_file.metadata.goal, *(step.input for step in cache_file.trajectory)]
    )
    register_secrets({key: values[key] for key in secrets if key in values})


def emit_json(value: Any) -> None:
    """Print ``value`` as JSON on stdout (the ``--json`` output), registered secrets
    redacted from its strings (:func:`~askcache.foundation.redaction.redact`)."""
    json.dump(redact_value(value), sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


class _RedactingWriter:
    """A text stream that redacts registered secrets from what is written to it."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redact(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextmanager
def redacted_output() -> Iterator[None]:
    """While inside, everything printed to stdout and stderr has registered secrets
    redacted (the ``askcache`` command runs inside it: no output of any command shows one)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, _RedactingWriter(sys.stdout))
    sys.stderr = cast(TextIO, _RedactingWriter(sys.stderr))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def describe_profiles(cache_file: CacheFile) -> str:
    """The screen profiles a file replays on as it knows them, one line: the recorded one
    and each learned one (docs/fleet.md, "Screens")."""
    recorded = cache_file.profile
    parts = [f"{recorded or 'unknown'} (recorded, {len(cache_file.trajectory)} steps)"]
    parts += [
        f"{key} (learned {learned.learned_at:%Y-%m-%d %H:%M}, {len(learned.trajectory)} steps)"
        for key, learned in sorted(cache_file.profiles.items())
    ]
    return "screen profiles: " + ", ".join(parts)
