"""``askcache stats [NAME]``: what the replays did and saved, from the run ledger's summaries
(one per trajectory, never a scan of the runs; :mod:`askcache.storage.ledger.summary`).

Per trajectory and in total: replays, how many completed (the hit rate), hand-backs, the
model calls and tokens spent after hand-backs, and the calls, tokens, seconds and dollars
the replays saved. Dollars come from :mod:`askcache.cli.prices` (list prices; ``--price``
overrides); the saved tokens are priced as input tokens, a lower bound.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from askcache.cli.commands.common import (
    EXIT_OK,
    emit_json,
    location,
    open_run_ledger,
    open_storage,
    resolve_name,
)
from askcache.cli.prices import PRICES_AS_OF, ModelPrice, parse_price, price_for
from askcache.cli.progress import ProgressBar
from askcache.cli.savings import saving_words
from askcache.storage.ledger import RunRecord, TrajectorySummary
from askcache.storage.ledger.summary import fold_all

__all__ = [
    "TrajectoryStats",
    "add_price_argument",
    "add_stats_command",
    "parse_price_argument",
    "run_stats",
    "stats_json",
    "stats_line",
    "stats_of",
    "summarize",
]


class TrajectoryStats(BaseModel):
    """What the ledger says about one trajectory (or all of them)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    trajectory: str
    """Cache file name, or ``(all)``."""
    runs: int = 0
    """Replays."""
    completed: int = 0
    """Replays that ran every step (``completed`` or ``completed_unverified``)."""
    handed_back: int = 0
    """Replays that handed back to the model."""
    refused: int = 0
    """Replays refused (invalidated or unusable file)."""
    hit_rate: float | None = None
    """``completed / runs``; ``None`` without runs."""
    model_calls: int = 0
    """Model calls made after hand-backs."""
    tokens: int = 0
    """Tokens of those calls."""
    saved_model_calls: int = 0
    """Model calls the replays saved (estimate)."""
    saved_tokens: int = 0
    """Tokens the replays saved (estimate)."""
    saved_seconds: float = 0.0
    """Seconds saved, over the runs whose recording time is known."""
    dollars_spent: float | None = None
    """Dollars of the calls made; ``None`` when no run's model has a price."""
    dollars_saved: float | None = None
    """Dollars saved (saved tokens at the input price: a lower bound); ``None`` likewise."""
    unpriced_models: list[str] = Field(default_factory=list)
    """Models with no price in the table, left out of the dollar figures."""


def stats_of(
    trajectory: str,
    summaries: Iterable[TrajectorySummary],
    prices: Mapping[str, ModelPrice] | None = None,
) -> TrajectoryStats:
    """Add up the replays of ``summaries`` (the ledger's per-trajectory totals); dollars are
    priced per recording model (:attr:`TrajectorySummary.by_model`), so they are exact."""
    # added up in plain numbers, the model built once (a fleet page adds up thousands)
    runs = completed = handed_back = refused = model_calls = tokens = 0
    saved_model_calls = saved_tokens = 0
    saved_seconds = 0.0
    spent: float | None = None
    saved: float | None = None
    unpriced: set[str] = set()
    for summary in summaries:
        runs += summary.runs
        completed += summary.completed + summary.completed_unverified
        handed_back += summary.handed_back
        refused += summary.refused
        model_calls += summary.model_calls
        tokens += summary.tokens
        saved_model_calls += summary.saved_model_calls
        saved_tokens += summary.saved_tokens
        saved_seconds += summary.saved_seconds
        for model, totals in summary.by_model.items():
            price = price_for(model or None, prices)
            if price is None:
                unpriced.add(model or "(unknown model)")
                continue
            spent = (spent or 0.0) + price.cost(totals.usage)
            saved = (saved or 0.0) + price.saved(totals.saved_tokens)
    return TrajectoryStats(
        trajectory=trajectory,
        runs=runs,
        completed=completed,
        handed_back=handed_back,
        refused=refused,
        hit_rate=completed / runs if runs else None,
        model_calls=model_calls,
        tokens=tokens,
        saved_model_calls=saved_model_calls,
        saved_tokens=saved_tokens,
        saved_seconds=saved_seconds,
        dollars_spent=spent,
        dollars_saved=saved,
        unpriced_models=sorted(unpriced),
    )


def summarize(
    trajectory: str,
    records: Iterable[RunRecord],
    prices: Mapping[str, ModelPrice] | None = None,
) -> TrajectoryStats:
    """Add up the replay entries among ``records``."""
    summary = fold_all(TrajectorySummary(trajectory=trajectory), records)
    return stats_of(trajectory, [summary], prices)


def stats_json(
    cache_dir: str,
    summaries: Sequence[TrajectorySummary],
    prices: Mapping[str, ModelPrice] | None = None,
) -> dict[str, Any]:
    """What ``askcache stats --json`` prints for ``summaries`` (the fleet page embeds the
    same): the cache's location, the prices' date, each trajectory's figures and the total."""
    return {
        "cache_dir": cache_dir,
        "prices_as_of": PRICES_AS_OF,
        "trajectories": [stats_of(s.trajectory, [s], prices).model_dump() for s in summaries],
        "total": stats_of("(all)", summaries, prices).model_dump(),
    }


def add_stats_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """Register ``stats``."""
    parser = commands.add_parser(
        "stats",
        parents=parents,
        help="replays, hit rate and savings, from the run ledger",
        description="Add up the run ledger (every replay on every machine sharing the "
        "cache): replays, hit rate, hand-backs, model calls and tokens spent, and calls, "
        f"tokens, seconds and dollars saved. Dollars use list prices as of {PRICES_AS_OF} "
        "(askcache.cli.prices); saved tokens are priced as input tokens, a lower bound.",
    )
    parser.add_argument("name", nargs="?", help="one cache file (default: all)")
    add_price_argument(parser)
    parser.set_defaults(run=run_stats)


def add_price_argument(parser: argparse.ArgumentParser) -> None:
    """``--price MODEL=INPUT,OUTPUT`` (repeatable), as ``stats`` and ``dashboard`` take it."""
    parser.add_argument(
        "--price",
        action="append",
        default=[],
        type=parse_price_argument,
        metavar="MODEL=INPUT,OUTPUT",
        help="dollars per million tokens for a model (repeatable); overrides the table",
    )


def parse_price_argument(text: str) -> tuple[str, ModelPrice]:
    """``--price MODEL=INPUT,OUTPUT`` read (argparse's type)."""
    try:
        return parse_price(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def stats_line(stats: TrajectoryStats) -> str:
    """One trajectory's (or all) replays, hit rate, spending and savings, one line."""
    rate = "-" if stats.hit_rate is None else f"{stats.hit_rate:.0%}"
    return (
        f"{stats.trajectory}: {stats.runs} replays, hit rate {rate} "
        f"({stats.completed} completed, {stats.handed_back} handed back, {stats.refused} "
        f"refused); spent {stats.model_calls} model calls, {stats.tokens:,} tokens "
        f"({_money(stats.dollars_spent)}); "
        + saving_words(
            stats.saved_model_calls,
            stats.saved_tokens,
            stats.saved_seconds,
            dollars=_money(None if stats.dollars_saved is None else abs(stats.dollars_saved)),
            than="their recordings",
        )
    )


def run_stats(args: argparse.Namespace) -> int:
    """Run ``stats``."""
    storage = open_storage(args.cache_dir)
    prices = dict(args.price)
    name = args.name
    if name is not None and not name.endswith(".json"):
        name += ".json"
    with (
        ProgressBar("reading the run ledger", enabled=not args.json) as bar,
        open_run_ledger(args, storage, bar.update) as ledger,
    ):
        if name is None:
            summaries = ledger.summaries()
        else:
            found = ledger.summary(name)
            summaries = [] if found is None else [found]
    if name is not None and not summaries:
        resolve_name(storage, name)  # a misspelt name: exit 3, with the closest ones
    rows = [stats_of(s.trajectory, [s], prices) for s in summaries]
    total = stats_of("(all)", summaries, prices)
    if args.json:
        emit_json(stats_json(location(storage), summaries, prices))
        return EXIT_OK
    if not summaries:
        print(f"no replays recorded in the run ledger of {location(storage)}")
        return EXIT_OK
    for row in rows:
        print(stats_line(row))
    if len(rows) > 1:
        print(stats_line(total))
    if total.unpriced_models:
        print(
            f"no price for {', '.join(total.unpriced_models)}: left out of the dollars "
            "(add one with --price MODEL=INPUT,OUTPUT)"
        )
    return EXIT_OK
