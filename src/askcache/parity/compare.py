"""A deterministic, mathematical comparison of two renderings: a pixel diff on a grid.

The images are compared pixel by pixel (after bringing the candidate to the source's size);
a pixel changed when a channel differs by more than ``pixel_tolerance``. The image is cut
into ``grid_size`` x ``grid_size`` cells; cells where more than ``cell_tolerance`` of the
pixels changed are gaps, and touching gap cells are merged into one area. The parity score is
the share of unchanged pixels, 0-100.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw
from scipy import ndimage

from askcache.parity.config import DEFAULT_CONFIG, ParityConfig
from askcache.parity.models import Gap, ParityReport

__all__ = ["Comparison", "compare_images"]


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`compare_images`."""

    report: ParityReport
    """Score, located gaps, recommendations."""
    diff_image: Image.Image
    """The source, dimmed, with changed pixels in red and each gap area framed."""
    changed_fraction: float
    """Share of pixels that changed, 0-1."""


def _where(box: tuple[int, int, int, int], size: tuple[int, int]) -> str:
    left, top, right, bottom = box
    x, y = (left + right) / 2 / size[0], (top + bottom) / 2 / size[1]
    vertical = "top" if y < 1 / 3 else ("bottom" if y > 2 / 3 else "middle")
    horizontal = "left" if x < 1 / 3 else ("right" if x > 2 / 3 else "centre")
    return f"{vertical} {horizontal} (x {left}-{right}, y {top}-{bottom})"


def compare_images(
    source: Image.Image, candidate: Image.Image, config: ParityConfig = DEFAULT_CONFIG
) -> Comparison:
    """Compare ``candidate`` with ``source``; identical images score 100 with no gaps."""
    gaps: list[Gap] = []
    if candidate.size != source.size:
        gaps.append(
            Gap(
                area="whole page",
                issue=f"size differs: source {source.size[0]}x{source.size[1]}, "
                f"candidate {candidate.size[0]}x{candidate.size[1]} (compared after resizing)",
                severity="high",
            )
        )
        candidate = candidate.resize(source.size, Image.Resampling.LANCZOS)
    a = np.asarray(source.convert("RGB"), dtype=np.int16)
    b = np.asarray(candidate.convert("RGB"), dtype=np.int16)
    changed = (np.abs(a - b) > config.pixel_tolerance).any(axis=2)
    height, width = changed.shape
    rows = np.array_split(np.arange(height), config.grid_size)
    cols = np.array_split(np.arange(width), config.grid_size)
    share = np.zeros((len(rows), len(cols)))
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            if len(r) and len(c):
                share[i, j] = changed[r[0] : r[-1] + 1, c[0] : c[-1] + 1].mean()
    labels, count = ndimage.label(share > config.cell_tolerance)
    boxes: list[tuple[int, int, int, int]] = []
    for index in range(1, count + 1):
        cells = np.argwhere(labels == index)
        (i0, j0), (i1, j1) = cells.min(axis=0), cells.max(axis=0)
        box = (int(cols[j0][0]), int(rows[i0][0]), int(cols[j1][-1]) + 1, int(rows[i1][-1]) + 1)
        area_changed = float(changed[box[1] : box[3], box[0] : box[2]].mean())
        severity = "high" if area_changed > 0.25 else ("medium" if area_changed > 0.05 else "low")
        boxes.append(box)
        gaps.append(
            Gap(
                area=_where(box, (width, height)),
                issue=f"{area_changed:.1%} of the pixels differ",
                severity=severity,
            )
        )
    fraction = float(changed.mean())
    score = round(100 * (1 - fraction), 2)
    if score == 100 and gaps:  # a size difference alone still costs a point
        score = 99.0
    recommendations = [f"Make the {gap.area} match the source ({gap.issue})." for gap in gaps]
    report = ParityReport(parity_score=score, gaps=gaps, recommendations=recommendations)
    return Comparison(
        report=report, diff_image=_diff_image(source, changed, boxes), changed_fraction=fraction
    )


def _diff_image(
    source: Image.Image, changed: np.ndarray, boxes: list[tuple[int, int, int, int]]
) -> Image.Image:
    base = np.asarray(source.convert("RGB"), dtype=np.float32) * 0.35 + 255 * 0.65
    base[changed] = (230, 30, 30)
    image = Image.fromarray(base.astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image)
    for box in boxes:
        draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), outline=(200, 0, 0), width=3)
    return image
