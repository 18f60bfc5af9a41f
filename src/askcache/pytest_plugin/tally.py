"""The session's summary: every test's outcome added up, in a few lines for the terminal.

::

    askcache (mode auto): 3 tests, 2 replayed, 1 recorded
    replays: 1 completed, 1 handed back
    hand-backs by reason: screen_changed 1 (the screen around the step's action point ...)
    model calls: 5 made, 8 avoided
    replays saved 8 model calls and 14,328 tokens ($0.04) against the recordings
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from askcache.cli.savings import saving_words
from askcache.foundation.reasons import HANDBACK_CODES, describe_code
from askcache.pytest_plugin.outcomes import TestOutcome

__all__ = ["summary_lines"]


def _count(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def summary_lines(outcomes: Iterable[TestOutcome]) -> list[str]:
    """The summary of ``outcomes`` (``[]`` when there are none)."""
    outcomes = list(outcomes)
    if not outcomes:
        return []
    tests = {outcome.nodeid for outcome in outcomes}
    replayed = {outcome.nodeid for outcome in outcomes if outcome.replays}
    recorded = {outcome.nodeid for outcome in outcomes if outcome.recorded}
    failed = {outcome.nodeid for outcome in outcomes if outcome.failed}
    modes = sorted({outcome.mode for outcome in outcomes})
    head = f"askcache (mode {', '.join(modes)}): {_count(len(tests), 'test')}"
    head += f", {len(replayed)} replayed, {len(recorded)} recorded"
    if failed:
        head += f", {len(failed)} failed by a hand-back"
    lines = [head]
    statuses = Counter(r.status for o in outcomes for r in o.replays)
    if statuses:
        said = [f"{count} {status.replace('_', ' ')}" for status, count in sorted(statuses.items())]
        lines.append(f"replays: {', '.join(said)}")
    codes = Counter(r.reason_code for o in outcomes for r in o.replays if r.status == "handed_back")
    if codes:
        order = list(HANDBACK_CODES)
        said = [
            f"{code or 'no code'} {count} ({describe_code(code)})"
            for code, count in sorted(
                codes.items(), key=lambda item: (-item[1], order.index(item[0]) if item[0] else 99)
            )
        ]
        lines.append(f"hand-backs by reason: {'; '.join(said)}")
    made = sum(outcome.model_calls for outcome in outcomes)
    avoided = sum(outcome.saved_model_calls for outcome in outcomes if outcome.replays)
    lines.append(f"model calls: {made:,} made, {max(avoided, 0):,} avoided")
    if replayed:
        tokens = sum(outcome.saved_tokens for outcome in outcomes)
        priced = [o.saved_dollars for o in outcomes if o.saved_dollars is not None]
        dollars = f"${abs(sum(priced)):,.2f}" if priced else None  # said with its sign in words
        words = saving_words(avoided, tokens, dollars=dollars, than="the recordings")
        line = f"replays {words}"
        if "than the recordings" not in words:
            line += " against the recordings"
        unpriced = sorted({m for o in outcomes for m in o.unpriced_models})
        if unpriced:
            line += f" (no price for {', '.join(unpriced)})"
        lines.append(line)
    return lines
