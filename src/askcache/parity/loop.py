"""The auto-verify loop of seed 000: capture -> judge -> fix, until parity or a stop.

Exits: ``success`` (parity score at or above ``config.parity_threshold``),
``diminishing_returns`` (less than ``config.min_improvement`` points gained for
``config.diminishing_window`` consecutive iterations) and ``max_iterations``. On the last two
the caller's ``decide`` callback says whether to proceed anyway. Every iteration writes
``verify-iterations/iteration-NNN/{parity.png, report.json}`` (and ``diff.png`` when the judge
draws one); ``verify-iterations/summary.json`` is written at the end.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from askcache.parity.config import DEFAULT_CONFIG, ParityConfig
from askcache.parity.judges import DeterministicJudge, Judge, Judgement
from askcache.parity.models import ParityReport
from askcache.parity.retry import judge_with_retry

__all__ = ["IterationRecord", "LoopExit", "LoopResult", "auto_verify", "score_of"]

logger = logging.getLogger("askcache.parity")

_SEVERITY_COST = {"critical": 10, "major": 5, "minor": 1}


class LoopExit(StrEnum):
    """Why the loop stopped."""

    SUCCESS = "success"
    """The parity score reached the threshold."""
    DIMINISHING_RETURNS = "diminishing_returns"
    """Too little improvement for too many iterations in a row."""
    MAX_ITERATIONS = "max_iterations"
    """The iteration cap."""


class IterationRecord(BaseModel):
    """One pass of the loop."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    iteration: int
    """1-based."""
    parity_score: float
    """Score of this pass."""
    verdict: str
    """PASS, FAIL or ERROR."""
    gaps: int
    """Number of gaps."""
    folder: str
    """Where its artifacts are."""


class LoopResult(BaseModel):
    """How the loop ended."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    exit: LoopExit
    """Why it stopped."""
    proceed: bool
    """True on success, else what ``decide`` answered."""
    threshold: float
    """The parity threshold used."""
    iterations: list[IterationRecord] = Field(default_factory=list)
    """Every pass, in order."""

    @property
    def final_score(self) -> float:
        """The last pass's score."""
        return self.iterations[-1].parity_score if self.iterations else 0.0


def score_of(judgement: Judgement) -> tuple[float, ParityReport]:
    """The parity report of a judgement: measured, or derived from a verdict.

    A judge without a measure (the vision judge) gets: PASS 100, ERROR 0, FAIL 100 minus 10
    per critical, 5 per major and 1 per minor difference.
    """
    if judgement.report is not None:
        return judgement.report.parity_score, judgement.report
    verdict = judgement.verdict
    if verdict.verdict == "PASS":
        score = 100.0
    elif verdict.verdict == "ERROR":
        score = 0.0
    else:
        score = max(
            0.0, 100.0 - sum(_SEVERITY_COST[d.severity] for d in verdict.visual_differences)
        )
    severity = {"critical": "high", "major": "medium", "minor": "low"}
    gaps = [
        {"area": d.type, "issue": d.description, "severity": severity[d.severity]}
        for d in verdict.visual_differences
    ]
    return score, ParityReport.model_validate({"parityScore": score, "gaps": gaps})


def auto_verify(
    capture: Callable[[], tuple[Image.Image, Image.Image]],
    fix: Callable[[ParityReport, int], None],
    decide: Callable[[LoopExit, list[IterationRecord]], bool],
    output_dir: Path,
    *,
    judge: Judge | None = None,
    config: ParityConfig = DEFAULT_CONFIG,
    sleep: Callable[[float], None] = time.sleep,
) -> LoopResult:
    """Run the loop. ``capture`` returns (source, candidate) screenshots; ``fix`` gets each
    failing report and the iteration number; ``decide`` is asked on a non-success exit."""
    judge = judge or DeterministicJudge(config)
    folder = Path(output_dir) / "verify-iterations"
    records: list[IterationRecord] = []
    small_steps = 0
    exit_reason = LoopExit.MAX_ITERATIONS
    for iteration in range(1, config.max_iterations + 1):
        source, candidate = capture()
        judgement = judge_with_retry(judge, source, candidate, config, sleep=sleep)
        score, report = score_of(judgement)
        here = folder / f"iteration-{iteration:03d}"
        here.mkdir(parents=True, exist_ok=True)
        candidate.save(here / "parity.png")
        if judgement.diff_image is not None:
            judgement.diff_image.save(here / "diff.png")
        document = {
            "report": report.model_dump(mode="json", by_alias=True),
            "verdict": judgement.verdict.model_dump(mode="json"),
        }
        (here / "report.json").write_text(json.dumps(document, indent=2))
        records.append(
            IterationRecord(
                iteration=iteration,
                parity_score=score,
                verdict=judgement.verdict.verdict,
                gaps=len(report.gaps),
                folder=str(here),
            )
        )
        logger.info("iteration %d: parity %.2f (%s)", iteration, score, judgement.verdict.verdict)
        if score >= config.parity_threshold:
            exit_reason = LoopExit.SUCCESS
            break
        if len(records) > 1:
            gained = score - records[-2].parity_score
            small_steps = small_steps + 1 if gained < config.min_improvement else 0
            if small_steps >= config.diminishing_window:
                exit_reason = LoopExit.DIMINISHING_RETURNS
                break
        if iteration < config.max_iterations:
            fix(report, iteration)
    proceed = True if exit_reason == LoopExit.SUCCESS else bool(decide(exit_reason, records))
    result = LoopResult(
        exit=exit_reason, proceed=proceed, threshold=config.parity_threshold, iterations=records
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(
        json.dumps({**result.model_dump(mode="json"), "final_score": result.final_score}, indent=2)
    )
    return result
