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
  bodies at DEBUG), in the message and in the formatted exception (:class:`RedactingFilter`,
  on each such logger and in the record factory, so a logger made after a secret was
  registered is covered too);
* the message of every :class:`~askcache.foundation.errors.AskCacheError`;
* every cache file written, its versions and proposals
  (:func:`~askcache.cachefile.format.dump_cache_file`: goal, typed text, variants, failure and
  invalidation reasons);
* every run-ledger entry, however it is written (:class:`~askcache.storage.ledger.RunRecord`);
* the HTML pages (:func:`~askcache.cli.html_report.write_page`) and everything the ``askcache``
  command prints (:func:`~askcache.cli.commands.common.emit_json` and the command's output
  streams).

Redaction is a safety net: recording and healing already store secrets as placeholders
(docs/secrets.md).
"""

from __future__ import annotations

import html
import json
import logging
import re
import shlex
import threading
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus

from askcache.foundation.parameters import redacts, replace_values, secret_fragment

__all__ = [
    "TYPED_SECRET_NAME",
    "RedactingFilter",
    "known_secret_count",
    "mark",
    "mask_values",
    "redact",
    "redact_value",
    "register_secrets",
    "register_typed_text",
    "rendered_forms",
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
    says such text is secret (:func:`askcache.foundation.parameters.redacts`), or when it holds part
    of a declared or given secret (:func:`askcache.foundation.parameters.secret_fragment`: a secret
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
    """``text`` with every registered secret value, in every form a writer renders it
    (:func:`rendered_forms`), replaced by ``[secret:name]`` (the longest first;
    placeholders kept whole: :func:`askcache.foundation.parameters.replace_values`).
    The one redaction function: every writer calls it.

    ``typed=False`` leaves typed text registered as a secret (:func:`register_typed_text`,
    and recording's ``typed_<step>``) as it is: cache files are written so. Recording and
    healing already store such text as ``{{secret:typed_<step>}}`` where it must not be
    written, and text a replay types from the file must stay what the file says (a mark
    in its place would be typed instead)."""
    if not _secrets or not text:
        return text
    marks = {
        form: shown
        for anchors, forms in _marks()[typed]
        if all(anchor in text for anchor in anchors)  # else no form of that secret is in it
        for form, shown in forms.items()
    }
    return replace_values(text, marks) if marks else text


_Marks = dict[bool, list[tuple[tuple[str, ...], dict[str, str]]]]
"""Per ``typed`` flag of :func:`redact`, per secret: its anchors (:func:`_anchors`) and the
mark of each of its rendered forms."""

_marks_cache: tuple[int, _Marks] = (-1, {})
"""The marks of the registered secrets in every rendered form (with and without typed text),
and the registry's :data:`_changes` they were built at."""


def _marks() -> _Marks:
    global _marks_cache  # noqa: PLW0603 (a cache of the registry, rebuilt when it changed)
    with _lock:
        built, marks = _marks_cache
        if built != _changes[0]:
            marks = {
                typed: [
                    (_anchors(value), dict.fromkeys(rendered_forms(value), mark(name)))
                    for value, name in _secrets.items()
                    if typed or not _typed(name)
                ]
                for typed in (True, False)
            }
            _marks_cache = (_changes[0], marks)
    return marks


_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")


def _anchors(value: str) -> tuple[str, ...]:
    """The runs of ASCII letters and digits in ``value``, longest first: every rendered form
    holds each of them as it is (no renderer escapes them), so a text missing one holds no
    form of ``value`` and :func:`redact` skips its forms."""
    return tuple(sorted(set(_ALNUM_RUN.findall(value)), key=lambda run: (-len(run), run)))


def rendered_forms(value: str) -> frozenset[str]:
    """``value`` as every writer or printer of askcache, or of a library it logs through,
    renders a string, as it reads inside what they write: as is; Python's ``repr`` (either
    quote, so ``\\'`` where both occur) and ``ascii``, and the ``repr`` of its UTF-8 bytes;
    inside a JSON string (ASCII or not); escaped for HTML (``&#x27;``, ``&#39;``, ``&quot;``,
    ``&#34;``, or only ``&<>``); URL-encoded (``%20`` or ``+`` for a space, ``/`` kept or
    not); shell-quoted (``shlex.quote``'s ``'"'"'``, ``'\\''`` and ``"..."`` styles); and each of
    these inside another (the ``repr`` of an error quoted in a JSON line, or on an HTML
    page). Computed once per secret when the registry changes (:func:`redact`), and by
    :func:`mask_values`."""
    return _forms(value)


@lru_cache(maxsize=4096)
def _forms(value: str) -> frozenset[str]:
    if not value:
        return frozenset()
    once = {render(value) for render in _RENDERERS}
    return frozenset(render(form) for form in once for render in _RENDERERS) | once


def mask_values(text: str, values: Iterable[str], replacement: str = "***") -> str:
    """``text`` with every rendered form (:func:`rendered_forms`) of each of ``values``
    replaced by ``replacement``, the longest first: for secrets that are not registered
    (a ledger URL's password: :mod:`askcache.storage.ledger.open`)."""
    marks = {form: replacement for value in values for form in rendered_forms(value)}
    return replace_values(text, marks) if marks and text else text


def _python_escaped(value: str, *, quote: str | None, ascii_only: bool = False) -> str:
    """``value`` as it reads between the quotes of Python's ``repr`` (``ascii`` with
    ``ascii_only``) when ``quote`` is the quote character (``None``: one it need not
    escape)."""
    escape = ascii if ascii_only else repr
    return "".join("\\" + char if char == quote else escape(char)[1:-1] for char in value)


def _bytes_escaped(value: str) -> str:
    """``value``'s UTF-8 bytes as they read inside ``repr(bytes)`` (both quotes escaped the
    way Python would choose)."""
    return repr(value.encode("utf-8") + b"'\"")[2:-4]


def _shell_single(value: str) -> str:
    """``value`` inside ``'...'`` with each quote written ``'\\''``."""
    return value.replace("'", "'\\''")


def _shell_double(value: str) -> str:
    """``value`` inside a shell's ``"..."``."""
    return re.sub(r'([\\"$`])', r"\\\1", value)


def _html_numeric(value: str) -> str:
    """``value`` escaped for HTML with decimal quotes (``&#39;``, ``&#34;``, as markupsafe
    and Jinja write them)."""
    return html.escape(value, quote=False).replace("'", "&#39;").replace('"', "&#34;")


_RENDERERS: tuple[Callable[[str], str], ...] = (
    lambda value: value,
    lambda value: _python_escaped(value, quote="'"),
    lambda value: _python_escaped(value, quote=None),
    lambda value: _python_escaped(value, quote="'", ascii_only=True),
    lambda value: _python_escaped(value, quote=None, ascii_only=True),
    _bytes_escaped,
    lambda value: json.dumps(value)[1:-1],
    lambda value: json.dumps(value, ensure_ascii=False)[1:-1],
    html.escape,
    lambda value: html.escape(value, quote=False),
    _html_numeric,
    lambda value: quote(value, safe=""),
    quote,
    quote_plus,
    lambda value: shlex.quote(value).removeprefix("'").removesuffix("'"),
    _shell_single,
    _shell_double,
)
"""How a string is rendered inside what a writer or printer writes (:func:`rendered_forms`),
each without the quotes around it (they stay as they are around the mark)."""


def redact_value(value: Any, *, typed: bool = True) -> Any:
    """``value`` with :func:`redact` applied to every string nested in it."""
    if isinstance(value, str):
        return redact(value, typed=typed)
    if isinstance(value, dict):
        return {key: redact_value(item, typed=typed) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item, typed=typed) for item in value]
    return value


_REDACTED_AT = "askcache_redacted_at"
"""The record attribute saying which state of the registry a record was redacted with (the
record factory and the loggers' filters redact each record once)."""


class RedactingFilter(logging.Filter):
    """A logging filter that redacts registered secrets from a record before it is emitted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _secrets or getattr(record, _REDACTED_AT, None) == _changes[0]:
            return True  # nothing to hide, or redacted already with the same secrets
        setattr(record, _REDACTED_AT, _changes[0])
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


_factory_lock = threading.Lock()
_factory_installed = [False]


def _install_record_factory() -> None:
    """Redact every record of :data:`_PROTECTED_LOGGERS` as it is made (chaining the factory
    in place), also those of a logger made after the filters were put on: a module imported
    later, or the SDK's loggers created on first use."""
    with _factory_lock:
        if _factory_installed[0]:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            if _secrets and _protected(record.name):
                _FILTER.filter(record)
            return record

        logging.setLogRecordFactory(factory)
        _factory_installed[0] = True


def _protected(name: str) -> bool:
    return any(name == family or name.startswith(f"{family}.") for family in _PROTECTED_LOGGERS)


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
    _install_record_factory()
