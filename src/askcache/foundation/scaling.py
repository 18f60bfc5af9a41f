"""Coordinate spaces: the screen as the model sees it vs the real screen, and screen profiles.

Screenshots sent to the model are scaled down to a standard resolution with the same aspect
ratio (XGA 1024x768, WXGA 1280x800, FWXGA 1366x768), as Anthropic's reference computer-use
agent does; the model's coordinates are scaled back before acting. A screen smaller than
its target, or of another aspect ratio, is used as it is. A :class:`ScreenProfile` names
what a fleet's screens differ by (the screenshot size and the display's scale).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from askcache.foundation.geometry import Point

__all__ = [
    "ASPECT_TOLERANCE",
    "SAME_SIZE_TOLERANCE",
    "TARGET_RESOLUTIONS",
    "ScreenProfile",
    "Size",
    "api_resolution",
    "move_step_input",
    "same_aspect",
    "same_size",
    "scale_point",
    "scale_step_input",
]

Size = tuple[int, int]
"""Width and height in pixels."""

TARGET_RESOLUTIONS: dict[str, Size] = {
    "XGA": (1024, 768),
    "WXGA": (1280, 800),
    "FWXGA": (1366, 768),
}
"""The resolutions screenshots are scaled down to, by aspect ratio."""

ASPECT_TOLERANCE = 0.02
"""Largest difference of width/height ratios still counted as the same aspect ratio."""


def same_aspect(first: Size, second: Size) -> bool:
    """True when the two sizes have the same aspect ratio (within ``ASPECT_TOLERANCE``)."""
    return abs(first[0] / first[1] - second[0] / second[1]) < ASPECT_TOLERANCE


def api_resolution(screen: Size) -> Size:
    """The size screenshots of ``screen`` are sent at: a smaller standard size of the same
    aspect ratio, or the screen's own size."""
    for target in TARGET_RESOLUTIONS.values():
        if same_aspect(screen, target) and target[0] < screen[0]:
            return target
    return screen


def scale_point(point: Point, source: Size, target: Size) -> Point:
    """``point`` in ``source`` space, expressed in ``target`` space (rounded, inside it)."""
    x = round(point[0] * target[0] / source[0])
    y = round(point[1] * target[1] / source[1])
    return (min(max(x, 0), target[0] - 1), min(max(y, 0), target[1] - 1))


def scale_step_input(arguments: dict[str, Any], source: Size, target: Size) -> dict[str, Any]:
    """A computer action's arguments with every point scaled from ``source`` to ``target``."""
    scaled = dict(arguments)
    for key in ("coordinate", "start_coordinate"):
        value = arguments.get(key)
        if (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, int | float) for v in value)
        ):
            scaled[key] = list(scale_point((round(value[0]), round(value[1])), source, target))
    region = arguments.get("region")
    if (
        isinstance(region, list)
        and len(region) == 4
        and all(isinstance(v, int | float) for v in region)
    ):
        left, top = scale_point((round(region[0]), round(region[1])), source, target)
        right, bottom = scale_point((round(region[2]), round(region[3])), source, target)
        scaled["region"] = [left, top, right, bottom]
    return scaled


def move_step_input(arguments: dict[str, Any], offset: Point, size: Size) -> dict[str, Any]:
    """A computer action's arguments with every point moved by ``offset`` (inside ``size``):
    the step acts where its window moved to."""
    moved = dict(arguments)
    for key in ("coordinate", "start_coordinate"):
        value = arguments.get(key)
        if (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, int | float) for v in value)
        ):
            x = min(max(round(value[0]) + offset[0], 0), size[0] - 1)
            y = min(max(round(value[1]) + offset[1], 0), size[1] - 1)
            moved[key] = [x, y]
    return moved


SAME_SIZE_TOLERANCE = 0.05
"""Sizes within this fraction of each other (in either direction, on both sides) are the
same size: a screenshot a few pixels off is the same screen."""


def same_size(first: Size, second: Size) -> bool:
    """True when the sizes differ by at most :data:`SAME_SIZE_TOLERANCE` on each side."""
    return all(
        abs(now / then - 1) <= SAME_SIZE_TOLERANCE for now, then in zip(first, second, strict=True)
    )


@dataclass(frozen=True)
class ScreenProfile:
    """What a fleet's screens differ by: the size of the screenshots the model sees and the
    scale of the display behind them (a 2560x1600 display sent as 1280x800 screenshots is
    ``1280x800@2x``; a 1024x640 one sent as it is, ``1024x640@1x``).

    A trajectory recorded on one profile replays on it as recorded; on another it is tried
    scaled and checked, and a run there that the model completes after a hand-back is kept
    as that profile's own trajectory (docs/fleet.md, "Screens"). Colour depth is not part of
    it: screenshots are compared in grey.
    """

    screenshot: Size
    """Width and height of the screenshots the coordinates refer to."""
    display: Size | None = None
    """The real display's size, when the computer tool knows it; ``None``: unknown (the
    scale is then unknown too, and the profile matches any scale)."""

    @property
    def scale(self) -> float | None:
        """Display pixels per screenshot pixel (2 decimals), ``None`` when unknown."""
        if self.display is None:
            return None
        return round(self.display[0] / self.screenshot[0], 2)

    @property
    def id(self) -> str:
        """The stable short name: ``1280x800@2x``, ``1024x640@1x``, ``1280x800`` (scale
        unknown)."""
        width, height = self.screenshot
        scale = self.scale
        return f"{width}x{height}" if scale is None else f"{width}x{height}@{scale:g}x"

    def __str__(self) -> str:
        return self.id

    def same_screen(self, other: ScreenProfile) -> bool:
        """True when a trajectory recorded on ``other`` replays here as recorded: the same
        screenshot size and, where both know it, the same display size (each within
        :data:`SAME_SIZE_TOLERANCE`)."""
        if not same_size(self.screenshot, other.screenshot):
            return False
        if self.display is None or other.display is None:
            return True
        return same_size(self.display, other.display)
