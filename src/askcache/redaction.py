"""Secrets never stored: the values of secret parameters are redacted wherever askcache writes.

A secret value becomes known to askcache in three ways: declared when recording
(``CacheWritingSettings.secret_parameters``); given by the caller when replaying a file
whose typed text holds ``{{secret:name}}``; and typed by the model (or a replay) while
``CacheWritingSettings.redact_typed_text`` says such text is secret, or when it holds part
of a known secret (:func:`register_typed_text`, called before the keystrokes are sent).
Either way it is registered here, for the life of the process, and from then on
:func:`redact`, the one redaction function, replaces it by ``[secret:name]``. Every writer
calls it:

* every record logged by an ``askcache`` or ``anthropic`` logger (the SDK logs request
  bodies at DEBUG), in the message and in the formatted exception (:class:`RedactingFilter`);
* the message of every :class:`~askcache.errors.AskCacheError`;
* every cache file written, its versions and proposals
  (:func:`~askcache.cachefile.format.dump_cache_file`: goal, typed text, variants, failure and
  invalidation reasons);
* every run-ledger entry, however it is written (:class:`~askcache.storage.ledger.RunRecord`);
* the HTML pages (:func:`~askcache.cli.report.write_page`) and everything the ``askcache``
  command prints (:func:`~askcache.cli.commands.common.emit_json` and the command's output
  streams).

Redaction is a safety net: recording and healing already store secrets as placeholders
(docs/secrets.md).
"""

from __future__ import annotations

import html
import json
import logging
import threading
from collections.abc import Mapping
from typing import Any

from askcache.parameters import redacts, replace_values, secret_fragment

__all__ = [
    "TYPED_SECRET_NAME",
    "RedactingFilter",
    "known_secret_count",
    "mark",
    "redact",
    "redact_value",
    "register_secrets",
    "register_typed_text",
]

TYPED_SECRET_NAME = "typed"
"""The name in the mark of typed text registered by :func:`register_typed_text`
(``[secret:typed]``)."""

_PROTECTED_LOGGERS = ("askcache", "anthropic")
"""Logger families whose records are redacted: askcache's own, and the SDK's, whose DEBUG
records hold the request bodies (the conversation, typed text included)."""

_lock = threading.Lock()
_secrets: dict[str, str] = {}
"""Secret value -> its parameter's name."""
_changes = [0]
"""How many times :data:`_secrets` changed (for the cache of :func:`redact`'s marks)."""


def mark(name: str) -> str:
    """What a secret value is replaced with."""
    return f"[secret:{name}]"


def register_secrets(values: Mapping[str, str]) -> None:
    """Remember ``name -> value`` secrets so that they are redacted from now on."""
    with _lock:
        for name, value in values.items():
            if value:
                _secrets[value] = name
        _changes[0] += 1
    _protect_loggers()


def register_typed_text(text: object, mode: str) -> bool:
    """Register ``text`` (about to be typed) as a secret when ``redact_typed_text=mode``
    says such text is secret (:func:`askcache.parameters.redacts`), or when it holds part
    of a declared or given secret (:func:`askcache.parameters.secret_fragment`: a secret
    typed in pieces); True when it did. Call it before the text is typed, so that no log or error
    of the typing shows it."""
    if not isinstance(text, str) or not text:
        return False
    with _lock:  # the secrets declared or given, not typed text registered before
        known = {name: value for value, name in _secrets.items() if not _typed(name)}
    if not (redacts(text, mode) or secret_fragment(text, known) is not None):
        return False
    with _lock:
        _secrets.setdefault(text, TYPED_SECRET_NAME)
        _changes[0] += 1
    _protect_loggers()
    return True


def _typed(name: str) -> bool:
    """True for the name of typed text registered as a secret (here, or by recording:
    ``typed_<step>``)."""
    return name == TYPED_SECRET_NAME or name.startswith(f"{TYPED_SECRET_NAME}_")


def known_secret_count() -> int:
    """How many secret values are registered (for tests and diagnostics; never the values)."""
    return len(_secrets)


def redact(text: str, *, typed: bool = True) -> str:
    """``text`` with every registered secret value replaced by ``[secret:name]`` (the
    longest value first; placeholders kept whole: :func:`askcache.parameters.replace_values`).
    The one redaction function: every writer calls it.

    ``typed=False`` leaves typed text registered as a secret (:func:`register_typed_text`,
    and recording's ``typed_<step>``) as it is: cache files are written so. Recording and
    healing already store such text as ``{{secret:typed_<step>}}`` where it must not be
    written, and text a replay types from the file must stay what the file says (a mark
    in its place would be typed instead)."""
    if not _secrets or not text:
        return text
    return replace_values(text, _marks()[typed])


_marks_cache: tuple[int, dict[bool, dict[str, str]]] = (-1, {})
"""The marks of the registered secrets in every written form (with and without typed text),
and the registry's :data:`_changes` they were built at."""


def _marks() -> dict[bool, dict[str, str]]:
    global _marks_cache  # noqa: PLW0603 (a cache of the registry, rebuilt when it changed)
    with _lock:
        built, marks = _marks_cache
        if built != _changes[0]:
            marks = {
                typed: {
                    form: mark(name)
                    for value, name in _secrets.items()
                    if typed or not _typed(name)
                    for form in _written_forms(value)
                }
                for typed in (True, False)
            }
            _marks_cache = (_changes[0], marks)
    return marks


def _written_forms(value: str) -> set[str]:
    """``value`` as it reads in the text writers produce: as is, escaped for HTML, and
    escaped inside a JSON string (ASCII or not)."""
    return {
        value,
        html.escape(value),
        html.escape(value, quote=False),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
    }


def redact_value(value: Any, *, typed: bool = True) -> Any:
    """``value`` with :func:`redact` applied to every string nested in it."""
    if isinstance(value, str):
        return redact(value, typed=typed)
    if isinstance(value, dict):
        return {key: redact_value(item, typed=typed) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item, typed=typed) for item in value]
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that redacts registered secrets from a record before it is emitted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _secrets:
            return True
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_FILTER = RedactingFilter()


def _protect_loggers() -> None:
    """Put the filter on every logger of :data:`_PROTECTED_LOGGERS` (a logger's filters see
    only its own records, so each module's logger gets it)."""
    manager = logging.Logger.manager
    names = [
        *_PROTECTED_LOGGERS,
        *(
            name
            for name in list(manager.loggerDict)
            if name.startswith(tuple(f"{family}." for family in _PROTECTED_LOGGERS))
        ),
    ]
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
