"""Savings are said in words: a replay slower (or dearer) than its recording says so, never
"saved -7.6 s"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from askcache.cli.commands.stats import TrajectoryStats, stats_line
from askcache.cli.savings import saving_words

_NEGATIVE_SAVING = re.compile(r"saved[^;]*-\d")


@pytest.mark.parametrize(
    ("calls", "tokens", "seconds", "expected"),
    [
        (5, 14_328, 3.24, "saved 5 model calls, 14,328 tokens and 3.2 s"),
        (5, 14_328, -7.6, "saved 5 model calls and 14,328 tokens; took 7.6 s longer than X"),
        (
            -1,
            -2_000,
            None,
            "made 1 more model call and used 2,000 more tokens than X",
        ),
        (1, 1, -0.04, "saved 1 model call, 1 token and 0.0 s"),
    ],
)
def test_each_quantity_is_said_the_right_way_round(
    calls: int, tokens: int, seconds: float | None, expected: str
) -> None:
    text = saving_words(calls, tokens, seconds, than="X")
    assert text == expected
    assert not _NEGATIVE_SAVING.search(text)


def test_stats_line_says_a_slower_replay_took_longer() -> None:
    stats = TrajectoryStats(
        trajectory="login.json",
        runs=1,
        completed=1,
        saved_model_calls=5,
        saved_tokens=14_328,
        saved_seconds=-7.6,
        dollars_saved=0.04,
    )
    line = stats_line(stats)
    assert line.endswith(
        "saved 5 model calls and 14,328 tokens ($0.04); took 7.6 s longer than their recordings"
    )
    assert "-7.6" not in line
    dearer = stats.model_copy(update={"saved_tokens": -3_000, "dollars_saved": -0.01})
    assert "used 3,000 more tokens ($0.01)" in stats_line(dearer)
    assert "$-" not in stats_line(dearer)


def test_the_demo_says_a_slower_replay_took_longer(tmp_path: Path) -> None:
    from dataclasses import replace

    from askcache.cli.demo import format_summary, run_demo

    outcome = run_demo(tmp_path, offline=True, screen="simulated")
    online = replace(outcome, mode="Claude (claude-test)", seconds=(1.0, 8.6, 2.0))
    summary = format_summary(online, with_report=False)
    assert "took 7.6 s longer than the recording (1.00 s)" in summary
    assert not _NEGATIVE_SAVING.search(summary)
