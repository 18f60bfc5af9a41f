"""Reading a judge's free text as a verdict, strictly, without ever raising."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from pydantic import ValidationError

from askcache.parity.config import DEFAULT_CONFIG, ParityConfig
from askcache.parity.models import ValidationVerdict, VisualDifference

__all__ = ["parse_validation_response"]

logger = logging.getLogger(__name__)

_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def _error(text: str, description: str) -> ValidationVerdict:
    return ValidationVerdict.error(
        description,
        kind="parse_error",
        summary="The judge's answer could not be read as a verdict.",
        raw_output=text,
    )


_TYPES = {"layout", "styling", "content", "interaction", "console_error"}
_SEVERITIES = {"critical", "major", "minor"}


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


def _candidates(text: str) -> list[str]:
    """JSON objects in the text: fenced blocks first, then every balanced {...} with a verdict."""
    found = [match.group(1) for match in _FENCED.finditer(text)]
    decoder = json.JSONDecoder()
    for start in (i for i, char in enumerate(text) if char == "{"):
        try:
            _, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if '"verdict"' in text[start:end]:
            found.append(text[start:end])
    return found


def parse_validation_response(
    text: Any, config: ParityConfig = DEFAULT_CONFIG
) -> ValidationVerdict:
    """The verdict in a judge's answer: JSON in a ```json block, or raw JSON in the text.

    Strict rules: a PASS that lists differences is a FAIL; a PASS below
    ``config.min_confidence`` is an ERROR; no JSON, or no verdict, is an ERROR with a
    ``parse_error`` difference. Never raises.
    """
    try:
        return _parse(text, config)
    except Exception as exc:  # the promise is "never raises": report, don't crash
        return _error(str(text)[:10000], f"unexpected {type(exc).__name__}: {exc}")


def _parse(text: Any, config: ParityConfig) -> ValidationVerdict:
    if not isinstance(text, str):
        return _error(repr(text), f"expected text, got {type(text).__name__}")
    data: dict[str, Any] | None = None
    for snippet in _candidates(text):
        try:
            parsed = json.loads(snippet)
        except ValueError:
            continue
        if isinstance(parsed, dict) and "verdict" in parsed:
            data = parsed
            break
    if data is None:
        return _error(text, "no JSON object with a 'verdict' field in the answer")
    verdict = str(data.get("verdict", "")).strip().upper()
    if verdict not in ("PASS", "FAIL", "ERROR"):
        return _error(text, f"verdict must be PASS, FAIL or ERROR, got {data.get('verdict')!r}")
    confidence = data.get("confidence", 0)
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        confidence = 0
    raw_differences = data.get("visual_differences") or []
    if not isinstance(raw_differences, list):
        raw_differences = [raw_differences]
    try:
        result = ValidationVerdict.model_validate(
            {
                "verdict": verdict,
                "confidence": max(0, min(100, round(confidence))),
                "visual_differences": [_difference(item) for item in raw_differences],
                "summary": str(data.get("summary", "")),
                "raw_output": text,
            }
        )
    except (ValidationError, ValueError, OverflowError) as exc:
        return _error(text, f"malformed verdict: {exc}")
    if result.verdict == "PASS" and result.visual_differences:
        logger.info("a PASS that lists differences is a FAIL")
        return result.model_copy(update={"verdict": "FAIL"})
    if result.verdict == "PASS" and result.confidence < config.min_confidence:
        logger.info(
            "PASS at confidence %d < %d is an ERROR", result.confidence, config.min_confidence
        )
        return result.model_copy(update={"verdict": "ERROR"})
    return result
