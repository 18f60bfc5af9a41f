"""Verdicts: what a step's check says (it may run, or it must not), and on what it was checked."""

from __future__ import annotations

from dataclasses import dataclass, field

from askcache.foundation.geometry import Point
from askcache.foundation.reasons import HandBackCode
from askcache.foundation.screen.elements import Element
from askcache.foundation.screen.thumbnails import Thumbnail
from askcache.replay.plan import Anchor
from askcache.replay.result import StepRecord
from askcache.replay.screens import Screen
from askcache.replay.step_view import StepView

__all__ = ["Checked", "Refused"]


@dataclass(frozen=True)
class Checked:
    """The step may run on this screen."""

    record: StepRecord
    screen: Screen | None
    """The screen it was checked on (``None``: a step that needs none)."""
    thumbnail: Thumbnail | None
    variant: int | None = None
    """The variant of the trajectory whose first step was checked (``None``: its own)."""
    anchor: Anchor | None = None
    """Where the step's window (or region) is now, when it moved: the step was checked on
    ``screen`` as seen from there, and acts there (``None``: at its recorded point)."""
    view: StepView | None = None
    """What it was checked on, for reports (only with ``keep_step_views``)."""
    other_density: bool = False
    """True when the screen was checked as drawn at another pixel density."""
    element: Element | None = None
    """The element an action at the step's point reaches, as the element check found it on
    this screen (``None``: no element check spoke); its effect may be confirmed by it
    (:func:`~askcache.replay.effects.element_effect`)."""
    element_point: Point | None = None
    """Where :attr:`element` was asked about (recorded pixels, on the screen as it is)."""


@dataclass(frozen=True)
class Refused:
    """The step must not run."""

    record: StepRecord | None
    problem: str
    final: bool = False
    """True when waiting cannot help (a size that cannot be mapped, a step without a check)."""
    own_checks: Checked | None = None
    """Set when only the start screen is not there yet (the step's own checks passed on
    this screen): once the wait for the start screen is over, the step runs on these."""
    view: StepView | None = None
    """What it was checked on, for reports (only with ``keep_step_views``)."""
    other_density: bool = False
    """True when the screen was checked as drawn at another pixel density."""
    code: HandBackCode = field(kw_only=True)
    """The kind of problem, should it hand back
    (:data:`~askcache.foundation.reasons.HandBackCode`)."""
