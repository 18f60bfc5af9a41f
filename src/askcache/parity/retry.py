"""Judging with retries: ERROR verdicts and exceptions are retried with exponential backoff."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable

from PIL import Image

from askcache.parity.config import DEFAULT_CONFIG, ParityConfig
from askcache.parity.evidence import EvidenceFolder
from askcache.parity.judges import Judge, Judgement
from askcache.parity.models import ValidationVerdict

__all__ = ["judge_with_retry", "log_verdict"]

logger = logging.getLogger("askcache.parity")


def log_verdict(verdict: ValidationVerdict, attempt: int = 1, attempts: int = 1) -> None:
    """Log a verdict through the standard ``logging`` module (logger ``askcache.parity``)."""
    level = logging.INFO if verdict.verdict == "PASS" else logging.WARNING
    logger.log(
        level,
        "verdict (attempt %d/%d): %s, confidence %d%%",
        attempt,
        attempts,
        verdict.verdict,
        verdict.confidence,
    )
    for number, difference in enumerate(verdict.visual_differences, 1):
        logger.log(
            level,
            "  %d. [%s] %s: %s",
            number,
            difference.severity,
            difference.type,
            difference.description,
        )
    logger.log(level, "  summary: %s", verdict.summary or "n/a")
    for label, path in verdict.screenshots.items():
        logger.log(level, "  %s screenshot: %s", label, path)


def _accepts_timeout(judge: Judge) -> bool:
    """Whether ``judge.judge`` takes ``timeout`` (judges written before it was added do not:
    they are called without it, and the total limit is kept between their attempts)."""
    try:
        parameters = inspect.signature(judge.judge).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "timeout" or p.kind is p.VAR_KEYWORD for p in parameters)


def _attach(judgement: Judgement, paths: dict[str, str]) -> Judgement:
    verdict = judgement.verdict.model_copy(
        update={"screenshots": {**judgement.verdict.screenshots, **paths}}
    )
    return Judgement(verdict=verdict, report=judgement.report, diff_image=judgement.diff_image)


def judge_with_retry(
    judge: Judge,
    source: Image.Image,
    candidate: Image.Image,
    config: ParityConfig = DEFAULT_CONFIG,
    *,
    evidence: EvidenceFolder | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Judgement:
    """Ask ``judge``, up to ``config.max_attempts`` times (3) while it gives ERROR or raises.

    PASS and FAIL return at once. After failed attempt n it waits
    ``backoff_base_seconds ** n`` (2 s, then 4 s). All attempts and waits fit in
    ``config.total_timeout_seconds``: each attempt's timeout is cut to the time left, and no
    wait or attempt starts once it is spent. The last ERROR is returned; a last exception
    becomes an ERROR verdict with an ``exception`` difference.

    With ``evidence``, both screenshots (and the judge's diff image) are saved there and their
    paths attached to the verdict's ``screenshots`` (``source``, ``candidate``, ``diff``).
    ``sleep`` and ``clock`` are injectable, so tests need not wait.
    """
    deadline = clock() + config.total_timeout_seconds
    paths: dict[str, str] = {}
    if evidence is not None:
        paths = {
            "source": str(evidence.save(source, "source")),
            "candidate": str(evidence.save(candidate, "candidate")),
        }
    last: Judgement | None = None
    attempts = config.max_attempts
    timed = _accepts_timeout(judge)
    for attempt in range(1, attempts + 1):
        timeout = min(config.judge_timeout_seconds, deadline - clock())
        try:
            if timed:
                answer = judge.judge(source, candidate, timeout=timeout)
            else:
                answer = judge.judge(source, candidate)
            last = _attach(answer, paths)
        except Exception as exc:
            logger.warning(
                "%s judge raised on attempt %d/%d: %s", judge.name, attempt, attempts, exc
            )
            last = Judgement(
                ValidationVerdict.error(
                    f"{type(exc).__name__}: {exc}",
                    summary=f"The judge failed on attempt {attempt}/{attempts}.",
                    raw_output=str(exc),
                )
            )
            last = _attach(last, paths)
        else:
            if evidence is not None and last.diff_image is not None:
                last = _attach(last, {"diff": str(evidence.save(last.diff_image, "diff"))})
            log_verdict(last.verdict, attempt, attempts)
            if last.verdict.verdict != "ERROR":
                return last
        if attempt == attempts:
            logger.warning("%d/%d attempts gave no PASS or FAIL", attempt, attempts)
            break
        wait = config.backoff_base_seconds**attempt
        left = deadline - clock()
        if wait >= left:
            logger.warning(
                "total time limit of %.0f s reached after attempt %d/%d: no retry",
                config.total_timeout_seconds,
                attempt,
                attempts,
            )
            break
        logger.info("retrying in %.0f s (attempt %d/%d next)", wait, attempt + 1, attempts)
        sleep(wait)
    assert last is not None
    return last
