"""The OCR engine that reads a label's crop: Tesseract, in process, through ``tesserocr``.

Chosen by ``bench/label_ocr.py`` (docs/benchmarks.md, "Label OCR"): against ``pytesseract``
(the same Tesseract, one process per read: 30-50 times slower) and RapidOCR (PaddleOCR's
models in ONNX, shipped inside its PyPI package) on labels of programs the tuning never saw.

``tesserocr``'s wheel carries the Tesseract library; the English model is Debian's
``tesseract-ocr-eng`` (``/usr/share/tesseract-ocr/5/tessdata``), or any folder named by
``TESSDATA_PREFIX``. Nothing is downloaded. Both are optional: ``pip install
'askcache[anchors]'`` and ``apt-get install tesseract-ocr-eng``; without them
:func:`label_engine` raises :class:`~askcache.foundation.errors.MissingDependencyError`, and
:func:`label_engine_available` says so without raising.

One engine per process (Tesseract's start-up reads its model: about 100 ms); a Tesseract
instance is not thread-safe, so reads take a lock (a read is a few milliseconds).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from askcache.foundation.errors import MissingDependencyError

__all__ = [
    "OcrReading",
    "TesseractEngine",
    "label_engine",
    "label_engine_available",
    "tessdata_folder",
]

_TESSDATA_FOLDERS = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
    "/opt/homebrew/share/tessdata",
)
_FEATURE = "reading a label's text (OCR)"


@dataclass(frozen=True)
class OcrReading:
    """What an engine read: the text and its confidence (0 to 1)."""

    text: str
    confidence: float


def tessdata_folder() -> Path | None:
    """The folder holding Tesseract's English model (``eng.traineddata``), or ``None``."""
    candidates = [os.environ.get("TESSDATA_PREFIX", ""), *_TESSDATA_FOLDERS]
    for folder in candidates:
        if not folder:
            continue
        path = Path(folder)
        for where in (path, path / "tessdata"):
            if (where / "eng.traineddata").is_file():
                return where
    return None


class TesseractEngine:
    """Tesseract through ``tesserocr``, reading one line at a time."""

    def __init__(self, tessdata: Path) -> None:
        import tesserocr

        self._api: Any = tesserocr.PyTessBaseAPI(
            path=str(tessdata) + os.sep,
            lang="eng",
            psm=tesserocr.PSM.SINGLE_LINE,
            oem=tesserocr.OEM.LSTM_ONLY,
        )
        self._api.SetVariable("user_defined_dpi", "300")
        # the crops are always dark on white: no second pass on an inverted image (it cut
        # the 90th percentile of the reads by a quarter and changed no reading measured)
        self._api.SetVariable("tessedit_do_invert", "0")
        self._lock = threading.Lock()

    def read(self, image: Image.Image) -> OcrReading:
        """Read ``image`` (dark text on white) as one line of text. (Tesseract's
        single-character mode read no lone glyph better in the tuning.)"""
        with self._lock:
            self._api.SetImage(image)
            text = self._api.GetUTF8Text()
            confidence = self._api.MeanTextConf()
            self._api.Clear()
        return OcrReading(text=str(text), confidence=max(0.0, float(confidence)) / 100.0)


_engines: dict[str, TesseractEngine] = {}
"""The process's engine, once made (under :data:`_engines_lock`)."""
_engines_lock = threading.Lock()


def label_engine() -> TesseractEngine:
    """The process's engine, made on first use.

    Raises:
        MissingDependencyError: ``tesserocr`` is not installed, or Tesseract's English model
            is nowhere to be found.
    """
    with _engines_lock:
        if "eng" not in _engines:
            try:
                import tesserocr  # noqa: F401
            except ImportError as error:
                raise MissingDependencyError(
                    _FEATURE, "tesserocr", "pip install 'askcache[anchors]'"
                ) from error
            folder = tessdata_folder()
            if folder is None:
                raise MissingDependencyError(
                    _FEATURE,
                    "tesseract-ocr-eng",
                    "apt-get install tesseract-ocr-eng (or set TESSDATA_PREFIX to a folder "
                    "with eng.traineddata)",
                )
            _engines["eng"] = TesseractEngine(folder)
        return _engines["eng"]


def label_engine_available() -> bool:
    """Whether :func:`label_engine` can make an engine (without making one)."""
    try:
        import tesserocr  # noqa: F401
    except ImportError:
        return False
    return tessdata_folder() is not None
