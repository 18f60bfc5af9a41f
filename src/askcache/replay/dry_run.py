"""Checking a trajectory against screens without acting: what a replay would decide.

``dry_run`` runs the *check* phase of each step (its fingerprint, and the area its action
changed when recorded) on a screen you give it, and never emits an action. Give it the
screen before each step (screenshots saved from another run, keyed by step index) to see
which steps would pass; give it one screen (a screenshot, or the live screen) to see whether
a replay would start, and where it would stop if nothing changed on the screen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from PIL import Image

from askcache.actions import ACTING_ACTIONS, parse_action
from askcache.cache_file import CacheFile
from askcache.replay.result import StepRecord
from askcache.replay.session import ReplaySession
from askcache.settings import CacheExecutionSettings

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
) -> list[DryRunStep]:
    """Check every acting step of ``cache_file`` without acting.

    ``screens`` maps a step index to the screen before that step (steps without one are
    checked on the closest earlier screen given), or is a function returning the current
    screen (the live screen, checked once for every step).
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
    )
    live = screens() if callable(screens) else None
    found: list[DryRunStep] = []
    for index, step in enumerate(session.steps):
        action = parse_action(step)
        if action is None or action.name not in ACTING_ACTIONS:
            continue
        if live is not None:
            image, source = live, 0
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
        found.append(DryRunStep(**record.model_dump(), checked_on=source, problem=problem))
    return found
