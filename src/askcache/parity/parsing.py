"""Reading a judge's free text as a verdict and a parity report, strictly, without raising.

Two answer shapes are read, alone or merged in one JSON object:

* seed 001's verdict: ``verdict``, ``confidence``, ``visual_differences`` [{``type``,
  ``description``, ``severity`` critical | major | minor}], ``summary``;
* seed 000's parity report: ``parityScore``, ``gaps`` [{``area``, ``issue``, ``severity``
  high | medium | low}], ``recommendations``.

Whatever one shape lacks is derived from the other, so every readable answer gives both a
verdict and a report.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from askcache.parity.config import DEFAULT_CONFIG, ParityConfig
from askcache.parity.models import Gap, ParityReport, ValidationVerdict, VisualDifference

__all__ = ["ParsedAnswer", "derived_score", "parse_judge_answer", "parse_validation_response"]

logger = logging.getLogger(__name__)

_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_TYPES = {"layout", "styling", "content", "interaction", "console_error"}
_SEVERITIES = {"critical", "major", "minor"}
_GAP_SEVERITIES = {"high", "medium", "low"}
_TO_GAP = {"critical": "high", "major": "medium", "minor": "low"}
_TO_DIFFERENCE = {high: low for low, high in _TO_GAP.items()}
_SEVERITY_COST = {"critical": 10, "major": 5, "minor": 1}
_KEYS = ("verdict", "parityScore")


@dataclass(frozen=True)
class ParsedAnswer:
    """What a judge's answer says."""

    verdict: ValidationVerdict
    """PASS, FAIL or ERROR, with differences (an ERROR when the answer could not be read)."""
    report: ParityReport | None
    """Score, gaps and recommendations; ``None`` when the answer could not be read."""


def _error(text: str, description: str) -> ParsedAnswer:
    verdict = ValidationVerdict.error(
        description,
        kind="parse_error",
        summary="The judge's answer could not be read as a verdict.",
        raw_output=text,
    )
    return ParsedAnswer(verdict, None)


def derived_score(differences: list[VisualDifference]) -> float:
    """A parity score for a verdict without one: 100 minus 10 per critical, 5 per major and
    1 per minor difference, at least 0."""
    return max(0.0, 100.0 - sum(_SEVERITY_COST[d.severity] for d in differences))


def _difference(item: Any) -> VisualDifference:
    """A listed difference, kept even when its type or severity is not one of ours."""
    if not isinstance(item, dict):
        return VisualDifference(type="content", description=str(item), severity="major")
    kind = str(item.get("type", "")).lower()
    severity = str(item.get("severity", "")).lower()
    description = str(item.get("description", ""))
    if kind not in _TYPES:
        description = f"[{item.get('type')}] {description}".strip()
    return VisualDifference.model_validate(
        {
            "type": kind if kind in _TYPES else "content",
            "description": description,
            "severity": severity if severity in _SEVERITIES else "major",
        }
    )


def _gap(item: Any) -> Gap:
    """A listed gap, kept even when it lacks an area or has an unknown severity."""
    if not isinstance(item, dict):
        return Gap(area="unspecified", issue=str(item), severity="medium")
    severity = str(item.get("severity", "")).lower()
    severity = _TO_GAP.get(severity, severity)  # a seed-001 severity on a gap
    return Gap(
        area=str(item.get("area") or "unspecified"),
        issue=str(item.get("issue") or item.get("description") or ""),
        severity=severity if severity in _GAP_SEVERITIES else "medium",
    )


def _gap_difference(gap: Gap, item: Any) -> VisualDifference:
    """A gap as a seed-001 difference (its ``type`` when the answer gave one we know)."""
    kind = str(item.get("type", "")).lower() if isinstance(item, dict) else ""
    return VisualDifference.model_validate(
        {
            "type": kind if kind in _TYPES else "content",
            "description": f"{gap.area}: {gap.issue}",
            "severity": _TO_DIFFERENCE[gap.severity],
        }
    )


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _objects(text: str) -> list[dict[str, Any]]:
    """JSON objects in the text carrying a verdict or a parity score: fenced blocks first,
    then every balanced ``{...}`` anywhere (nested ones included)."""
    snippets = [match.group(1) for match in _FENCED.finditer(text)]
    decoder = json.JSONDecoder()
    for start in (i for i, char in enumerate(text) if char == "{"):
        try:
            _, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        snippets.append(text[start:end])
    found = []
    for snippet in snippets:
        try:
            parsed = json.loads(snippet)
        except ValueError:
            continue
        if isinstance(parsed, dict) and any(key in parsed for key in _KEYS):
            found.append(parsed)
    return found


def _number(value: Any) -> float | None:
    """A finite number (or numeric text such as ``"87%"``), else ``None``."""
    if isinstance(value, str):
        value = value.strip().rstrip("%").strip()
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def parse_validation_response(
    text: Any, config: ParityConfig = DEFAULT_CONFIG
) -> ValidationVerdict:
    """The verdict in a judge's answer (see :func:`parse_judge_answer`). Never raises."""
    return parse_judge_answer(text, config).verdict


def parse_judge_answer(text: Any, config: ParityConfig = DEFAULT_CONFIG) -> ParsedAnswer:
    """The verdict and the parity report in a judge's answer: JSON in a ```json block, or raw
    JSON in the text, in seed 001's shape, seed 000's, or both merged.

    Strict rules: an answer that carries two different verdicts or two different parity
    scores is an ERROR naming the contradiction; a PASS that lists differences or gaps, or
    whose ``parityScore`` is below ``config.parity_threshold``, is a FAIL; a PASS the judge
    stated below ``config.min_confidence`` is an ERROR; no JSON, or neither a verdict nor a
    parity score, is an ERROR with a ``parse_error`` difference. An answer in seed 000's shape
    alone (no verdict) is judged by its score: PASS at ``parityScore >=
    config.parity_threshold`` with no gap, FAIL otherwise (it states no confidence: 0 is
    recorded and the confidence rule, which is about a PASS the judge claims, does not
    apply). Never raises.
    """
    try:
        return _parse(text, config)
    except Exception as exc:  # the promise is "never raises": report, don't crash
        return _error(str(text)[:10000], f"unexpected {type(exc).__name__}: {exc}")


def _contradiction(objects: list[dict[str, Any]]) -> str | None:
    verdicts = sorted({str(o["verdict"]).strip().upper() for o in objects if "verdict" in o})
    if len(verdicts) > 1:
        return f"the answer contradicts itself: it carries the verdicts {' and '.join(verdicts)}"
    scores = sorted(
        {s for o in objects if "parityScore" in o and (s := _number(o["parityScore"])) is not None}
    )
    if len(scores) > 1:
        listed = " and ".join(f"{s:g}" for s in scores)
        return f"the answer contradicts itself: it carries the parity scores {listed}"
    return None


def _parse(text: Any, config: ParityConfig) -> ParsedAnswer:
    if not isinstance(text, str):
        return _error(repr(text), f"expected text, got {type(text).__name__}")
    objects = _objects(text)
    if not objects:
        return _error(text, "no JSON object with a 'verdict' or 'parityScore' field in the answer")
    contradiction = _contradiction(objects)
    if contradiction:
        return _error(text, contradiction)
    data = objects[0]
    raw_score = data.get("parityScore")
    score = _number(raw_score)
    if "parityScore" in data and (score is None or not 0 <= score <= 100):
        return _error(text, f"parityScore must be a number from 0 to 100, got {raw_score!r}")
    raw_gaps = _as_list(data.get("gaps"))
    gaps = [_gap(item) for item in raw_gaps]
    differences = [_difference(item) for item in _as_list(data.get("visual_differences"))]
    if not differences:
        differences = [_gap_difference(gap, item) for gap, item in zip(gaps, raw_gaps, strict=True)]
    if not gaps:
        gaps = [
            Gap(area=d.type, issue=d.description, severity=_TO_GAP[d.severity]) for d in differences
        ]
    stated = "verdict" in data
    if stated:
        verdict = str(data["verdict"]).strip().upper()
        if verdict not in ("PASS", "FAIL", "ERROR"):
            return _error(text, f"verdict must be PASS, FAIL or ERROR, got {data['verdict']!r}")
    else:
        assert score is not None
        verdict = "PASS" if score >= config.parity_threshold and not gaps else "FAIL"
    confidence = _number(data.get("confidence"))
    recommendations = [str(item) for item in _as_list(data.get("recommendations"))]
    summary = str(data.get("summary", ""))
    if not stated and not summary:
        summary = f"parity score {score:g} (the answer gave no verdict: judged by its score)"
    try:
        result = ValidationVerdict.model_validate(
            {
                "verdict": verdict,
                "confidence": max(0, min(100, round(confidence or 0))),
                "visual_differences": differences,
                "summary": summary,
                "raw_output": text,
            }
        )
        if score is None:
            score = 0.0 if verdict == "ERROR" else derived_score(differences)
            if verdict == "PASS" and not differences:
                score = 100.0
        report = ParityReport(parity_score=score, gaps=gaps, recommendations=recommendations)
    except (ValidationError, ValueError, OverflowError) as exc:
        return _error(text, f"malformed answer: {exc}")
    if result.verdict == "PASS" and result.visual_differences:
        logger.info("a PASS that lists differences is a FAIL")
        result = result.model_copy(update={"verdict": "FAIL"})
    elif result.verdict == "PASS" and report.parity_score < config.parity_threshold:
        logger.info("a PASS at parity score %g is a FAIL", report.parity_score)
        result = result.model_copy(update={"verdict": "FAIL"})
    elif stated and result.verdict == "PASS" and result.confidence < config.min_confidence:
        logger.info(
            "PASS at confidence %d < %d is an ERROR", result.confidence, config.min_confidence
        )
        result = result.model_copy(update={"verdict": "ERROR"})
    return ParsedAnswer(result, report)
