"""Positions and rectangles in a screenshot's pixels: the two shapes every layer shares."""

from __future__ import annotations

__all__ = [
    "Box",
    "Point",
]


Point = tuple[int, int]
"""A pixel position ``(x, y)`` in the screenshot's coordinate space."""

Box = tuple[int, int, int, int]
"""A region ``(left, top, right, bottom)`` in pixels, right and bottom exclusive."""
