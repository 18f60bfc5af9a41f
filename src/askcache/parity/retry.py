"""Judging with retries: ERROR verdicts and exceptions are retried with exponential backoff."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from PIL import Image

from askcache.parity.config import DEFAULT_CONFIG, ParityConfig
from askcache.parity.judges import Judge, Judgement
from askcache.parity.models import ValidationVerdict

__all__ = ["judge_with_retry", "log_verdict"]

logger = logging.getLogger("askcache.parity")


def log_verdict(verdict: ValidationVerdict, attempt: int = 1) -> None:
    """Log a verdict through the standard ``logging`` module (logger ``askcache.parity``)."""
    level = logging.INFO if verdict.verdict == "PASS" else logging.WARNING
    logger.log(
        level,
        "verdict (attempt %d): %s, confidence %d%%",
        attempt,
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


def judge_with_retry(
    judge: Judge,
    source: Image.Image,
    candidate: Image.Image,
    config: ParityConfig = DEFAULT_CONFIG,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> Judgement:
    """Ask ``judge`` once, and again up to ``config.max_retries`` times while it fails.

    PASS and FAIL return at once. ERROR verdicts and exceptions are retried after waiting
    ``backoff_base_seconds ** n`` before retry n (2, 4, 8 s by default); the last ERROR is
    returned, and a last exception becomes an ERROR verdict with an ``exception`` difference.
    """
    last: Judgement | None = None
    attempts = config.max_retries + 1
    for attempt in range(1, attempts + 1):
        try:
            last = judge.judge(source, candidate)
        except Exception as exc:
            logger.warning(
                "%s judge raised on attempt %d/%d: %s", judge.name, attempt, config.max_retries, exc
            )
            last = Judgement(
                ValidationVerdict.error(
                    f"{type(exc).__name__}: {exc}", summary="The judge failed.", raw_output=str(exc)
                )
            )
        else:
            log_verdict(last.verdict, attempt)
            if last.verdict.verdict != "ERROR":
                return last
        if attempt < attempts:
            wait = config.backoff_base_seconds**attempt
            logger.info("retrying in %.0f s", wait)
            sleep(wait)
    assert last is not None
    return last
