"""Judges decide whether two renderings match. Two ship: mathematical and vision.

Both implement :class:`Judge`: ``judge(source, candidate) -> Judgement``, a verdict and a
parity report, and, for the deterministic judge, a diff image.
"""

from __future__ import annotations

import base64
import io
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from PIL import Image

from askcache.parity.compare import compare_images
from askcache.parity.config import DEFAULT_CONFIG, ParityConfig
from askcache.parity.models import ParityReport, ValidationVerdict, VisualDifference
from askcache.parity.parsing import parse_judge_answer

if TYPE_CHECKING:
    import anthropic

__all__ = ["VALIDATION_PROMPT", "DeterministicJudge", "Judge", "Judgement", "VisionJudge"]

logger = logging.getLogger(__name__)


@dataclass
class Judgement:
    """A judge's answer."""

    verdict: ValidationVerdict
    """PASS, FAIL or ERROR, with differences."""
    report: ParityReport | None = None
    """Parity score and located gaps, when the judge measures them."""
    diff_image: Image.Image | None = None
    """Changed areas highlighted, when the judge draws them."""


class Judge(Protocol):
    """Anything that compares two renderings."""

    name: str
    """Short name for logs and reports."""

    def judge(
        self, source: Image.Image, candidate: Image.Image, *, timeout: float | None = None
    ) -> Judgement:
        """Compare ``candidate`` with ``source`` within ``timeout`` seconds (``None``: the
        judge's own limit). A judge that cannot be slow may ignore ``timeout``."""
        ...


class DeterministicJudge:
    """No model: a pixel diff on a grid (:func:`~askcache.parity.compare.compare_images`).

    PASS when no gap is found (confidence 100: the measure is exact), FAIL otherwise, with a
    ``layout`` difference per gap.
    """

    name = "deterministic"

    def __init__(self, config: ParityConfig = DEFAULT_CONFIG) -> None:
        self.config = config

    def judge(
        self, source: Image.Image, candidate: Image.Image, *, timeout: float | None = None
    ) -> Judgement:
        """Compare pixel by pixel (fast and bounded: ``timeout`` is not needed)."""
        comparison = compare_images(source, candidate, self.config)
        report = comparison.report
        severity = {"high": "critical", "medium": "major", "low": "minor"}
        differences = [
            VisualDifference.model_validate(
                {
                    "type": "layout",
                    "description": f"{gap.area}: {gap.issue}",
                    "severity": severity[gap.severity],
                }
            )
            for gap in report.gaps
        ]
        verdict = ValidationVerdict(
            verdict="FAIL" if differences else "PASS",
            confidence=100,
            visual_differences=differences,
            summary=(
                f"parity {report.parity_score:.2f}: {len(differences)} area(s) differ"
                if differences
                else "The renderings are identical within the pixel tolerance."
            ),
        )
        return Judgement(verdict=verdict, report=report, diff_image=comparison.diff_image)


VALIDATION_PROMPT = """You are a visual regression detector comparing two screenshots of one page.
The first image is the SOURCE (baseline); the second is the CANDIDATE (rebuild or new version).

Your task: report the visual differences a user would notice, score how close the CANDIDATE
is to the SOURCE, and say what to change in the CANDIDATE to close each gap.
Expected: ZERO differences. Ignore differences a user cannot see.

Respond with JSON only, in a ```json block, with exactly this structure:
```json
{
  "verdict": "PASS" | "FAIL" | "ERROR",
  "confidence": 0-100,
  "parityScore": 0-100,
  "gaps": [
    {"area": "where on the page, e.g. Hero section", "issue": "what differs",
     "severity": "high" | "medium" | "low",
     "type": "layout" | "styling" | "content" | "interaction" | "console_error"}
  ],
  "recommendations": ["one concrete change to the CANDIDATE per line"],
  "summary": "One sentence summary"
}
```
parityScore: 100 means identical, 0 means nothing alike.
PASS: no visual differences (an empty gaps list; confidence at least 80).
FAIL: one or more differences, each one gap. ERROR: you could not compare (an image is
blank, cut off or missing). Give exactly one verdict.
Do not change anything yourself: report and recommend only."""


def _image_block(image: Image.Image) -> dict[str, Any]:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


class VisionJudge:
    """Claude compares the two screenshots, through the caller's ``anthropic`` client.

    It asks for seed 001's verdict and seed 000's parity report in one JSON answer
    (:data:`VALIDATION_PROMPT`) and reads it with :func:`parse_judge_answer`: the judgement
    carries the verdict and a :class:`ParityReport` (score, located gaps, recommendations)
    for the auto-verify loop's fix step. An answer that cannot be read is an ERROR verdict
    with no report (which the retry logic retries); a failed request raises. It uses a copy
    of ``client`` without the client's own retries: :func:`judge_with_retry` makes the
    attempts, within the total time limit.
    """

    name = "vision"

    def __init__(
        self,
        client: anthropic.Anthropic,
        *,
        model: str | None = None,
        config: ParityConfig = DEFAULT_CONFIG,
        max_tokens: int = 2048,
    ) -> None:
        from askcache.conversation.speakers import DEFAULT_MODEL

        # The judge's attempts (judge_with_retry) replace the client's own retries, which
        # would otherwise repeat a timed-out request past the total time limit.
        self.client = client.with_options(timeout=config.judge_timeout_seconds, max_retries=0)
        self.model = model or DEFAULT_MODEL
        self.config = config
        self.max_tokens = max_tokens

    def judge(
        self, source: Image.Image, candidate: Image.Image, *, timeout: float | None = None
    ) -> Judgement:
        """One request; ``timeout`` (seconds) caps it below ``config.judge_timeout_seconds``."""
        content: list[Any] = [
            {"type": "text", "text": "SOURCE:"},
            _image_block(source),
            {"type": "text", "text": "CANDIDATE:"},
            _image_block(candidate),
            {"type": "text", "text": VALIDATION_PROMPT},
        ]
        limit = self.config.judge_timeout_seconds
        response = self.client.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            messages=[{"role": "user", "content": content}],
            timeout=limit if timeout is None else min(limit, timeout),
        )
        text = "".join(getattr(block, "text", "") for block in response.content)
        answer = parse_judge_answer(text, self.config)
        return Judgement(verdict=answer.verdict, report=answer.report)
