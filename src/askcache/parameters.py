"""Cache parameters: values recorded as ``{{name}}`` placeholders and filled in at replay.

Recording turns each given value into its placeholder (:func:`parameterize`); replay finds
which placeholders a trajectory needs (:func:`placeholders_in`) and fills them in
(:func:`substitute`). All three walk nested JSON values: strings, lists and dicts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["PLACEHOLDER", "parameterize", "placeholders_in", "substitute"]

PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")
"""A ``{{name}}`` placeholder; the name is an identifier."""


def parameterize(value: Any, parameters: Mapping[str, str]) -> Any:
    """Replace every occurrence of each parameter's value by ``{{name}}`` (longest value first)."""
    if isinstance(value, str):
        for name, sample in sorted(parameters.items(), key=lambda item: -len(item[1])):
            value = value.replace(sample, f"{{{{{name}}}}}")
        return value
    if isinstance(value, dict):
        return {key: parameterize(item, parameters) for key, item in value.items()}
    if isinstance(value, list):
        return [parameterize(item, parameters) for item in value]
    return value


def substitute(value: Any, values: Mapping[str, str]) -> Any:
    """Fill ``{{name}}`` placeholders from ``values``; unknown names are left as they are."""
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {key: substitute(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, values) for item in value]
    return value


def placeholders_in(values: Iterable[Any]) -> set[str]:
    """Names of the placeholders in strings nested anywhere in ``values``."""
    found: set[str] = set()
    for value in values:
        if isinstance(value, str):
            found.update(PLACEHOLDER.findall(value))
        elif isinstance(value, dict):
            found |= placeholders_in(value.values())
        elif isinstance(value, list | tuple):
            found |= placeholders_in(value)
    return found
