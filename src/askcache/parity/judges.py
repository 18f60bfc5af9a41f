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
from askcache.parity.parsing import parse_validation_response

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

    def judge(self, source: Image.Image, candidate: Image.Image) -> Judgement:
        """Compare ``candidate`` with ``source``."""
        ...


class DeterministicJudge:
    """No model: a pixel diff on a grid (:func:`~askcache.parity.compare.compare_images`).

    PASS when no gap is found (confidence 100: the measure is exact), FAIL otherwise, with a
    ``layout`` difference per gap.
    """

    name = "deterministic"

    def __init__(self, config: ParityConfig = DEFAULT_CONFIG) -> None:
        self.config = config

    def judge(self, source: Image.Image, candidate: Image.Image) -> Judgement:
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

Your ONLY task: report visual differences a user would notice. Expected: ZERO differences.
Ignore differences a user cannot see. Do not suggest fixes.

Respond with JSON only, in a ```json block, with exactly this structure:
```json
{
  "verdict": "PASS" | "FAIL" | "ERROR",
  "confidence": 0-100,
  "visual_differences": [
    {"type": "layout" | "styling" | "content" | "interaction" | "console_error",
     "description": "Brief description", "severity": "critical" | "major" | "minor"}
  ],
  "summary": "One sentence summary"
}
```
PASS: no visual differences (confidence at least 80). FAIL: one or more differences.
ERROR: you could not compare (an image is blank, cut off or missing)."""


def _image_block(image: Image.Image) -> dict[str, Any]:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


class VisionJudge:
    """Claude compares the two screenshots, through the caller's ``anthropic`` client.

    The answer is read by :func:`parse_validation_response`; any failure to get or read one
    is an ERROR verdict (which the retry logic retries).
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
        from askcache.agent import DEFAULT_MODEL

        self.client = client.with_options(timeout=config.judge_timeout_seconds)
        self.model = model or DEFAULT_MODEL
        self.config = config
        self.max_tokens = max_tokens

    def judge(self, source: Image.Image, candidate: Image.Image) -> Judgement:
        content: list[Any] = [
            {"type": "text", "text": "SOURCE:"},
            _image_block(source),
            {"type": "text", "text": "CANDIDATE:"},
            _image_block(candidate),
            {"type": "text", "text": VALIDATION_PROMPT},
        ]
        response = self.client.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            messages=[{"role": "user", "content": content}],
        )
        text = "".join(getattr(block, "text", "") for block in response.content)
        return Judgement(verdict=parse_validation_response(text, self.config))
