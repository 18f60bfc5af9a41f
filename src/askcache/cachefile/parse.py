"""Reading a cache file: strict and total.

:func:`parse_cache_file` checks the documented limits (:mod:`askcache.foundation.limits`: size,
nesting, lengths, numbers) before and while parsing, rejects unknown keys (naming the closest known
one), migrates older versions, rejects newer ones, and checks every step
(:func:`askcache.cachefile.checks.check_cache_file`: known actions, hashes of the declared size,
thresholds below the bit count, coordinates on the recorded screen, placeholders only in typed
text). Every problem is one :class:`~askcache.foundation.errors.CacheFileCorruptError` (or its
subclass :class:`~askcache.foundation.errors.CacheFileLimitError`) naming the file, the field and
the step; no other exception escapes, whatever the input.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any

from pydantic import AliasChoices, BaseModel, ValidationError

from askcache.cachefile.checks import check_cache_file
from askcache.cachefile.format import FORMAT_VERSION, LEGACY_HASH_SIZE, CacheFile
from askcache.foundation import limits
from askcache.foundation.errors import (
    CacheFileCorruptError,
    CacheFileLimitError,
    UnsupportedCacheVersionError,
)

__all__ = ["parse_cache_file"]


def _migrate_v0(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (the seed's format) had no version and no hash_size; 8 was fixed."""
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        visual = metadata.get("visual_validation")
        if isinstance(visual, dict):
            visual.setdefault("hash_size", LEGACY_HASH_SIZE)
    return {**data, "version": 1}


def _migrate_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 had no detail hash; its files read unchanged as version 2 without one."""
    return {**data, "version": 2}


_LEGACY_STATS = ("execution_attempts", "successes", "failures", "last_executed_at")


def _migrate_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 kept replay counts in ``metadata``; they move to ``metadata.legacy_stats``
    (and from there to the run ledger on the first replay). No effects, no end state, no
    tone, target or blur: its steps are checked exactly as recorded."""
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        metadata = dict(metadata)
        legacy = {key: metadata.pop(key) for key in _LEGACY_STATS if key in metadata}
        if legacy:
            metadata["legacy_stats"] = legacy
        data = {**data, "metadata": metadata}
    return {**data, "version": 3}


_MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: _migrate_v0,
    1: _migrate_v1,
    2: _migrate_v2,
}


def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _step_of(loc: tuple[int | str, ...]) -> int | None:
    if len(loc) > 1 and loc[0] == "trajectory" and isinstance(loc[1], int):
        return loc[1]
    return None


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _too_deep(text: str, limit: int) -> bool:
    """True when arrays and objects in JSON ``text`` nest deeper than ``limit`` (strings
    skipped)."""
    depth = 0
    for char in _NOT_BRACKET.sub("", _STRING.sub('""', text)):
        if char in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _reject_constant(value: str) -> Any:
    raise ValueError(f"{value} is not a number a cache file may hold")


def _finite_float(value: str) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{value} is too large a number")
    return number


def _loc_text(loc: tuple[int | str, ...]) -> str:
    return _field_path(loc) or "the top level"


def _check_values(value: Any, loc: tuple[int | str, ...], name: str) -> None:
    """Enforce the limits on every value: lengths, sizes, numbers, valid Unicode."""
    problem = None
    if isinstance(value, str):
        if len(value) > limits.MAX_STRING_CHARS:
            problem = f"a string of {len(value)} characters; the limit is {limits.MAX_STRING_CHARS}"
        else:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                problem = "a string with a lone surrogate (\\ud800-\\udfff): not valid Unicode"
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        if abs(value) > limits.MAX_COUNT:
            problem = f"the number {value:.3g} is larger than {limits.MAX_COUNT}"
    elif isinstance(value, list):
        if len(value) > limits.MAX_LIST_ITEMS:
            problem = f"a list of {len(value)} items; the limit is {limits.MAX_LIST_ITEMS}"
        else:
            for index, item in enumerate(value):
                _check_values(item, (*loc, index), name)
    elif isinstance(value, dict):
        if len(value) > limits.MAX_OBJECT_KEYS:
            problem = f"an object with {len(value)} keys; the limit is {limits.MAX_OBJECT_KEYS}"
        else:
            for key, item in value.items():
                if len(key) > 256:
                    problem = f"a key of {len(key)} characters"
                    break
                _check_values(key, loc, name)
                _check_values(item, (*loc, key), name)
    if problem is not None:
        where = _loc_text(loc)
        raise CacheFileLimitError(
            name, f"{where}: {problem}", field=_field_path(loc) or None, step=_step_of(loc)
        )


def _nested_model(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model inside ``annotation`` (``X``, ``X | None``, ``list[X]``) and whether listed."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    origin = typing.get_origin(annotation)
    if origin is list:
        inner, _ = _nested_model(typing.get_args(annotation)[0])
        return inner, True
    if isinstance(annotation, types.UnionType) or origin is typing.Union:
        for arg in typing.get_args(annotation):
            found = _nested_model(arg)
            if found[0] is not None:
                return found
    return None, False


def _field_keys(info: Any, field_name: str) -> list[str]:
    keys = [field_name]
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        keys += [choice for choice in alias.choices if isinstance(choice, str)]
    elif isinstance(alias, str):
        keys.append(alias)
    return keys


@functools.cache
def _model_keys(model: type[BaseModel]) -> dict[str, tuple[type[BaseModel] | None, bool]]:
    """Every key ``model`` reads (aliases included) -> the model nested under it, if any."""
    return {
        key: _nested_model(info.annotation)
        for field, info in model.model_fields.items()
        for key in _field_keys(info, field)
    }


def _check_keys(data: Any, model: type[BaseModel], loc: tuple[int | str, ...], name: str) -> None:
    """Reject keys ``model`` does not know, naming the closest known key."""
    if not isinstance(data, dict):
        return  # the model's validation reports the wrong type
    fields = _model_keys(model)
    for key in data:
        if key not in fields:
            known = sorted(model.model_fields)
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            where = _field_path((*loc, key))
            raise CacheFileCorruptError(
                name,
                f"{where}: unknown key{hint}; known keys of {model.__name__}: {', '.join(known)}",
                field=where,
                step=_step_of((*loc, key)),
            )
    for key, value in data.items():
        inner, listed = fields[key]
        if inner is None:
            continue
        if listed and isinstance(value, list):
            for index, item in enumerate(value):
                _check_keys(item, inner, (*loc, key, index), name)
        elif not listed:
            _check_keys(value, inner, (*loc, key), name)


def _load_json(raw: bytes | str, name: str) -> Any:
    size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
    if size > limits.MAX_FILE_BYTES:
        raise CacheFileLimitError(
            name, f"the file is {size:,} bytes; the limit is {limits.MAX_FILE_BYTES:,}"
        )
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise CacheFileCorruptError(name, f"not UTF-8 text ({exc.reason})") from exc
    if not text.strip():
        raise CacheFileCorruptError(name, "the file is empty")
    if _too_deep(text, limits.MAX_NESTING):
        raise CacheFileLimitError(
            name, f"arrays and objects nested deeper than the limit, {limits.MAX_NESTING}"
        )
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        detail = f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        if text.lstrip().startswith("{") and not text.rstrip().endswith("}"):
            detail += "; the file looks truncated"
        raise CacheFileCorruptError(name, detail) from exc
    except (ValueError, RecursionError) as exc:  # huge integers, NaN, Infinity
        raise CacheFileLimitError(name, f"not a JSON document askcache reads: {exc}") from exc


def parse_cache_file(raw: bytes | str, name: str) -> CacheFile:
    """Parse, check and migrate the text of a cache file: strict and total.

    Raises:
        CacheFileLimitError: a documented limit is exceeded (size, nesting, lengths).
        CacheFileCorruptError: not JSON, truncated, an unknown key, a field missing or
            wrong, a step that could not be replayed as written.
        UnsupportedCacheVersionError: written by a newer format version.
    """
    data = _load_json(raw, name)
    if not isinstance(data, dict):
        raise CacheFileCorruptError(name, f"top level is {type(data).__name__}, expected object")
    _check_values(data, (), name)
    version = data.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise CacheFileCorruptError(
            name, f"version: expected a whole number, got {version!r}", field="version"
        )
    if version > FORMAT_VERSION:
        raise UnsupportedCacheVersionError(name, version, FORMAT_VERSION)
    original = version
    while version < FORMAT_VERSION:
        data = _MIGRATIONS[version](data)
        version += 1
    _check_keys(data, CacheFile, (), name)  # after migrating: old keys have moved
    try:
        cache_file = CacheFile.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        problems = "; ".join(f"{_field_path(err['loc'])}: {err['msg']}" for err in errors[:5])
        more = exc.error_count() - 5
        raise CacheFileCorruptError(
            name,
            problems + (f" (and {more} more)" if more > 0 else ""),
            field=_field_path(errors[0]["loc"]) or None,
            step=_step_of(errors[0]["loc"]),
        ) from exc
    cache_file.version = original
    check_cache_file(cache_file, name)
    return cache_file
