"""What a step was checked on, kept for people (the HTML report): the region with its action
point, and a small copy of the whole screen."""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image

from askcache.foundation.geometry import Box, Point

__all__ = ["SCREEN_VIEW_WIDTH", "StepView"]


SCREEN_VIEW_WIDTH = 320
"""Width of the small full-screen copy a :class:`StepView` keeps."""


@dataclass(frozen=True)
class StepView:
    """What a step was checked on, for people: the region, the action point in it, and a
    small copy of the whole screen with the region's box (for reports)."""

    region: Image.Image
    """The region, as checked."""
    point: Point | None
    """The action point within ``region`` (``None``: the step has none)."""
    screen: Image.Image
    """The whole screen, at most :data:`SCREEN_VIEW_WIDTH` pixels wide."""
    box: Box
    """The region's box on the full-size screen."""
    scale: float
    """``screen`` width over the full screen's width."""

    @classmethod
    def of(cls, image: Image.Image, box: Box, point: Point | None) -> StepView:
        """The view of ``box`` on ``image`` around ``point`` (full-screen coordinates)."""
        scale = min(1.0, SCREEN_VIEW_WIDTH / image.width)
        small = image.resize(
            (max(1, round(image.width * scale)), max(1, round(image.height * scale))),
            Image.Resampling.BILINEAR,
        )
        inside = None if point is None else (point[0] - box[0], point[1] - box[1])
        return cls(image.crop(box), inside, small, box, scale)
