"""Top-level windows: where the window that received an action is, and where it is now.

Recording stores, per acting step, the frame of the top-level window under the step's point
(:class:`WindowFrame`: position, size, class and title, in the screenshot's pixels; the title
without the machine's paths, user and host names, :mod:`askcache.foundation.screen.titles`); the
action point relative to the window is the point minus the frame's origin. A replay lists
the windows again and finds that window (:func:`find_window`); when it moved, the step is
checked and acted on where the window is now (:mod:`askcache.replay.anchor`).

Windows come from a :class:`WindowSource`: on X11, :mod:`askcache.tools.xlib_windows` (EWMH's
``_NET_CLIENT_LIST_STACKING`` under a window manager, the root's mapped children without
one); :mod:`askcache.testing`'s simulated screen has its own. Platforms without one have no
window information and replay as before (the check at the recorded point).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from askcache.foundation.geometry import Point
from askcache.foundation.screen.titles import neutral_title

__all__ = ["WindowFrame", "WindowSource", "find_window", "window_at"]


_TITLE_CHARS = 500
"""The longest title stored."""


def _stored_title(title: str | None) -> str | None:
    """``title`` as stored (:func:`~askcache.foundation.screen.titles.neutral_title`, which may
    lengthen it: a host name's placeholder is longer than a short name), cut to the longest kept."""
    neutral = neutral_title(title)
    return None if neutral is None else neutral[:_TITLE_CHARS]


class WindowFrame(BaseModel):
    """A top-level window's frame (its client area, without the window manager's
    decorations), in the screenshot's pixels, and what names it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    x: int
    """Left edge on the screen (may be negative: a window partly off screen)."""
    y: int
    """Top edge on the screen."""
    width: int = Field(gt=0)
    """Width in pixels."""
    height: int = Field(gt=0)
    """Height in pixels."""
    wm_class: str | None = Field(None, max_length=200)
    """The window's class (X11 ``WM_CLASS``, its class part: ``XCalc``); ``None``: not
    set."""
    title: str | None = Field(None, max_length=_TITLE_CHARS)
    """Its title (``_NET_WM_NAME``, else ``WM_NAME``); ``None``: not set. Stored without the
    recording machine's paths, user and host names (:meth:`stored`)."""

    def contains(self, point: Point) -> bool:
        """True when ``point`` lies inside the frame."""
        x, y = point
        return self.x <= x < self.x + self.width and self.y <= y < self.y + self.height

    def stored(self) -> WindowFrame:
        """The frame as a cache file stores it: its title without this machine's paths, user
        and host names (:func:`~askcache.foundation.screen.titles.neutral_title`)."""
        return self.model_copy(update={"title": _stored_title(self.title)})

    def scaled(self, source: tuple[int, int], target: tuple[int, int]) -> WindowFrame:
        """The frame measured in ``source`` pixels, expressed in ``target`` pixels."""
        if source == target:
            return self
        fx, fy = target[0] / source[0], target[1] / source[1]
        return self.model_copy(
            update={
                "x": round(self.x * fx),
                "y": round(self.y * fy),
                "width": max(1, round(self.width * fx)),
                "height": max(1, round(self.height * fy)),
            }
        )


@runtime_checkable
class WindowSource(Protocol):
    """Lists the screen's top-level windows."""

    def windows(self) -> list[WindowFrame]:
        """The visible top-level windows, bottom first (the last one is on top), in the
        screen's pixels."""
        ...


def window_at(windows: Sequence[WindowFrame], point: Point | None) -> WindowFrame | None:
    """The topmost of ``windows`` (listed bottom first) that contains ``point``."""
    if point is None:
        return None
    return next((w for w in reversed(windows) if w.contains(point)), None)


def find_window(recorded: WindowFrame, windows: Sequence[WindowFrame]) -> WindowFrame | None:
    """The window ``recorded`` is now, or ``None`` when there is not exactly one candidate.

    A window without a class cannot be told from others: never found. Among the windows of
    the recorded class, the one with the recorded title; when none has it (a title that
    names another document), the one with the recorded size. Two candidates at either stage:
    ``None`` (the step is then checked at its recorded point). Titles are compared as stored
    (:meth:`WindowFrame.stored`: a live title is cut to the document's name and its user and
    host names replaced as the recorded one was; an older file's title with its full path
    compares the same way).
    """
    if recorded.wm_class is None:
        return None
    same_class = [w for w in windows if w.wm_class == recorded.wm_class]
    title = _stored_title(recorded.title)
    titled = [w for w in same_class if _stored_title(w.title) == title]
    if titled:
        return titled[0] if len(titled) == 1 else None
    sized = [w for w in same_class if (w.width, w.height) == (recorded.width, recorded.height)]
    return sized[0] if len(sized) == 1 else None
