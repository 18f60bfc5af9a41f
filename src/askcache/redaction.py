"""Secrets never stored: the values of secret parameters are redacted wherever askcache writes.

A secret value becomes known to askcache in two ways: declared when recording
(``CacheWritingSettings.secret_parameters``) and given by the caller when replaying a file
whose typed text holds ``{{secret:name}}``. Either way it is registered here, for the life of
the process, and from then on:

* every record logged by an ``askcache`` logger has it replaced by ``[secret:name]``, in the
  message and in the formatted exception;
* every cache file written has it replaced in its free text (goal, typed text, failure
  reasons, invalidation reason);
* :func:`redact` does the same for any text (reports, ledgers, messages).

Redaction is a safety net: recording already stores secrets as placeholders.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

__all__ = [
    "RedactingFilter",
    "known_secret_count",
    "mark",
    "redact",
    "redact_value",
    "register_secrets",
]

_lock = threading.Lock()
_secrets: dict[str, str] = {}
"""Secret value -> its parameter's name."""


def mark(name: str) -> str:
    """What a secret value is replaced with."""
    return f"[secret:{name}]"


def register_secrets(values: Mapping[str, str]) -> None:
    """Remember ``name -> value`` secrets so that they are redacted from now on."""
    with _lock:
        for name, value in values.items():
            if value:
                _secrets[value] = name
    _protect_loggers()


def known_secret_count() -> int:
    """How many secret values are registered (for tests and diagnostics; never the values)."""
    return len(_secrets)


def redact(text: str) -> str:
    """``text`` with every registered secret value replaced by ``[secret:name]``."""
    if not _secrets or not text:
        return text
    with _lock:
        pairs = sorted(_secrets.items(), key=lambda item: -len(item[0]))
    for value, name in pairs:
        if value in text:
            text = text.replace(value, mark(name))
    return text


def redact_value(value: Any) -> Any:
    """``value`` with :func:`redact` applied to every string nested in it."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item) for item in value]
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
    """Put the filter on every ``askcache`` logger (a logger's filters see only its own
    records, so each module's logger gets it)."""
    manager = logging.Logger.manager
    names = ["askcache", *(n for n in list(manager.loggerDict) if n.startswith("askcache."))]
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
