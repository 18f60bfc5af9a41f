"""Visual parity verification: do two renderings of a screen or page match?

Judges return structured verdicts (PASS / FAIL / ERROR with located differences): a
deterministic pixel-diff judge that needs no model, and a vision judge that asks Claude.
Around them: strict parsing of a model's answer (seed 001's verdict, seed 000's parity score,
gaps and recommendations), retries with exponential backoff within a total time limit, evidence
screenshots (headless Chromium, the desktop), and the auto-verify loop (``askcache verify``).
"""

from askcache.parity.auto_verify import IterationRecord, LoopExit, LoopResult, auto_verify, score_of
from askcache.parity.compare import Comparison, compare_images
from askcache.parity.config import DEFAULT_CONFIG, ParityConfig, Viewport
from askcache.parity.evidence import BrowserCapture, EvidenceFolder, capture_desktop, find_chromium
from askcache.parity.judges import (
    VALIDATION_PROMPT,
    DeterministicJudge,
    Judge,
    Judgement,
    VisionJudge,
)
from askcache.parity.models import Gap, ParityReport, ValidationVerdict, VisualDifference
from askcache.parity.parsing import ParsedAnswer, parse_judge_answer, parse_validation_response
from askcache.parity.retry import judge_with_retry, log_verdict

__all__ = [
    "DEFAULT_CONFIG",
    "VALIDATION_PROMPT",
    "BrowserCapture",
    "Comparison",
    "DeterministicJudge",
    "EvidenceFolder",
    "Gap",
    "IterationRecord",
    "Judge",
    "Judgement",
    "LoopExit",
    "LoopResult",
    "ParityConfig",
    "ParityReport",
    "ParsedAnswer",
    "ValidationVerdict",
    "Viewport",
    "VisionJudge",
    "VisualDifference",
    "auto_verify",
    "capture_desktop",
    "compare_images",
    "find_chromium",
    "judge_with_retry",
    "log_verdict",
    "parse_judge_answer",
    "parse_validation_response",
    "score_of",
]
