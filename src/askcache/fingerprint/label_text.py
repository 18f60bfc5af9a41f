"""The text of the label under an action point, read by OCR, and whether two readings agree.

:func:`read_label` cuts the label out (:mod:`.label_crop`) and reads it with the process's
engine (:mod:`.ocr_engine`). What it returns is small: the text, normalised for comparison
(:func:`normalise_label`), and the engine's confidence. A label it cannot read, or reads with
too little confidence, is ``None``: unreadable is never evidence, either way.

:func:`same_label` compares two readings conservatively: the same text after normalisation is
the same label; any other text is another label (a relabel 7 -> 9 or Save -> Save As); a
missing reading says nothing. A reading can therefore refuse an action on its own (the label
changed), and can only allow one together with an appearance check (the lead's replay code).

Case is kept: folding it turned no comparison of the tuning set from "another" to "the same"
at the confidence threshold (``bench/label_ocr.py``; a misread case comes with a low
confidence), and a case change can be a real relabel (``x`` -> ``X`` on a calculator). Kept
text is also what ``askcache show`` can print as it was read.

Engine missing: :func:`read_label` raises
:class:`~askcache.foundation.errors.MissingDependencyError` (the caller decides; it can ask
:func:`~askcache.fingerprint.ocr_engine.label_engine_available` first and record no label).
Thread-safe: the engine is shared by the process and reads under a lock.
"""

from __future__ import annotations

import unicodedata

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from askcache.fingerprint.label_crop import label_crop
from askcache.fingerprint.ocr_engine import TesseractEngine, label_engine
from askcache.foundation.geometry import Point

__all__ = [
    "MIN_LABEL_CONFIDENCE",
    "LabelText",
    "normalise_label",
    "read_label",
    "same_label",
]

MIN_LABEL_CONFIDENCE = 0.6
"""Below this engine confidence a reading is ``None`` (tuned on ``bench/label_ocr.py``'s
tuning cases: above it, wrong readings were rare; see docs/benchmarks.md)."""

_TEXT_CHARS = 200

_FOLDED = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2014": "-",
        "\u2013": "-",
        "\u2212": "-",
    }
)


class LabelText(BaseModel):
    """The label under an action point as OCR read it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    text: str = Field(min_length=1, max_length=_TEXT_CHARS)
    """The text, normalised (:func:`normalise_label`)."""
    confidence: float = Field(ge=0.0, le=1.0)
    """The engine's confidence, 0 to 1."""


def normalise_label(text: str) -> str:
    """``text`` as it is compared: Unicode NFKC, typographic quotes and dashes made plain,
    whitespace collapsed to single spaces, ends stripped. Case is kept."""
    folded = unicodedata.normalize("NFKC", text).translate(_FOLDED)
    return " ".join(folded.split())[:_TEXT_CHARS]


def read_label(
    screenshot: Image.Image,
    point: Point,
    box: tuple[int, int, int, int] | None = None,
    *,
    engine: TesseractEngine | None = None,
    min_confidence: float = MIN_LABEL_CONFIDENCE,
) -> LabelText | None:
    """The label under ``point`` on ``screenshot``; ``box`` (``x``, ``y``, width, height: the
    element's, where the accessibility tree gave it) bounds the search. ``None``: nothing
    readable there.

    Raises:
        MissingDependencyError: no OCR engine is installed (:func:`.ocr_engine.label_engine`).
    """
    crop = label_crop(screenshot, point, box)
    if crop is None:
        return None
    reader = engine if engine is not None else label_engine()
    reading = reader.read(crop.image)
    text = normalise_label(reading.text)
    if not text or reading.confidence < min_confidence:
        return None
    return LabelText(text=text, confidence=round(reading.confidence, 3))


def same_label(recorded: LabelText | None, now: LabelText | None) -> bool | None:
    """Whether two readings are of the same label: ``True`` (the same normalised text),
    ``False`` (another text: a relabel), ``None`` (either is missing: no evidence)."""
    if recorded is None or now is None:
        return None
    return normalise_label(recorded.text) == normalise_label(now.text)
