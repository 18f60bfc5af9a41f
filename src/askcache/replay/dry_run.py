"""Checking a trajectory against screens without acting: what a replay would decide.

``dry_run`` runs the *check* phase of each step (its fingerprint, and the area its action
changed when recorded) on a screen you give it, and never emits an action. Give it the
screen before each step (screenshots saved from another run, keyed by step index) to see
which steps would pass; give it the live screen to see whether a replay would start.

The live screen is the screen before the first acting step only. The screen a later step
is checked on exists only once the steps before it have acted, and a dry run never acts: such
a step is *not checked* (``checked_on`` is ``None``, its ``note`` says why), never reported
as passing. (Not even after a step recorded as changing nothing: the recorded effect is
coarse, and a focus ring it does not see still changes what the next step is checked on.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from PIL import Image

from askcache.cachefile.format import CacheFile
from askcache.foundation.actions import ACTING_ACTIONS, parse_action
from askcache.foundation.scaling import same_aspect
from askcache.foundation.screen.hashing import region_box
from askcache.foundation.settings import CacheExecutionSettings
from askcache.replay.result import StepRecord
from askcache.replay.session import ReplaySession
from askcache.replay.step_view import StepView

__all__ = ["DryRunStep", "dry_run"]


class DryRunStep(StepRecord):
    """A step's check in a dry run."""

    checked_on: int | None = None
    """Index of the screen it was checked on (``None``: no screen was given for it)."""
    problem: str | None = None
    """Why the replay would stop before it (``None``: it would run)."""


def dry_run(
    cache_file: CacheFile,
    name: str,
    screens: Mapping[int, Image.Image] | Callable[[], Image.Image],
    *,
    parameter_values: Mapping[str, str] | None = None,
    settings: CacheExecutionSettings | None = None,
    views: dict[int, StepView] | None = None,
    display_size: tuple[int, int] | None = None,
) -> list[DryRunStep]:
    """Check every acting step of ``cache_file`` without acting.

    ``screens`` maps a step index to the screen before that step (steps without one are
    checked on the closest earlier screen given), or is a function returning the current
    screen (the live screen, taken once: the first acting step is checked on it; the later
    ones are not checked, see the module docstring). ``views``, when given, receives
    per checked step what its region looks like on that screen (for reports: the region
    with the action point, the whole screen with the region boxed), in the recording's
    coordinates as a replay checks it. ``display_size``: the real display's size, as
    ``ComputerTool.screen_size`` reports it (see :class:`~askcache.replay.CacheExecutor`): on
    a display of another size than the recording's, steps are checked as a replay there
    checks them, with the hash for another pixel density. Without it a dry run can tell
    another density only from screenshots of another size, and is stricter than a replay
    on a HiDPI display.
    """
    settings = settings or CacheExecutionSettings()
    values = dict(parameter_values or settings.parameter_values)
    session = ReplaySession(
        cache_file,
        name,
        parameter_values=values,
        start_step=0,
        settings=settings.model_copy(update={"auto_wait": False}),
        tool_shape="tool",
        capture=None,
        display_size=display_size,
    )
    live = screens() if callable(screens) else None
    changed_by: int | None = None  # the first acting step: it changes the live screen
    found: list[DryRunStep] = []
    for index, step in enumerate(session.steps):
        action = parse_action(step)
        if action is None or action.name not in ACTING_ACTIONS:
            continue
        if live is not None and changed_by is not None:
            found.append(
                DryRunStep(
                    step_index=index,
                    action=action.name,
                    validated=False,
                    note=f"no screen yet: its screen appears only once step {changed_by} has "
                    "acted, and a dry run never acts",
                )
            )
            continue
        if live is not None:
            image, source = live, 0
            changed_by = index
        else:
            assert not callable(screens)
            earlier = [i for i in screens if i <= index]
            if not earlier:
                found.append(
                    DryRunStep(
                        step_index=index,
                        action=action.name,
                        validated=False,
                        note="no screen given for this step",
                    )
                )
                continue
            source = max(earlier)
            image = screens[source]
        record, problem = session.check_step(index, image)
        if views is not None:
            view = _view(cache_file, image, session.anchors[index] or action.point)
            if view is not None:
                views[index] = view
        found.append(DryRunStep(**record.model_dump(), checked_on=source, problem=problem))
    return found


def _view(
    cache_file: CacheFile, image: Image.Image, anchor: tuple[int, int] | None
) -> StepView | None:
    """The step's region on ``image``, scaled to the recorded screen as a replay scales it."""
    config = cache_file.metadata.visual_validation
    if config is None:
        return None
    space = cache_file.metadata.coordinate_space
    if space is not None:
        size = (space.width, space.height)
        if image.size != size and same_aspect(image.size, size):
            image = image.resize(size, Image.Resampling.LANCZOS)
    box = region_box(image.size, anchor, config.region_size)
    return None if box is None else StepView.of(image, box, anchor)
