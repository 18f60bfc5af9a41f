"""The re-join rules that read the conversation (askcache.replay.rejoin): which of the model's calls
count as acting, when it counts as stopping, and how decisions show in reports and the
ledger. The screen condition runs on real applications in tests/integration/test_rejoin.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from askcache.cli.html_report import (
    ReplaySection,
    TrajectoryReport,
    rejoin_lines,
    write_html_report,
    write_trajectory_report,
)
from askcache.foundation.messages import (
    MessageParam,
    TextBlockParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)
from askcache.replay import ReplayResult
from askcache.replay.rejoin import model_acted, model_stops
from askcache.storage.ledger import RejoinDecision, RunRecord


def _call(action: str, *, call_id: str, replayed: bool = False, **extra: Any) -> ToolUseBlockParam:
    return ToolUseBlockParam(
        id=call_id, name="computer", input={"action": action, **extra}, replayed=replayed
    )


def _turn(
    *calls: ToolUseBlockParam, text: str = "", errors: tuple[str, ...] = ()
) -> list[MessageParam]:
    said: list[Any] = [TextBlockParam(text=text)] if text else []
    results = [
        ToolResultBlockParam(tool_use_id=call.id, content="ok", is_error=call.id in errors)
        for call in calls
    ]
    turn = [MessageParam(role="assistant", content=[*said, *calls], stop_reason="tool_use")]
    return turn + ([MessageParam(role="user", content=list(results))] if results else [])


HAND_BACK = [
    MessageParam(role="user", content="goal"),
    *_turn(_call("left_click", call_id="r1", replayed=True, coordinate=[5, 5])),
    MessageParam(role="user", content=[TextBlockParam(text="Replay ... stopped")]),
]
SINCE = 3


@pytest.mark.parametrize("action", ["screenshot", "wait", "zoom", "cursor_position", "mouse_move"])
def test_observations_and_pointer_moves_are_not_progress(action: str) -> None:
    messages = HAND_BACK + _turn(_call(action, call_id="m1", coordinate=[1, 1]))
    assert not model_acted(messages, SINCE)


@pytest.mark.parametrize(
    ("action", "extra"),
    [
        ("left_click", {"coordinate": [1, 1]}),
        ("double_click", {"coordinate": [1, 1]}),
        ("left_click_drag", {"start_coordinate": [1, 1], "coordinate": [2, 2]}),
        ("type", {"text": "x"}),
        ("key", {"text": "Escape"}),
        ("scroll", {"coordinate": [1, 1], "scroll_direction": "down", "scroll_amount": 1}),
    ],
)
def test_acting_calls_of_the_model_are_progress(action: str, extra: dict[str, Any]) -> None:
    messages = HAND_BACK + _turn(_call(action, call_id="m1", **extra))
    assert model_acted(messages, SINCE)


def test_the_replays_own_calls_failed_calls_and_calls_before_the_hand_back_do_not_count() -> None:
    assert not model_acted(HAND_BACK, SINCE)  # the replayed click came before the hand-back
    assert model_acted(HAND_BACK, 0) is False  # and is the replay's own
    failed = HAND_BACK + _turn(_call("key", call_id="m1", text="Escape"), errors=("m1",))
    assert not model_acted(failed, SINCE)
    other_tool = HAND_BACK + _turn(ToolUseBlockParam(id="m2", name="bash", input={"cmd": "x"}))
    assert not model_acted(other_tool, SINCE)


@pytest.mark.parametrize(
    "text",
    [
        "I stop here.",
        "The file changed. I'll stop after this.",
        "Stopping: the list is not as expected.",
        "I won't continue with the replay.",
        "The task is done.",
        "Let me stop here and report.",
    ],
)
def test_a_model_that_says_it_stops_does_not_go_on(text: str) -> None:
    messages = HAND_BACK + _turn(_call("key", call_id="m1", text="Escape"), text=text)
    assert model_stops(messages, SINCE) is not None


@pytest.mark.parametrize(
    "text", ["", "The replay stopped because a dialog is open; I close it.", "Clicking Save."]
)
def test_a_model_that_acts_and_says_nothing_of_stopping_goes_on(text: str) -> None:
    messages = HAND_BACK + _turn(_call("key", call_id="m1", text="Escape"), text=text)
    assert model_stops(messages, SINCE) is None


def test_a_turn_without_tools_or_with_end_turn_is_the_model_ending_its_turn() -> None:
    assert model_stops(HAND_BACK, SINCE) == "the model has not spoken since the hand-back"
    answered = [*HAND_BACK, MessageParam(role="assistant", content="Done.")]
    assert model_stops(answered, SINCE) == "the model ended its turn"


def _decision(rejoined: bool, reason: str = "the model has not acted") -> RejoinDecision:
    return RejoinDecision(
        step_index=2,
        failed_check="effect",
        rejoined=rejoined,
        refused_by=None if rejoined else "model_acted",
        reason=reason,
    )


def test_decisions_repeated_over_turns_show_once_with_their_count() -> None:
    decisions = [_decision(False)] * 3 + [_decision(True, "step 2 passes its check")]
    assert rejoin_lines(decisions) == [
        "at step 2: refused (model_acted): the model has not acted (x3)",
        "at step 2: re-joined: step 2 passes its check",
    ]


def test_ledger_entries_keep_decisions_and_older_entries_still_load() -> None:
    record = RunRecord(
        trajectory="t.json", status="handed_back", rejoin_decisions=[_decision(False)]
    )
    again = RunRecord.model_validate_json(record.model_dump_json())
    assert again.rejoin_decisions == record.rejoin_decisions
    old = RunRecord.model_validate_json('{"trajectory": "t.json", "status": "completed"}')
    assert old.rejoin_decisions == []


def test_both_html_reports_show_each_decision_and_its_reason(tmp_path: Path) -> None:
    decisions = [_decision(False), _decision(True, "step 2 passes its check")]
    result = ReplayResult(
        cache_file="t.json",
        steps_total=4,
        status="completed",
        rejoins=1,
        rejoin_decisions=decisions,
    )
    page = write_html_report(
        tmp_path / "run.html", title="run", recorded={}, sections=[ReplaySection("t", result)]
    ).read_text()
    assert "did not take over 1 time(s)" in page
    assert "refused (model_acted): the model has not acted" in page
    assert "re-joined: step 2 passes its check" in page
    record = RunRecord(
        trajectory="t.json", status="completed", rejoins=1, rejoin_decisions=decisions
    )
    page = write_trajectory_report(
        tmp_path / "file.html", TrajectoryReport("t.json", runs=[record], runs_total=1)
    ).read_text()
    assert "refused (model_acted): the model has not acted" in page
