"""A test's trajectory name: made from its node id, safe as a file name, free of secrets.

``tests/test_form.py::TestForm::test_fill[ada-1]`` becomes ``test_form/TestForm.test_fill-ada-1``
(``.json`` appended): the module's name as a folder, the class and the function joined by
dots, then the parametrised id after a ``-`` (a Python name holds none, so the two never run
together). The id keeps letters, digits, ``_``, ``.`` and ``-``; any other run of
characters (a ``/``, a space, brackets, a character pytest escaped) becomes one ``-``, and
then, since two ids could now give the same name, the name ends with 8 hex digits of a hash
of the id (after its secrets were masked, so the hash says nothing of them either). A
declared secret's value never reaches the name: each is replaced by ``[secret:NAME]``
before anything else (:func:`~askcache.foundation.redaction.redact`), which the rule above
turns into ``secret-NAME``. A name longer than :data:`MAX_STEM_BYTES` is cut and given the
hash too.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

__all__ = ["MAX_STEM_BYTES", "safe_part", "trajectory_stem"]

MAX_STEM_BYTES = 200
"""Longest name kept whole (a file system allows 255 bytes per part, ``.json`` and the
versions' suffixes included)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def safe_part(text: str) -> str:
    """``text`` with every run of characters other than letters, digits, ``_``, ``.`` and
    ``-`` replaced by one ``-``, no ``--``, and no ``-`` or ``.`` at either end (never
    hidden)."""
    return re.sub(r"-{2,}", "-", _UNSAFE.sub("-", text)).strip("-.")


def trajectory_stem(
    names: Sequence[str], params: str | None, secrets: Mapping[str, str] | None = None
) -> str:
    """The name of a test's trajectory, without ``.json`` and its folder.

    Args:
        names: The test's classes and function, outermost first (``["TestForm",
            "test_fill"]``).
        params: Its parametrised id (``ada-1``), ``None`` when not parametrised.
        secrets: Secret values to mask (name -> value), beside those already registered
            (:func:`~askcache.foundation.redaction.register_secrets`); they are registered.

    >>> trajectory_stem(["test_fill"], "ada-1")
    'test_fill-ada-1'
    """
    from askcache.foundation.redaction import redact, register_secrets

    if secrets:
        register_secrets(secrets)
    base = ".".join(safe_part(name) or "_" for name in names)
    if params is None:
        stem, masked = base, base
    else:
        masked = redact(params)
        safe = safe_part(masked)
        stem = f"{base}-{safe}" if safe else base
        if safe != masked:
            stem = f"{stem}-{_digest(masked)}"
    if len(stem.encode("utf-8")) > MAX_STEM_BYTES:
        stem = f"{stem[: MAX_STEM_BYTES - 20].rstrip('-.')}-{_digest(f'{base}[{masked}]')}"
    return stem
