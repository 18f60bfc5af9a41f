"""What a replay saved, in words: never a negative saving.

A replay can cost more than it saved: one that handed back and let the model finish made
more model calls than replaying those steps saved, and a replay that waited for a slow
screen can take longer than the recording did. Each quantity is then said the other way
round ("took 7.6 s longer than the recording"), never printed as "saved -7.6 s". Every place
that prints savings (the demo, ``askcache stats``, the report) words them here.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["saving_words"]


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _listed(parts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def saving_words(
    model_calls: int,
    tokens: int,
    seconds: float | None = None,
    *,
    dollars: str | None = None,
    than: str = "the recording",
) -> str:
    """What was saved, and what went the other way, in words.

    Args:
        model_calls: Model calls saved (negative: made more than ``than``).
        tokens: Tokens saved (negative: used more).
        seconds: Seconds saved (negative: took longer); ``None``: not known, not said.
        dollars: The tokens' price, already formatted (``$0.04``), said after them.
        than: What the run is compared with.

    >>> saving_words(5, 14_328, -7.6)
    'saved 5 model calls and 14,328 tokens; took 7.6 s longer than the recording'
    >>> saving_words(-2, -3_000, 1.25)
    'saved 1.2 s; made 2 more model calls and used 3,000 more tokens than the recording'
    """
    price = f" ({dollars})" if dollars else ""
    saved: list[str] = []
    worse: list[str] = []
    if model_calls >= 0:
        saved.append(_plural(model_calls, "model call"))
    else:
        worse.append(f"made {-model_calls:,} more model call{'' if model_calls == -1 else 's'}")
    if tokens >= 0:
        saved.append(f"{_plural(tokens, 'token')}{price}")
    else:
        worse.append(f"used {-tokens:,} more tokens{price}")
    if seconds is not None:
        if round(seconds, 1) >= 0:
            saved.append(f"{max(seconds, 0.0):,.1f} s")
        else:
            worse.append(f"took {-seconds:,.1f} s longer")
    said = []
    if saved:
        said.append(f"saved {_listed(saved)}")
    if worse:
        said.append(f"{_listed(worse)} than {than}")
    return "; ".join(said)
