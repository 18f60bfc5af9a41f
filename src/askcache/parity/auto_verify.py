"""The auto-verify loop of seed 000: capture -> judge -> fix, until parity or a stop.

Exits: ``success`` (parity score at or above ``config.parity_threshold``, and no
high-severity gap unless ``config.high_gaps_block_success`` is off),
``diminishing_returns`` (less than ``config.min_improvement`` points gained for
``config.diminishing_window`` consecutive iterations), ``max_iterations``, and ``error`` (a
capture or fix step failed, or the judge gave ERROR after all its attempts). On
``diminishing_returns`` and ``max_iterations`` the caller's ``decide`` callback says whether
to proceed anyway. Every iteration writes
``{output_dir}/screenshots/verify-iterations/iteration-NNN/{parity.png, report.json}`` (plus
``source.png``, and ``diff.png`` when the judge draws one); ``summary.json`` is written
next to them at the end, whatever the exit.
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

from askcache.foundation.errors import AskCacheError
from askcache.parity.config import DEFAULT_CONFIG, ParityConfig
from askcache.parity.judges import DeterministicJudge, Judge, Judgement
from askcache.parity.models import ParityReport, ValidationVerdict
from askcache.parity.parsing import derived_score
from askcache.parity.retry import judge_with_retry

__all__ = ["IterationRecord", "LoopExit", "LoopResult", "auto_verify", "score_of"]

logger = logging.getLogger("askcache.parity")

ITERATIONS_FOLDER = Path("screenshots") / "verify-iterations"
"""Where, under the output folder, the loop writes its history (seed 000)."""


class LoopExit(StrEnum):
    """Why the loop stopped."""

    SUCCESS = "success"
    """The parity score reached the threshold (with no high-severity gap left)."""
    DIMINISHING_RETURNS = "diminishing_returns"
    """Too little improvement for too many iterations in a row."""
    MAX_ITERATIONS = "max_iterations"
    """The iteration cap."""
    ERROR = "error"
    """A capture or fix step failed, or the judge could not compare (ERROR verdict after
    all its attempts): nothing to improve on."""


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
    recommendations: list[str] = Field(default_factory=list)
    """What the judge said to change (given to ``fix``)."""
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
    error: str | None = None
    """What went wrong, on the ``error`` exit."""
    folder: str = ""
    """The iteration history's folder (``summary.json`` is in it)."""

    @property
    def final_score(self) -> float:
        """The last pass's score."""
        return self.iterations[-1].parity_score if self.iterations else 0.0


def score_of(judgement: Judgement) -> tuple[float, ParityReport]:
    """The parity report of a judgement: the judge's own, or derived from its verdict.

    A judgement without a report (a judge that gives verdicts only) gets: PASS 100, ERROR 0,
    FAIL 100 minus 10 per critical, 5 per major and 1 per minor difference.
    """
    if judgement.report is not None:
        return judgement.report.parity_score, judgement.report
    verdict = judgement.verdict
    if verdict.verdict == "PASS":
        score = 100.0
    elif verdict.verdict == "ERROR":
        score = 0.0
    else:
        score = derived_score(verdict.visual_differences)
    severity = {"critical": "high", "major": "medium", "minor": "low"}
    gaps = [
        {"area": d.type, "issue": d.description, "severity": severity[d.severity]}
        for d in verdict.visual_differences
    ]
    return score, ParityReport.model_validate({"parityScore": score, "gaps": gaps})


def _failure(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def _trace(exc: Exception) -> bool:
    """A traceback in the log for unexpected failures; askcache's own errors explain themselves."""
    return not isinstance(exc, AskCacheError)


def _save_iteration(
    here: Path,
    iteration: int,
    source: Image.Image,
    candidate: Image.Image,
    judgement: Judgement,
) -> tuple[IterationRecord, ValidationVerdict]:
    """Write one iteration's screenshots and report.json (seed 000's ``parityScore``,
    ``gaps`` and ``recommendations``, plus ``verdict``); the verdict gets the paths."""
    score, report = score_of(judgement)
    here.mkdir(parents=True, exist_ok=True)
    source.save(here / "source.png")
    candidate.save(here / "parity.png")
    shots = {"source": str(here / "source.png"), "candidate": str(here / "parity.png")}
    if judgement.diff_image is not None:
        judgement.diff_image.save(here / "diff.png")
        shots["diff"] = str(here / "diff.png")
    verdict = judgement.verdict.model_copy(update={"screenshots": shots})
    document = {  # seed 000's report at the top, the verdict beside it
        **report.model_dump(mode="json", by_alias=True),
        "verdict": verdict.model_dump(mode="json"),
    }
    (here / "report.json").write_text(json.dumps(document, indent=2))
    record = IterationRecord(
        iteration=iteration,
        parity_score=score,
        verdict=verdict.verdict,
        gaps=len(report.gaps),
        recommendations=report.recommendations,
        folder=str(here),
    )
    return record, verdict


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
    failing report (score, gaps, recommendations) and the iteration number; ``decide`` is
    asked on the ``diminishing_returns`` and ``max_iterations`` exits. An exception from
    ``capture`` or ``fix``, or an ERROR verdict after the judge's attempts, ends the loop on
    the ``error`` exit (the exception is logged, its text kept in ``LoopResult.error``)."""
    judge = judge or DeterministicJudge(config)
    folder = Path(output_dir) / ITERATIONS_FOLDER
    records: list[IterationRecord] = []
    small_steps = 0
    exit_reason = LoopExit.MAX_ITERATIONS
    error: str | None = None
    for iteration in range(1, config.max_iterations + 1):
        try:
            source, candidate = capture()
        except Exception as exc:
            logger.error("iteration %d: capture failed: %s", iteration, exc, exc_info=_trace(exc))
            exit_reason, error = LoopExit.ERROR, f"capture failed: {_failure(exc)}"
            break
        judgement = judge_with_retry(judge, source, candidate, config, sleep=sleep)
        score, report = score_of(judgement)
        record, verdict = _save_iteration(
            folder / f"iteration-{iteration:03d}", iteration, source, candidate, judgement
        )
        records.append(record)
        logger.info("iteration %d: parity %.2f (%s)", iteration, score, verdict.verdict)
        if verdict.verdict == "ERROR":
            exit_reason = LoopExit.ERROR
            error = f"the {judge.name} judge could not compare: " + "; ".join(
                d.description for d in verdict.visual_differences
            )
            break
        high = [gap for gap in report.gaps if gap.severity == "high"]
        if score >= config.parity_threshold and not (high and config.high_gaps_block_success):
            exit_reason = LoopExit.SUCCESS
            break
        if len(records) > 1:
            gained = score - records[-2].parity_score
            small_steps = small_steps + 1 if gained < config.min_improvement else 0
            if small_steps >= config.diminishing_window:
                exit_reason = LoopExit.DIMINISHING_RETURNS
                break
        if iteration < config.max_iterations:
            try:
                fix(report, iteration)
            except Exception as exc:
                logger.error("iteration %d: fix failed: %s", iteration, exc, exc_info=_trace(exc))
                exit_reason, error = LoopExit.ERROR, f"fix failed: {_failure(exc)}"
                break
    if exit_reason == LoopExit.SUCCESS:
        proceed = True
    elif exit_reason == LoopExit.ERROR:
        proceed = False
    else:
        proceed = bool(decide(exit_reason, records))
    result = LoopResult(
        exit=exit_reason,
        proceed=proceed,
        threshold=config.parity_threshold,
        iterations=records,
        error=error,
        folder=str(folder),
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(
        json.dumps({**result.model_dump(mode="json"), "final_score": result.final_score}, indent=2)
    )
    return result
