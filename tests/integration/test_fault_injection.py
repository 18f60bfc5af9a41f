"""Fault injection on real applications: a replay never acts on a screen that no longer
matches, and its status tells the truth.

Each case records the task once on the healthy application (the Tk form, or xcalc clicked
key by key) through the real ``anthropic`` client and the local stand-in, then replays it
with ``strategy="execute"`` and the default settings on the faulty application under Xvfb.
When the replay hands back, a scripted model does the sensible thing (closes what covers the
form so the replay can re-join, finishes the task, or stops when nothing answers). Wrong
actions are read from the applications themselves just before each replayed action (the Tk
form's published state; the xcalc key under the point): see ``bench/faults.py``, which runs
the same scenarios and writes their table into docs/benchmarks.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.faults import FAULTS, Fault, Outcome, Recordings

pytestmark = pytest.mark.integration

ADA = {"name": "Ada Lovelace", "email": ""}


class Runs:
    """The recordings, made once per module, and each scenario's outcome, measured once."""

    def __init__(self, folder: Path) -> None:
        self.recordings = Recordings(folder)
        self.outcomes: dict[str, Outcome] = {}

    def run(self, fault: Fault) -> Outcome:
        if fault.name not in self.outcomes:
            self.outcomes[fault.name] = self.recordings.run(fault)
        return self.outcomes[fault.name]

    def named(self, prefix: str) -> Outcome:
        return self.run(next(f for f in FAULTS if f.name.startswith(prefix)))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory.mktemp("faults"))


def _describe(outcome: Outcome) -> str:
    return (
        f"{outcome.status} at step {outcome.stopped_at_step}, wrong {outcome.wrong}, "
        f"{outcome.model_calls} model calls, {outcome.rejoins} re-joins, "
        f"saved {outcome.saved}: {outcome.reason}"
    )


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(
            f,
            id=f.name,
            marks=[pytest.mark.xfail(strict=True, reason=f.weakness)] if f.weakness else [],
        )
        for f in FAULTS
    ],
)
def test_no_wrong_action_and_a_true_status(runs: Runs, fault: Fault) -> None:
    outcome = runs.run(fault)
    summary = _describe(outcome)
    assert outcome.wrong_actions == fault.unavoidable, summary
    assert outcome.status == fault.status, summary
    if fault.rejoins is not None:
        assert outcome.rejoins == fault.rejoins, summary
    if outcome.rejoins:
        assert outcome.calls_after_rejoin == 0, summary  # the replay did the rest
    if fault.app == "tk":
        # the task got done exactly once, never with a wrong value (pre-filled + typed, ...)
        assert outcome.saved == ([ADA] if fault.saved else []), summary
    if outcome.status == "handed_back":
        assert outcome.model_calls >= 1, summary
        assert outcome.reason, summary


def test_a_slow_app_replays_without_a_single_hand_back(runs: Runs) -> None:
    outcome = runs.named("slow app")
    assert (outcome.status, outcome.handbacks, outcome.model_calls) == ("completed", 0, 0), (
        _describe(outcome)
    )
    assert outcome.saved == [ADA]


def test_a_frozen_app_is_handed_back_after_its_first_ignored_action(
    runs: Runs,
) -> None:
    outcome = runs.named("frozen")
    assert outcome.status == "handed_back", _describe(outcome)
    assert outcome.stopped_at_step == 1  # the first click did nothing: nothing after it ran
    assert "the action had no effect" in (outcome.reason or "")
    assert outcome.saved == []


def test_a_screenshot_failing_once_inside_the_replay_s_wait_is_a_look_skipped(
    runs: Runs,
) -> None:
    # The slow form answers the Name click 0.8 s late; a screenshot of the wait for that
    # answer fails. The wait goes on, sees the answer, and the replay finishes alone.
    outcome = runs.named("screenshot fails inside the replay's wait")
    assert (outcome.status, outcome.handbacks, outcome.model_calls) == ("completed", 0, 0), (
        _describe(outcome)
    )
    assert outcome.wrong == []
    assert outcome.saved == [ADA]


def test_screenshots_failing_in_a_row_hand_back_instead_of_raising(runs: Runs) -> None:
    outcome = runs.named("screenshots fail: 4 in a row")
    assert outcome.status == "handed_back", _describe(outcome)
    assert "no screenshot could be taken (3 attempts in a row)" in (outcome.reason or "")
    assert outcome.wrong == []


def test_a_hand_back_after_the_save_click_leaves_a_screen_where_it_is_done(
    runs: Runs,
) -> None:
    # The replayed Save click ran on the slow form, then its tool call failed (its result
    # screenshot). The replay lets the screen settle before handing back: the model's first
    # look shows the contact saved, so it does not press Save again.
    outcome = runs.named("screenshot fails: the Save click's result")
    assert (outcome.status, outcome.stopped_at_step) == ("handed_back", 3), _describe(outcome)
    assert outcome.saved == [ADA], _describe(outcome)


def test_an_invisible_rebinding_is_handed_back_right_after_the_click_that_shows_it(
    runs: Runs,
) -> None:
    # The rebound key looks exactly as recorded, so it is clicked; the display then shows 7
    # where the recording showed 3, away from the key: the step's effect elsewhere hands back
    # before 0 and = are clicked.
    outcome = runs.named("xcalc: key 3 rebound")
    assert outcome.wrong_actions == 1, _describe(outcome)
    assert outcome.status == "handed_back"
    assert outcome.stopped_at_step == 4  # the "3" click (step 0 is the first screenshot)
    assert "away from its point" in (outcome.reason or "")
    assert outcome.display == "differs from the recording"  # 12+7, not 42: a hand-back says so
    assert runs.named("none").display == ""  # (the Tk rows have no display)
