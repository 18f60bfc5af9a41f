"""Tone: the brightness and contrast of a region, which perceptual hashes normalise away.

A perceptual hash compares a region's pattern with its own median, so a region dimmed by a
dialog's backdrop, or an element faded to ``opacity: 0.4`` (how web pages and toolkits show
"disabled"), hashes the same as before. Two numbers per region see it: the mean grey level
(dimming moves it) and the standard deviation of the grey levels (fading lowers it). A 3 %
brightness change or a JPEG re-encode moves either by a few percent; a backdrop or a fade by
tens of percent.

Stored per step as 8 hex digits: mean and deviation (0-255 each) of the main region, then of
the detail region. These are two statistics per region, not pixels: nothing of the screen's
content can be read back from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from askcache.foundation.errors import InvalidHashError

__all__ = ["Tone", "decode_tones", "encode_tones", "tone_change", "tone_of"]

MEAN_FLOOR = 32.0
"""Below this mean grey level a relative change of the mean is measured against this level
(near black, a few levels would otherwise be a large ratio)."""
CONTRAST_FLOOR = 8.0
"""Below this deviation a relative change of contrast is measured against it (a flat region's
contrast is mostly noise)."""


@dataclass(frozen=True)
class Tone:
    """Mean and standard deviation of a region's grey levels (0-255)."""

    mean: int
    """Mean grey level, rounded."""
    contrast: int
    """Standard deviation of the grey levels, rounded."""


def tone_of(image: Image.Image) -> Tone:
    """The tone of a (cropped) image."""
    pixels = np.asarray(image.convert("L"), dtype=np.float32)
    if pixels.size == 0:
        return Tone(0, 0)
    return Tone(round(float(pixels.mean())), round(float(pixels.std())))


def tone_change(recorded: Tone, current: Tone) -> tuple[float, float]:
    """Relative change of the mean and of the contrast, each 0 (same) to 1."""
    mean = abs(current.mean - recorded.mean) / max(recorded.mean, current.mean, MEAN_FLOOR)
    contrast = abs(current.contrast - recorded.contrast) / max(
        recorded.contrast, current.contrast, CONTRAST_FLOOR
    )
    return mean, contrast


def encode_tones(tones: list[Tone]) -> str:
    """Hex text of the tones, two bytes each (mean, deviation)."""
    return "".join(f"{min(255, t.mean):02x}{min(255, t.contrast):02x}" for t in tones)


def decode_tones(text: str) -> list[Tone]:
    """The tones :func:`encode_tones` wrote.

    Raises:
        InvalidHashError: not hex, or not a whole number of tones.
    """
    try:
        raw = bytes.fromhex(text)
    except (TypeError, ValueError):
        raise InvalidHashError(f"visual tone {text!r} is not a hex string") from None
    if len(raw) % 2 or not raw:
        raise InvalidHashError(f"visual tone {text!r}: expected 4 hex digits per region")
    return [Tone(raw[i], raw[i + 1]) for i in range(0, len(raw), 2)]
