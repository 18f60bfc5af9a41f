"""End screen: after the last step, the final screen against the recording's.

A replay is ``completed`` only when every step ran *and* the final screen matches the
recorded end state (tiles that changed by themselves when recorded, or that show a parameter's
value, are not compared); the screen is watched until it matches or settles (the state
:class:`~askcache.replay.states.Ending`). Those tiles are checked after each typing step
instead (:func:`~askcache.replay.effects.checked_effect`: the typed text reached the screen),
even with the checks skipped. A step that ran where its window moved leaves the end state to
be compared there.
"""

from __future__ import annotations

from askcache.replay.plan import Anchor, Plan
from askcache.replay.result import EndStateVerdict
from askcache.replay.screens import Screen

__all__ = ["end_verdict"]


def end_verdict(plan: Plan, anchor: Anchor | None, screen: Screen) -> EndStateVerdict:
    """``screen`` against the plan's recorded end state (which it must have), as seen from
    where the last step's window moved (``anchor``)."""
    end, config, recorded = plan.end, plan.config, plan.end_state
    assert end is not None
    assert config is not None
    assert recorded is not None
    skip = set(recorded.volatile) | set(recorded.parameter_tiles)
    if anchor is not None:
        size = end.tile_box(end.rows * end.columns - 1)[2:]
        skip |= set(end.tiles_outside(anchor.compared_box((size[0], size[1]))))
        screen = screen.moved(anchor.offset)
    now = screen.thumbnail(config)
    total = now.rows * now.columns
    differing = [i for i in now.differing_tiles(end) if i not in skip]
    return EndStateVerdict(
        matched=not differing,
        compared_tiles=total - len(skip & set(range(total))),
        differing_tiles=differing,
        differing_boxes=[now.tile_box(i) for i in differing],
    )
