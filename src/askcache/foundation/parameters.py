"""Cache parameters: values recorded as ``{{name}}`` placeholders and filled in at replay.

Placeholders live only where text goes: in the text of ``type`` steps and in the goal. Never
in action names, keys, coordinates or anything else, so a parameter value can change what
is typed but never which action runs or where (the loader refuses a file with a placeholder
anywhere else).

A *secret* parameter is written ``{{secret:name}}``: its value is never stored (not in the
file, its failures, logs or reports) and must come from the caller at replay.

Recording turns each given value into its placeholder (:func:`parameterize`,
:func:`parameterize_input`); replay finds which placeholders a trajectory needs
(:func:`placeholders_in`) and fills them in (:func:`substitute`), literally: a value that
itself looks like a placeholder is typed as it is.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any, Literal, TypeGuard

from askcache.foundation.limits import MAX_PARAMETER_CHARS

__all__ = [
    "PARAMETER_NAME",
    "PLACEHOLDER",
    "SECRET_DESCRIPTION",
    "SECRET_FRAGMENT_CHARS",
    "SECRET_PREFIX",
    "TypedTextRedaction",
    "literal_text",
    "looks_like_password",
    "parameter_value_problem",
    "parameterize",
    "parameterize_input",
    "placeholder",
    "placeholders_in",
    "redacts",
    "replace_values",
    "secret_fragment",
    "secret_placeholders_in",
    "stricter_redaction",
    "substitute",
    "text_problem",
    "unsafe_typed_text",
]

PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
"""A parameter's name: an identifier of at most 64 characters."""

PLACEHOLDER = re.compile(r"\{\{(secret:)?([A-Za-z_][A-Za-z0-9_]*)\}\}")
"""A ``{{name}}`` or ``{{secret:name}}`` placeholder; the name is an identifier."""

SECRET_PREFIX = "secret:"
"""Marks a secret parameter's placeholder: ``{{secret:password}}``."""

SECRET_DESCRIPTION = f"{SECRET_PREFIX} given at replay, never stored"
"""A secret parameter's description in ``cache_parameters``."""

SECRET_FRAGMENT_CHARS = 4
"""Typed text sharing this many characters in a row with a secret's value holds part of it
(:func:`secret_fragment`)."""

_ALLOWED_CONTROLS = frozenset("\n\t")

TypedTextRedaction = Literal["off", "password_like", "all"]
"""Which typed text is stored as a secret (``CacheWritingSettings.redact_typed_text``, and a
file's ``metadata.redact_typed_text``), from the least strict to the strictest."""

_REDACTION_ORDER: tuple[TypedTextRedaction, ...] = ("off", "password_like", "all")


def placeholder(name: str, *, secret: bool = False) -> str:
    """The placeholder text for ``name``: ``{{name}}`` or ``{{secret:name}}``."""
    return "{{" + (SECRET_PREFIX if secret else "") + name + "}}"


def text_problem(text: str, *, allow: frozenset[str] = _ALLOWED_CONTROLS) -> str | None:
    """Why ``text`` may not be typed (a control character other than ``allow``, a lone
    surrogate), or ``None``. Names the character by position and code, never shows the text."""
    for index, char in enumerate(text):
        category = unicodedata.category(char)
        if (category == "Cc" and char not in allow) or category == "Cs":
            return f"character {index} is U+{ord(char):04X}, a control character"
    return None


def parameter_value_problem(value: object) -> str | None:
    """Why ``value`` may not be a parameter value, or ``None``; never quotes the value."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value:
        return "is empty"
    if len(value) > MAX_PARAMETER_CHARS:
        return f"is {len(value)} characters long; the limit is {MAX_PARAMETER_CHARS}"
    return text_problem(value, allow=frozenset())


def replace_values(text: str, marks: Mapping[str, str]) -> str:
    """``text`` with each occurrence of a key of ``marks`` replaced by its value: the one
    replacement behind :func:`parameterize` and :func:`askcache.foundation.redaction.redact`.

    The longest key first, so a value holding a shorter one is replaced whole. Placeholders
    (``{{name}}``, ``{{secret:name}}``), redaction marks (``[secret:name]``) and inline
    images (``data:image/...;base64,...``) in ``text`` are kept whole, so a short value never
    breaks one, and a mark put in is never replaced again (a key that itself holds one is
    replaced everywhere). Empty keys are ignored.
    """
    for key in sorted((key for key in marks if key), key=lambda key: (-len(key), key)):
        if key not in text:
            continue
        mark = marks[key]
        if _PROTECTED.search(key):
            text = text.replace(key, mark)
        else:
            text = _key_pattern(key).sub(_keep_protected(mark), text)
    return text


def _keep_protected(mark: str) -> Callable[[re.Match[str]], str]:
    return lambda match: match.group(1) or mark


_PROTECTED = re.compile(
    r"\{\{(?:secret:)?[A-Za-z_][A-Za-z0-9_]*\}\}|\[secret:[A-Za-z_][A-Za-z0-9_]*\]"
    r"|data:image/[a-z]+;base64,[A-Za-z0-9+/=]+"
)
"""What :func:`replace_values` keeps whole: placeholders, redaction marks, and the images an
HTML page inlines (``data:image/png;base64,...``: a short secret's characters occur in
their encoding by chance, and replacing them would break the image, not hide a secret)."""


@lru_cache(maxsize=256)
def _key_pattern(key: str) -> re.Pattern[str]:
    return re.compile(f"({_PROTECTED.pattern})|{re.escape(key)}")


def parameterize(
    text: str, parameters: Mapping[str, str], secrets: Mapping[str, str] | None = None
) -> str:
    """``text`` with each value replaced by its placeholder, longest value first; secret
    values become ``{{secret:name}}`` (:func:`replace_values`)."""
    marks = {value: placeholder(name) for name, value in parameters.items()}
    marks.update({value: placeholder(name, secret=True) for name, value in (secrets or {}).items()})
    return replace_values(text, marks)


def literal_text(text: str) -> str:
    """``text`` without its placeholders: what a stored typed text holds in clear."""
    return PLACEHOLDER.sub("", text)


def secret_fragment(text: str, secrets: Mapping[str, str]) -> str | None:
    """The name of a secret whose value ``text`` holds part of (at least
    :data:`SECRET_FRAGMENT_CHARS` characters of it in a row, or all of it), or ``None``.
    Used on the literal text a heal would store (:func:`literal_text`): a secret typed in
    pieces, or with a typo, is not written either."""
    run = SECRET_FRAGMENT_CHARS
    for name, value in secrets.items():
        if value and value in text:
            return name
        pieces = (value[i : i + run] for i in range(len(value) - run + 1))
        if any(piece in text for piece in pieces):
            return name
    return None


def parameterize_input(
    action: str | None,
    arguments: dict[str, Any],
    parameters: Mapping[str, str],
    secrets: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A step's input with parameter values replaced in its typed text only.

    ``action`` is the computer action (``None`` for another tool); only a ``type`` step's
    ``text`` is parameterized. Everything else is returned unchanged.
    """
    text = arguments.get("text")
    if action != "type" or not isinstance(text, str):
        return dict(arguments)
    return {**arguments, "text": parameterize(text, parameters, secrets)}


def substitute(value: Any, values: Mapping[str, str]) -> Any:
    """Fill placeholders from ``values`` (keyed by name, secret or not), in one pass.

    A string is filled in everywhere; a dict (a step's input) only in its ``text`` string,
    the one place a loaded file may hold placeholders. Anything else is returned as it is.
    Unknown names are left as they are; a value is inserted literally, never re-expanded.
    """
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: values.get(m.group(2), m.group(0)), value)
    if isinstance(value, dict):
        text = value.get("text")
        if isinstance(text, str):
            return {**value, "text": substitute(text, values)}
        return dict(value)
    return value


def unsafe_typed_text(stored: str, secrets: Mapping[str, str], mode: str) -> str | None:
    """Why typed text may not be stored as ``stored`` (the text with its parameter values
    already made placeholders), or ``None``: its literal part holds part of a secret's
    value (:func:`secret_fragment`), or ``redact_typed_text=mode`` makes it secret
    (:func:`redacts`; whitespace alone is not). Recording and healing then store it as a
    secret of its own, ``{{secret:typed_<step>}}``. Never quotes the text."""
    literal = literal_text(stored)
    leaked = secret_fragment(literal, secrets)
    if leaked is not None:
        return f"part of the value of the secret {leaked!r}"
    if redacts(literal.strip(), mode):
        return f"text that is no parameter's value, with redact_typed_text={mode!r}"
    return None


def _strings(values: Iterable[Any]) -> Iterable[str]:
    for value in values:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            yield from _strings(value.values())
        elif isinstance(value, list | tuple):
            yield from _strings(value)


def placeholders_in(values: Iterable[Any]) -> set[str]:
    """Names of the placeholders (secret or not) in strings nested anywhere in ``values``."""
    return {m.group(2) for text in _strings(values) for m in PLACEHOLDER.finditer(text)}


def secret_placeholders_in(values: Iterable[Any]) -> set[str]:
    """Names of the secret placeholders (``{{secret:name}}``) nested anywhere in ``values``."""
    return {
        m.group(2) for text in _strings(values) for m in PLACEHOLDER.finditer(text) if m.group(1)
    }


def looks_like_password(text: str) -> bool:
    """True for typed text that looks like a password: 8 to 128 characters, no whitespace,
    and at least three of lower case, upper case, digits and symbols. A heuristic for
    ``CacheWritingSettings.redact_typed_text="password_like"``."""
    if not 8 <= len(text) <= 128 or any(char.isspace() for char in text):
        return False
    classes = [
        any(c.islower() for c in text),
        any(c.isupper() for c in text),
        any(c.isdigit() for c in text),
        any(not c.isalnum() for c in text),
    ]
    return sum(classes) >= 3


def redacts(text: object, mode: str) -> TypeGuard[str]:
    """True when typed ``text`` is to be stored as a secret under ``redact_typed_text=mode``
    (``off``, ``password_like`` or ``all``)."""
    if not isinstance(text, str) or not text:
        return False
    return mode == "all" or (mode == "password_like" and looks_like_password(text))


def stricter_redaction(*modes: TypedTextRedaction | None) -> TypedTextRedaction:
    """The strictest of ``modes`` (``None``, a policy nobody stated, counts as ``off``):
    what a trajectory built under several policies (the file's and the run's) applies."""
    known = [mode for mode in modes if mode is not None]
    return max(known, key=_REDACTION_ORDER.index, default="off")
