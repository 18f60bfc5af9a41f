"""The text of the label under an action point, read by OCR, and whether two readings agree.

:func:`read_label` cuts the label out (:mod:`.label_crop`: a control's face and its glyphs, or
the text line under the point) and reads it with the process's engine (:mod:`.ocr_engine`:
Tesseract in process). What it returns is small (:class:`LabelReading`): the text, normalised
for comparison (:func:`normalise_label`), where its glyphs are, and the engine's confidence.
A label it cannot read, or reads with a confidence under :data:`MIN_LABEL_CONFIDENCE`, is
``None``: unreadable is never evidence, either way.

:func:`same_label` compares two texts conservatively: the same text after normalisation is
the same label; any other text is another label (a relabel 7 -> 9, Save -> Save As). A
re-read of the same pixels always gives the same reading (the engine is deterministic). Text
read by OCR can therefore refuse an action on its own (the label changed), and can allow one
only together with an appearance check.

Case is kept: folding it turned no comparison of the tuning set from "another" to "the same"
at the confidence threshold (``bench/label_ocr.py``: a misread case comes with a low
confidence), and a case change can be a real relabel (``x`` -> ``X`` on a calculator). Kept
text is also what ``askcache show`` prints as it was read.

Without the engine (the ``anchors`` extra's ``tesserocr``, Debian's ``tesseract-ocr-eng``)
:func:`read_label` reads nothing (``None``: pixels decide, as without a label) and says so
once in the log; :func:`~askcache.fingerprint.ocr_engine.label_engine_available` tells
beforehand, :func:`~askcache.fingerprint.ocr_engine.label_engine` raises
:class:`~askcache.foundation.errors.MissingDependencyError` with the install hint.
Thread-safe: the engine is shared by the process and reads under a lock.
"""

from __future__ import annotations

import logging
import unicodedata
from dataclasses import dataclass

from PIL import Image

from askcache.fingerprint.label_crop import LabelCrop, label_crop
from askcache.fingerprint.ocr_engine import TesseractEngine, label_engine
from askcache.foundation.errors import MissingDependencyError
from askcache.foundation.geometry import Point

__all__ = [
    "MIN_LABEL_CONFIDENCE",
    "LabelReading",
    "normalise_label",
    "read_crop",
    "read_label",
    "same_label",
]

logger = logging.getLogger(__name__)

MIN_LABEL_CONFIDENCE = 0.6
"""Below this engine confidence a reading is ``None``. Tuned on ``bench/label_ocr.py``'s
tuning set: from no threshold to 0.6, wrong readings fell from 37 to 18 of 240 and correct
ones from 202 to 194 (docs/benchmarks.md, "Label OCR")."""

_TEXT_CHARS = 200
"""The longest text a reading keeps."""

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

_warned: list[bool] = []
"""Whether the missing engine was logged (once a process)."""


@dataclass(frozen=True)
class LabelReading:
    """The label under an action point as OCR read it."""

    text: str
    """The text, normalised (:func:`normalise_label`); never empty."""
    box: tuple[int, int, int, int]
    """Where its glyphs are on the screenshot (``x``, ``y``, width, height)."""
    confidence: float = 1.0
    """The engine's confidence, 0 to 1 (at least :data:`MIN_LABEL_CONFIDENCE`)."""
    digest: str | None = None
    """The digest of the crop it was read from (:meth:`.label_crop.LabelCrop.digest`)."""
    read: bool = True
    """False when the engine was not run: the crop was the recorded one (``recorded``)."""


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
    recorded: tuple[str, str] | None = None,
) -> LabelReading | None:
    """The label under ``point`` on ``screenshot``; ``box`` (``x``, ``y``, width, height:
    the element's, where an accessibility tree gave it) bounds the search. ``None``: nothing
    readable there, or no OCR engine installed.

    ``recorded``: the text read when recorded and its crop's digest. A crop with that digest
    is the same picture, which the engine (deterministic) reads as then: it is not read again
    (a few milliseconds saved on every unchanged step)."""
    crop = label_crop(screenshot, point, box)
    if crop is None:
        return None
    digest = crop.digest()
    left, top, right, bottom = crop.box
    if recorded is not None and recorded[1] == digest:
        return LabelReading(
            text=normalise_label(recorded[0]),
            box=(left, top, right - left, bottom - top),
            digest=digest,
            read=False,
        )
    return read_crop(crop, engine=engine, min_confidence=min_confidence)


def read_crop(
    crop: LabelCrop,
    *,
    engine: TesseractEngine | None = None,
    min_confidence: float = MIN_LABEL_CONFIDENCE,
) -> LabelReading | None:
    """The text of a label already cut out (:func:`~.label_crop.label_crop`), read by the
    engine; ``None`` as for :func:`read_label`."""
    if engine is None:
        try:
            engine = label_engine()
        except MissingDependencyError as error:
            if not _warned:
                _warned.append(True)
                logger.warning("labels are not read: %s", error)
            return None
    reading = engine.read(crop.image)
    text = normalise_label(reading.text)
    if not text or reading.confidence < min_confidence:
        return None
    left, top, right, bottom = crop.box
    return LabelReading(
        text=text,
        box=(left, top, right - left, bottom - top),
        confidence=round(reading.confidence, 3),
        digest=crop.digest(),
    )


def same_label(recorded: str, now: str) -> bool:
    """Whether two texts read by OCR are the same label: equal once normalised. Anything
    else is another label; a missing reading is the caller's "no evidence"."""
    return normalise_label(recorded) == normalise_label(now)
