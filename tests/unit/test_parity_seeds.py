"""Parity against seeds 000 and 001: the vision judge's score, gaps and recommendations
(through the real ``anthropic`` client and the HTTP stand-in), contradictions, attempts
within a total time limit, evidence from the library call."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from askcache.foundation.errors import InvalidSettingsError
from askcache.parity import (
    VALIDATION_PROMPT,
    DeterministicJudge,
    EvidenceFolder,
    Judgement,
    LoopExit,
    ParityConfig,
    ParityReport,
    VisionJudge,
    auto_verify,
    judge_with_retry,
    parse_judge_answer,
    parse_validation_response,
)
from askcache.testing import MessagesApiStandIn, text_reply

SEED_000 = {  # the report in seed 000, verbatim
    "parityScore": 87,
    "gaps": [
        {"area": "Hero section", "issue": "Background image missing", "severity": "high"},
        {"area": "Navigation", "issue": "Logo 20% smaller", "severity": "medium"},
    ],
    "recommendations": [
        "Add hero background image from src/assets",
        "Increase logo size in Navigation.tsx",
    ],
}
NEAR = {"parityScore": 99.5, "gaps": [], "recommendations": []}
BOTH = {  # the answer VALIDATION_PROMPT asks for: seed 001's verdict and seed 000's report
    "verdict": "FAIL",
    "confidence": 90,
    "parityScore": 93,
    "gaps": [
        {"area": "Footer", "issue": "links missing", "severity": "low", "type": "content"},
    ],
    "recommendations": ["Add the footer links"],
    "summary": "Footer differs",
}


def fenced(data: dict[str, Any]) -> str:
    return f"Here is my comparison.\n```json\n{json.dumps(data, indent=2)}\n```\n"


def page(square: int = 0) -> Image.Image:
    image = Image.new("RGB", (120, 90), "white")
    if square:
        ImageDraw.Draw(image).rectangle((0, 0, square - 1, square - 1), fill="red")
    return image


# --- seed 000's fields in the parser ------------------------------------------------------


def test_seed_000_report_is_read_with_located_gaps_and_recommendations() -> None:
    answer = parse_judge_answer(fenced(SEED_000))
    assert answer.verdict.verdict == "FAIL"  # judged by its score: 87 < 99
    assert answer.report is not None
    assert answer.report.parity_score == 87
    assert [(g.area, g.issue, g.severity) for g in answer.report.gaps] == [
        ("Hero section", "Background image missing", "high"),
        ("Navigation", "Logo 20% smaller", "medium"),
    ]
    assert answer.report.recommendations == SEED_000["recommendations"]
    differences = answer.verdict.visual_differences
    assert [(d.severity, d.description) for d in differences] == [
        ("critical", "Hero section: Background image missing"),
        ("major", "Navigation: Logo 20% smaller"),
    ]


def test_seed_000_report_at_the_threshold_without_gaps_passes() -> None:
    verdict = parse_validation_response(json.dumps(NEAR))
    assert (verdict.verdict, verdict.confidence) == ("PASS", 0)
    assert "99.5" in verdict.summary
    assert parse_validation_response(
        json.dumps(NEAR), ParityConfig(parity_threshold=99.9)
    ).verdict == ("FAIL")


def test_merged_answer_keeps_both_shapes() -> None:
    answer = parse_judge_answer(fenced(BOTH))
    assert (answer.verdict.verdict, answer.verdict.confidence) == ("FAIL", 90)
    assert answer.verdict.visual_differences[0].type == "content"
    assert answer.verdict.visual_differences[0].severity == "minor"
    assert answer.report is not None
    assert (answer.report.parity_score, answer.report.recommendations) == (
        93,
        ["Add the footer links"],
    )


def test_seed_001_answer_still_gets_a_derived_report() -> None:
    text = json.dumps(
        {
            "verdict": "FAIL",
            "confidence": 90,
            "visual_differences": [
                {"type": "layout", "description": "hero moved", "severity": "major"},
                {"type": "styling", "description": "blue", "severity": "minor"},
            ],
        }
    )
    answer = parse_judge_answer(text)
    assert answer.report is not None
    assert answer.report.parity_score == 94  # 100 - 5 (major) - 1 (minor)
    assert [g.severity for g in answer.report.gaps] == ["medium", "low"]


def test_a_pass_below_the_parity_threshold_is_a_fail() -> None:
    text = json.dumps({"verdict": "PASS", "confidence": 95, "parityScore": 90, "gaps": []})
    assert parse_validation_response(text).verdict == "FAIL"


@pytest.mark.parametrize(
    ("data", "check"),
    [
        ({"parityScore": "87%", "gaps": []}, lambda a: a.report.parity_score == 87),
        (
            {"parityScore": 80, "gaps": {"area": "Hero", "issue": "gone", "severity": "high"}},
            lambda a: [g.area for g in a.report.gaps] == ["Hero"],
        ),
        (
            {"parityScore": 80, "gaps": [{"issue": "gone", "severity": "critical"}, "a string"]},
            lambda a: (
                [(g.area, g.severity) for g in a.report.gaps]
                == [("unspecified", "high"), ("unspecified", "medium")]
            ),
        ),
        (
            {"parityScore": 80, "gaps": [], "recommendations": "Fix the hero"},
            lambda a: a.report.recommendations == ["Fix the hero"],
        ),
        (
            {"parityScore": 80, "gaps": [], "recommendations": [3, None]},
            lambda a: a.report.recommendations == ["3", "None"],
        ),
    ],
    ids=["score-as-text", "gaps-not-a-list", "gap-without-area", "one-recommendation", "odd-items"],
)
def test_loose_seed_000_answers_are_read(data: dict[str, Any], check: Any) -> None:
    answer = parse_judge_answer(json.dumps(data))
    assert answer.verdict.verdict == "FAIL"
    assert answer.report is not None
    assert check(answer)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('{"parityScore": "high", "gaps": []}', "parityScore must be a number"),
        ('{"parityScore": 150}', "parityScore must be a number from 0 to 100, got 150"),
        ('{"parityScore": null, "verdict": "FAIL"}', "parityScore must be a number"),
        ('```json\n{"parityScore": 87, "gaps": [}\n```', "no JSON object"),
        ("parity is about 87 percent", "no JSON object"),
    ],
)
def test_malformed_seed_000_answers_are_errors_naming_the_field(text: str, named: str) -> None:
    answer = parse_judge_answer(text)
    assert answer.verdict.verdict == "ERROR"
    assert answer.report is None
    assert answer.verdict.visual_differences[0].type == "parse_error"
    assert named in answer.verdict.visual_differences[0].description


# --- contradictions -----------------------------------------------------------------------


def test_fenced_pass_then_raw_fail_is_an_error_naming_the_contradiction() -> None:
    text = (
        '```json\n{"verdict": "PASS", "confidence": 95, "visual_differences": []}\n```\n'
        'On second thought: {"verdict": "FAIL"}'
    )
    verdict = parse_validation_response(text)
    assert verdict.verdict == "ERROR"
    assert verdict.visual_differences[0].description == (
        "the answer contradicts itself: it carries the verdicts FAIL and PASS"
    )


def test_two_parity_scores_are_a_contradiction_and_a_repeated_verdict_is_not() -> None:
    text = f"{json.dumps(NEAR)} and also {json.dumps(SEED_000)}"
    assert "parity scores 87 and 99.5" in (
        parse_validation_response(text).visual_differences[0].description
    )
    same = '{"verdict": "FAIL", "confidence": 90} I repeat: {"verdict": "fail"}'
    assert parse_validation_response(same).verdict == "FAIL"


def test_a_nested_second_verdict_is_a_contradiction() -> None:
    text = '{"verdict": "PASS", "confidence": 99, "detail": {"verdict": "ERROR"}}'
    assert parse_validation_response(text).verdict == "ERROR"


# --- the vision judge through the real client --------------------------------------------


def test_the_prompt_asks_for_the_seed_fields() -> None:
    for field in ('"parityScore"', '"gaps"', '"area"', '"issue"', '"recommendations"'):
        assert field in VALIDATION_PROMPT
    assert '"high" | "medium" | "low"' in VALIDATION_PROMPT
    assert '"verdict": "PASS" | "FAIL" | "ERROR"' in VALIDATION_PROMPT


def test_the_loop_improves_with_the_vision_judges_recommendations(tmp_path: Path) -> None:
    fixes: list[tuple[int, float, list[str]]] = []
    with MessagesApiStandIn([text_reply(fenced(SEED_000)), text_reply(fenced(NEAR))]) as api:
        judge = VisionJudge(api.client(), model="claude-test")
        result = auto_verify(
            lambda: (page(), page(10)),
            lambda report, n: fixes.append((n, report.parity_score, report.recommendations)),
            lambda reason, history: False,
            tmp_path,
            judge=judge,
            sleep=lambda s: None,
        )
    assert len(api.requests) == 2  # one per iteration: no answer was an ERROR
    assert result.exit == LoopExit.SUCCESS
    assert [r.parity_score for r in result.iterations] == [87, 99.5]
    assert fixes == [(1, 87, SEED_000["recommendations"])]
    first = tmp_path / "screenshots" / "verify-iterations" / "iteration-001" / "report.json"
    saved = json.loads(first.read_text())
    assert saved["gaps"][0] == SEED_000["gaps"][0]
    assert saved["recommendations"] == SEED_000["recommendations"]
    assert Path(saved["verdict"]["screenshots"]["candidate"]).name == "parity.png"
    prompt = api.requests[0]["messages"][0]["content"][-1]["text"]
    assert "parityScore" in prompt


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ("Looks about 90% the same to me.", "no JSON object"),
        ('{"parityScore": "high", "gaps": []}', "parityScore must be a number"),
        ('```json\n{"verdict": "PASS", "confidence": 99}\n```\n{"verdict": "FAIL"}', "contradicts"),
        ('{"verdict": "MAYBE", "parityScore": 50}', "verdict must be PASS, FAIL or ERROR"),
    ],
    ids=["prose", "bad-score", "contradiction", "bad-verdict"],
)
def test_a_malformed_answer_is_retried_then_the_seed_answer_is_used(
    bad: str, named: str, caplog: pytest.LogCaptureFixture
) -> None:
    waits: list[float] = []
    with (
        MessagesApiStandIn([text_reply(bad), text_reply(fenced(SEED_000))]) as api,
        caplog.at_level(logging.WARNING, logger="askcache.parity"),
    ):
        result = judge_with_retry(VisionJudge(api.client()), page(), page(10), sleep=waits.append)
    assert (len(api.requests), waits) == (2, [2.0])
    assert "verdict (attempt 1/3): ERROR" in caplog.text
    assert named in caplog.text
    assert result.verdict.verdict == "FAIL"
    assert result.report is not None
    assert result.report.recommendations == SEED_000["recommendations"]


def test_the_loop_stops_on_the_error_exit_when_the_judge_never_answers_readably(
    tmp_path: Path,
) -> None:
    fixes: list[int] = []
    with MessagesApiStandIn([text_reply("no idea")] * 3) as api:
        result = auto_verify(
            lambda: (page(), page(10)),
            lambda report, n: fixes.append(n),
            lambda reason, history: True,
            tmp_path,
            judge=VisionJudge(api.client()),
            sleep=lambda s: None,
        )
    assert (len(api.requests), fixes) == (3, [])
    assert (result.exit, result.proceed) == (LoopExit.ERROR, False)
    assert result.error is not None
    assert "vision judge could not compare" in result.error
    summary = json.loads((Path(result.folder) / "summary.json").read_text())
    assert (summary["exit"], summary["error"]) == ("error", result.error)


def test_the_total_time_limit_cuts_the_request_timeout() -> None:
    def slow(body: dict[str, Any]) -> dict[str, Any]:
        import time

        time.sleep(3)
        return text_reply(fenced(SEED_000))

    config = ParityConfig(total_timeout_seconds=1)
    waits: list[float] = []
    with MessagesApiStandIn([slow]) as api:
        result = judge_with_retry(
            VisionJudge(api.client(), config=config), page(), page(), config, sleep=waits.append
        )
        assert len(api.requests) == 1  # no retry: the limit was spent
    assert (result.verdict.verdict, waits) == ("ERROR", [])
    assert "APITimeoutError" in result.verdict.visual_differences[0].description


# --- attempts, waits and the total limit (seed 001) ---------------------------------------


class SlowJudge:
    """Errors every time; each attempt takes ``seconds`` of a fake clock."""

    name = "slow"

    def __init__(self, clock: list[float], seconds: float) -> None:
        self.clock, self.seconds = clock, seconds
        self.timeouts: list[float | None] = []

    def judge(
        self, source: Image.Image, candidate: Image.Image, *, timeout: float | None = None
    ) -> Judgement:
        self.timeouts.append(timeout)
        self.clock[0] += self.seconds
        return Judgement(parse_validation_response("page did not load"))


def _run_slow(seconds: float, config: ParityConfig) -> tuple[SlowJudge, list[float]]:
    now = [0.0]
    waits: list[float] = []

    def sleep(wait: float) -> None:
        waits.append(wait)
        now[0] += wait

    judge = SlowJudge(now, seconds)
    judge_with_retry(judge, page(), page(), config, sleep=sleep, clock=lambda: now[0])
    return judge, waits


def test_three_attempts_waiting_2_and_4_seconds(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="askcache.parity"):
        judge, waits = _run_slow(1, ParityConfig())
    assert (len(judge.timeouts), waits) == (3, [2.0, 4.0])
    assert "attempt 3/3" in caplog.text
    assert "attempt 4" not in caplog.text


def test_slow_attempts_share_the_total_limit() -> None:
    judge, waits = _run_slow(300, ParityConfig())  # 600 s per attempt, 660 s in all
    assert judge.timeouts == [600, 358, 54]  # 660 - 300 - 2, then 660 - 602 - 4
    assert waits == [2.0, 4.0]
    judge, waits = _run_slow(650, ParityConfig())
    assert (judge.timeouts, waits) == ([600, 8], [2.0])  # 10 s left: wait 2, try for 8
    judge, waits = _run_slow(659, ParityConfig())
    assert (judge.timeouts, waits) == ([600], [])  # 1 s left: no room for the 2 s wait


def test_max_retries_is_the_seeds_name_for_the_attempt_count() -> None:
    assert ParityConfig(max_retries=5).max_attempts == 5  # type: ignore[call-arg]
    with pytest.raises(InvalidSettingsError, match="max_attempts"):
        ParityConfig(max_attempts=0)


# --- evidence from the library call --------------------------------------------------------


def test_judge_with_retry_attaches_the_evidence(tmp_path: Path) -> None:
    result = judge_with_retry(
        DeterministicJudge(), page(), page(30), evidence=EvidenceFolder(tmp_path)
    )
    shots = result.verdict.screenshots
    assert set(shots) == {"source", "candidate", "diff"}
    assert all(Path(path).parent == tmp_path / "evidence" for path in shots.values())
    with Image.open(shots["candidate"]) as saved:
        assert saved.getpixel((5, 5)) == (255, 0, 0)
    assert judge_with_retry(DeterministicJudge(), page(), page()).verdict.screenshots == {}


def test_parity_report_json_uses_seed_names() -> None:
    report = parse_judge_answer(fenced(SEED_000)).report
    assert isinstance(report, ParityReport)
    assert json.loads(report.to_json()) == SEED_000
