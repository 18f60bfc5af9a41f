"""TEMPORARY seam until the OCR engine lands (issue 33): reads nothing."""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image

from askcache.foundation.geometry import Point

__all__ = ["LabelReading", "read_label", "same_label"]


@dataclass(frozen=True)
class LabelReading:
    text: str
    box: tuple[int, int, int, int]


def read_label(
    image: Image.Image, point: Point, box: tuple[int, int, int, int] | None = None
) -> LabelReading | None:
    return None


def same_label(recorded: str, now: str) -> bool:
    return recorded == now
