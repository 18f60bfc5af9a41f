"""Structured verdicts and parity reports, with the seeds' JSON field names."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Gap", "ParityReport", "ValidationVerdict", "VisualDifference"]


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, use_attribute_docstrings=True, extra="ignore")


class VisualDifference(_Model):
    """One difference a judge found."""

    type: Literal[
        "layout", "styling", "content", "interaction", "console_error", "parse_error", "exception"
    ]
    """What kind of difference (``parse_error`` and ``exception`` come from askcache)."""
    description: str
    """What differs."""
    severity: Literal["critical", "major", "minor"]
    """How much it matters."""


class ValidationVerdict(_Model):
    """Whether two renderings match: PASS, FAIL or ERROR (could not compare)."""

    verdict: Literal["PASS", "FAIL", "ERROR"]
    """The outcome."""
    confidence: int = Field(0, ge=0, le=100)
    """The judge's confidence, 0-100."""
    visual_differences: list[VisualDifference] = Field(default_factory=list)
    """What differs; empty for PASS."""
    summary: str = ""
    """One sentence."""
    screenshots: dict[str, str] = Field(default_factory=dict)
    """Evidence: label (``source``, ``candidate``, ``diff``) -> file path."""
    raw_output: str | None = None
    """The judge's raw answer, when it was text."""

    @property
    def passed(self) -> bool:
        """True for PASS."""
        return self.verdict == "PASS"

    @classmethod
    def error(
        cls,
        description: str,
        *,
        kind: Literal["parse_error", "exception"] = "exception",
        summary: str = "The comparison could not be made.",
        raw_output: str | None = None,
    ) -> ValidationVerdict:
        """An ERROR verdict with one critical difference saying why."""
        return cls(
            verdict="ERROR",
            confidence=0,
            visual_differences=[
                VisualDifference(type=kind, description=description, severity="critical")
            ],
            summary=summary,
            raw_output=raw_output,
        )


class Gap(_Model):
    """An area where the candidate differs from the source."""

    area: str
    """Where, in words and pixels."""
    issue: str
    """What differs there."""
    severity: Literal["high", "medium", "low"]
    """How much."""


class ParityReport(_Model):
    """How close a candidate is to its source, 0-100, and what to fix."""

    parity_score: float = Field(alias="parityScore", ge=0, le=100)
    """100 means identical."""
    gaps: list[Gap] = Field(default_factory=list)
    """Areas that differ."""
    recommendations: list[str] = Field(default_factory=list)
    """What to change."""

    def to_json(self) -> str:
        """JSON with the seed's field names (``parityScore``)."""
        return self.model_dump_json(by_alias=True, indent=2)
