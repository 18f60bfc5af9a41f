"""Parity verification: parsing (seed 001 checklist), judges, retries, the loop, the command."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw

from askcache.parity import (
    DeterministicJudge,
    Judgement,
    LoopExit,
    LoopResult,
    ParityConfig,
    ParityReport,
    ValidationVerdict,
    VisionJudge,
    auto_verify,
    compare_images,
    judge_with_retry,
    parse_judge_answer,
    parse_validation_response,
)
from askcache.parity.command import run_parity
from askcache.testing import MessagesApiStandIn, text_reply

PASS = '```json\n{"verdict": "PASS", "confidence": 95, "visual_differences": [], "summary": "identical"}\n```'
FAIL = json.dumps(
    {
        "verdict": "FAIL",
        "confidence": 90,
        "visual_differences": [
            {"type": "layout", "description": "hero moved", "severity": "major"}
        ],
        "summary": "moved",
    }
)


# --- parsing ----------------------------------------------------------------------------


def test_pass() -> None:
    verdict = parse_validation_response(f"Here you go:\n{PASS}\nThanks")
    assert (verdict.verdict, verdict.confidence, verdict.passed) == ("PASS", 95, True)


def test_fail_from_raw_json_in_text() -> None:
    verdict = parse_validation_response(f"Result: {FAIL} -- done")
    assert verdict.verdict == "FAIL"
    assert verdict.visual_differences[0].description == "hero moved"


def test_error_verdict_is_kept() -> None:
    assert parse_validation_response('{"verdict": "error", "confidence": 0}').verdict == "ERROR"


@pytest.mark.parametrize(
    "text",
    [
        "VALIDATION PASSED",
        '```json\n{"verdict": "PASS", "confidence": }\n```',
        '{"confidence": 99}',
        "",
        '{"verdict": "MAYBE"}',
    ],
)
def test_unreadable_answers_are_errors_with_a_parse_error(text: str) -> None:
    verdict = parse_validation_response(text)
    assert verdict.verdict == "ERROR"
    assert verdict.visual_differences[0].type == "parse_error"
    assert verdict.raw_output == text


def test_low_confidence_pass_is_rejected_and_the_minimum_is_configurable() -> None:
    text = '{"verdict": "PASS", "confidence": 79, "visual_differences": []}'
    assert parse_validation_response(text).verdict == "ERROR"
    assert parse_validation_response(text, ParityConfig(min_confidence=70)).verdict == "PASS"


def test_contradiction_pass_with_differences_is_fail() -> None:
    text = '{"verdict": "PASS", "confidence": 99, "visual_differences": [{"type": "styling", "description": "blue", "severity": "minor"}]}'
    assert parse_validation_response(text).verdict == "FAIL"


def test_unknown_difference_types_are_kept_not_dropped() -> None:
    text = '{"verdict": "FAIL", "confidence": 90, "visual_differences": [{"type": "colour", "description": "red", "severity": "huge"}, "plain text"]}'
    verdict = parse_validation_response(text)
    assert verdict.verdict == "FAIL"
    assert [(d.type, d.severity) for d in verdict.visual_differences] == [
        ("content", "major"),
        ("content", "major"),
    ]
    assert verdict.visual_differences[0].description == "[colour] red"


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.binary().map(repr),
        json_like.map(json.dumps),
        st.dictionaries(
            st.sampled_from(["verdict", "confidence", "visual_differences", "summary"]), json_like
        ).map(json.dumps),
        st.dictionaries(  # seed 000's fields, with numbers where a score belongs
            st.sampled_from(["parityScore", "gaps", "recommendations", "verdict", "confidence"]),
            json_like | st.floats(min_value=-10, max_value=110),
        ).map(json.dumps),
    )
)
def test_parsing_never_raises(text: str) -> None:
    answer = parse_judge_answer(text)
    verdict = answer.verdict
    assert verdict.verdict in ("PASS", "FAIL", "ERROR")
    assert 0 <= verdict.confidence <= 100
    assert not (verdict.verdict == "PASS" and verdict.visual_differences)
    assert (answer.report is None) == (
        verdict.visual_differences[:1] != [] and verdict.visual_differences[0].type == "parse_error"
    )
    if verdict.verdict == "PASS":
        assert answer.report is not None
        assert answer.report.parity_score >= 99
        assert not answer.report.gaps


@given(st.one_of(st.none(), st.integers(), st.lists(st.integers())))
def test_parsing_non_text_never_raises(value: object) -> None:
    assert parse_validation_response(value).verdict == "ERROR"


def test_report_round_trip_uses_the_seed_field_names() -> None:
    report = ParityReport.model_validate(
        {
            "parityScore": 87,
            "gaps": [{"area": "Hero", "issue": "image missing", "severity": "high"}],
            "recommendations": ["add it"],
        }
    )
    data = json.loads(report.to_json())
    assert data["parityScore"] == 87
    assert ParityReport.model_validate(data) == report
    verdict = parse_validation_response(FAIL)
    assert ValidationVerdict.model_validate_json(verdict.model_dump_json()) == verdict


# --- deterministic judge ------------------------------------------------------------------


def _page(
    box: tuple[int, int, int, int] | None = None, size: tuple[int, int] = (400, 300)
) -> Image.Image:
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, size[0], 40), fill=(30, 60, 90))
    if box:
        draw.rectangle(box, fill=(200, 30, 30))
    return image


def test_identical_renderings_pass_with_full_parity() -> None:
    judgement = DeterministicJudge().judge(_page(), _page())
    assert judgement.verdict.verdict == "PASS"
    assert judgement.report is not None
    assert (judgement.report.parity_score, judgement.report.gaps) == (100.0, [])


def test_a_change_is_located_scored_and_drawn() -> None:
    judgement = DeterministicJudge().judge(_page(), _page((300, 220, 380, 280)))
    assert judgement.verdict.verdict == "FAIL"
    report = judgement.report
    assert report is not None
    assert 90 < report.parity_score < 100
    assert len(report.gaps) == 1
    assert report.gaps[0].area.startswith("bottom right")
    assert judgement.diff_image is not None
    assert judgement.diff_image.getpixel((340, 250)) == (230, 30, 30)
    assert judgement.diff_image.getpixel((50, 150)) != (230, 30, 30)


def test_size_difference_is_a_high_gap() -> None:
    comparison = compare_images(_page(), _page(size=(400, 320)))
    assert comparison.report.gaps[0].severity == "high"
    assert "size differs" in comparison.report.gaps[0].issue


# --- retries ----------------------------------------------------------------------------------


class ScriptedJudge:
    """A judge that answers from a list: a verdict text, or an exception to raise."""

    name = "scripted"

    def __init__(self, answers: list[str | Exception]) -> None:
        self.answers = answers
        self.calls = 0

    def judge(self, source: Image.Image, candidate: Image.Image) -> Judgement:
        answer = self.answers[self.calls]
        self.calls += 1
        if isinstance(answer, Exception):
            raise answer
        return Judgement(parse_validation_response(answer))


def test_transient_failure_is_retried_with_backoff() -> None:
    waits: list[float] = []
    judge = ScriptedJudge([ConnectionError("dev server not up yet"), "garbage", PASS])
    result = judge_with_retry(judge, _page(), _page(), sleep=waits.append)
    assert result.verdict.verdict == "PASS"
    assert waits == [2.0, 4.0]


def test_persistent_errors_stop_after_max_retries() -> None:
    waits: list[float] = []
    judge = ScriptedJudge([RuntimeError("boom")] * 4)
    result = judge_with_retry(judge, _page(), _page(), sleep=waits.append)
    assert (judge.calls, waits) == (3, [2.0, 4.0])  # seed 001: 3 attempts, 2 ** attempt s
    assert result.verdict.verdict == "ERROR"
    assert result.verdict.visual_differences[0].type == "exception"
    assert "boom" in result.verdict.visual_differences[0].description


@pytest.mark.parametrize("answer", [PASS, FAIL])
def test_pass_and_fail_return_at_once(answer: str) -> None:
    waits: list[float] = []
    judge = ScriptedJudge([answer])
    judge_with_retry(judge, _page(), _page(), sleep=waits.append)
    assert (judge.calls, waits) == (1, [])


def test_verdicts_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="askcache.parity"):
        judge_with_retry(ScriptedJudge([FAIL]), _page(), _page(), sleep=lambda s: None)
    assert "verdict (attempt 1/3): FAIL, confidence 90%" in caplog.text
    assert "[major] layout: hero moved" in caplog.text


# --- vision judge through the real client -------------------------------------------------


def test_vision_judge_sends_both_images_and_parses_the_answer() -> None:
    config = ParityConfig(judge_timeout_seconds=42)
    with MessagesApiStandIn([text_reply("I could not see"), text_reply(PASS)]) as api:
        judge = VisionJudge(api.client(), model="claude-test", config=config)
        assert (judge.client.timeout, judge.client.max_retries) == (42, 0)
        waits: list[float] = []
        result = judge_with_retry(
            judge, _page(), _page((10, 60, 50, 90)), config, sleep=waits.append
        )
    assert result.verdict.verdict == "PASS"
    assert waits == [2.0]
    content = api.requests[0]["messages"][0]["content"]
    assert [block["type"] for block in content] == ["text", "image", "text", "image", "text"]
    assert '"verdict": "PASS" | "FAIL" | "ERROR"' in content[-1]["text"]


# --- the auto-verify loop ----------------------------------------------------------------------


def _loop(
    tmp_path: Path, areas: list[int], config: ParityConfig, answer: bool = False
) -> tuple[LoopResult, list[int], list[LoopExit]]:
    """Each iteration's candidate has a red square of the next area (px) on a 100x100 page."""
    source = Image.new("RGB", (100, 100), "white")
    state = {"i": 0}
    fixes: list[int] = []
    asked: list[LoopExit] = []

    def capture() -> tuple[Image.Image, Image.Image]:
        side = int(areas[min(state["i"], len(areas) - 1)] ** 0.5)
        candidate = source.copy()
        if side:
            ImageDraw.Draw(candidate).rectangle((0, 0, side - 1, side - 1), fill="red")
        return source, candidate

    def fix(report: ParityReport, iteration: int) -> None:
        fixes.append(iteration)
        state["i"] += 1

    def decide(reason: LoopExit, history: object) -> bool:
        asked.append(reason)
        return answer

    result = auto_verify(capture, fix, decide, tmp_path, config=config, sleep=lambda s: None)
    return result, fixes, asked


def test_loop_succeeds_at_the_threshold(tmp_path: Path) -> None:
    result, fixes, asked = _loop(tmp_path, [900, 400, 0], ParityConfig())
    assert (result.exit, result.proceed, fixes, asked) == (LoopExit.SUCCESS, True, [1, 2], [])
    assert [r.parity_score for r in result.iterations] == [91.0, 96.0, 100.0]
    for n in (1, 2, 3):
        folder = tmp_path / "screenshots" / "verify-iterations" / f"iteration-{n:03d}"
        assert (folder / "parity.png").is_file()
        assert (
            json.loads((folder / "report.json").read_text())["parityScore"]
            == [91.0, 96.0, 100.0][n - 1]
        )
    summary = json.loads(
        (tmp_path / "screenshots" / "verify-iterations" / "summary.json").read_text()
    )
    assert (summary["exit"], summary["final_score"]) == ("success", 100.0)


def test_loop_stops_on_diminishing_returns_and_asks(tmp_path: Path) -> None:
    result, _, asked = _loop(tmp_path, [900, 880, 860, 850], ParityConfig(), answer=True)
    assert result.exit == LoopExit.DIMINISHING_RETURNS
    assert len(result.iterations) == 4
    assert (asked, result.proceed) == ([LoopExit.DIMINISHING_RETURNS], True)


def test_loop_stops_at_max_iterations_and_asks(tmp_path: Path) -> None:
    areas = [3000 - 150 * i for i in range(12)]  # 1.5 points better each time, never 99
    result, fixes, asked = _loop(tmp_path, areas, ParityConfig(max_iterations=10))
    assert result.exit == LoopExit.MAX_ITERATIONS
    assert len(result.iterations) == 10
    assert fixes == list(range(1, 10))
    assert (asked, result.proceed) == ([LoopExit.MAX_ITERATIONS], False)


def test_loop_threshold_is_configurable(tmp_path: Path) -> None:
    config = ParityConfig(parity_threshold=90, high_gaps_block_success=False)
    result, _, _ = _loop(tmp_path, [900], config)
    assert result.exit == LoopExit.SUCCESS


def test_a_high_gap_blocks_success_above_the_threshold(tmp_path: Path) -> None:
    result, fixes, _ = _loop(tmp_path, [49, 0], ParityConfig())  # a 7 px square: 99.51
    assert [r.parity_score for r in result.iterations] == [99.51, 100.0]
    assert (result.exit, fixes) == (LoopExit.SUCCESS, [1])
    score_only = ParityConfig(high_gaps_block_success=False)
    result, fixes, _ = _loop(tmp_path / "score-only", [49, 0], score_only)
    assert (len(result.iterations), fixes) == (1, [])


# --- the command ------------------------------------------------------------------------------


def _args(tmp_path: Path, source: str, candidate: str) -> argparse.Namespace:
    return argparse.Namespace(
        source=source,
        candidate=candidate,
        output=str(tmp_path / "out"),
        judge="deterministic",
        device="desktop",
        full_page=False,
        model=None,
    )


def test_command_exit_codes_evidence_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _page().save(tmp_path / "a.png")
    _page().save(tmp_path / "b.png")
    _page((20, 100, 120, 200)).save(tmp_path / "c.png")
    (tmp_path / "d.png").write_text("not an image")
    assert run_parity(_args(tmp_path, str(tmp_path / "a.png"), str(tmp_path / "b.png"))) == 0
    assert "PASS" in capsys.readouterr().out
    assert run_parity(_args(tmp_path, str(tmp_path / "a.png"), str(tmp_path / "c.png"))) == 1
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["verdict"]["verdict"] == "FAIL"
    assert set(report["verdict"]["screenshots"]) == {"source", "candidate", "diff"}
    assert all(Path(p).is_file() for p in report["verdict"]["screenshots"].values())
    assert (
        run_parity(
            _args(tmp_path, str(tmp_path / "a.png"), str(tmp_path / "d.png")), sleep=lambda s: None
        )
        == 2
    )
    assert (
        "candidate"
        in json.loads((tmp_path / "out" / "report.json").read_text())["verdict"][
            "visual_differences"
        ][0]["description"]
    )
