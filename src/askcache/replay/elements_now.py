"""Elements now: what the accessibility tree says about one look, asked only when a check needs it.

A look (:class:`~askcache.replay.screens.Screen`) carries the platform's
:class:`~askcache.foundation.screen.elements.ElementSource` when there is one. A check asks
:class:`ElementsNow` in the recorded screenshot's pixels; it converts to the screen's pixels
and back, asks each question once per look, and turns every failure (a tree that is missing,
slow, or raises) into ``None``: no element information, and pixels decide as before.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from askcache.foundation.geometry import Point
from askcache.foundation.screen.elements import Element, ElementSource

__all__ = ["ElementsNow"]

logger = logging.getLogger(__name__)


@dataclass
class ElementsNow:
    """The platform's answers for one look (see the module docstring)."""

    source: ElementSource
    image_size: tuple[int, int]
    """The look's size (the source's pixels)."""
    recorded_size: tuple[int, int]
    """The trajectory's recorded size (the checks' pixels)."""
    _at: dict[Point, Element | None] = field(default_factory=dict)
    _like: dict[tuple[Element, Point], tuple[Element, ...] | None] = field(default_factory=dict)

    def _to_image(self, point: Point) -> Point:
        (iw, ih), (rw, rh) = self.image_size, self.recorded_size
        return (round(point[0] * iw / rw), round(point[1] * ih / rh))

    def at(self, point: Point) -> Element | None:
        """The element an action at ``point`` (recorded pixels) reaches, in recorded pixels;
        ``None``: none, or the source failed."""
        if point not in self._at:
            try:
                found = self.source.element_at(self._to_image(point))
            except Exception as exc:
                logger.info("the element at %s could not be read: %s", point, exc)
                found = None
            self._at[point] = (
                None if found is None else found.scaled(self.image_size, self.recorded_size)
            )
        return self._at[point]

    def like(self, element: Element, window_point: Point) -> Sequence[Element] | None:
        """The elements with ``element``'s role and name in the window at ``window_point``
        (recorded pixels), in recorded pixels; ``None``: the source cannot tell."""
        key = (element, window_point)
        if key not in self._like:
            image = element.scaled(self.recorded_size, self.image_size)
            try:
                found = self.source.elements_like(image, self._to_image(window_point))
            except Exception as exc:
                logger.info("the elements like %s could not be listed: %s", element.role, exc)
                found = None
            self._like[key] = (
                None
                if found is None
                else tuple(e.scaled(self.image_size, self.recorded_size) for e in found)
            )
        return self._like[key]
