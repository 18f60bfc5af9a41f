"""End state: after the last step, the final screen against the recording's.

A replay is ``completed`` only when every step ran *and* the final screen matches the
recorded end state (tiles that changed by themselves when recorded, or that show a parameter's
value, are not compared); the screen is watched until it matches or settles.
"""

from __future__ import annotations

from askcache.messages import MessageParam
from askcache.replay.commands import Finished, HandBack
from askcache.replay.observe import Screen, current
from askcache.replay.result import EndStateVerdict
from askcache.replay.state import Anchor, CaptureFailedError, ReplayState
from askcache.replay.wait import watch
from askcache.screen.state import Thumbnail

__all__ = ["finish"]


def finish(
    state: ReplayState, messages: list[MessageParam], *, wait: bool = True
) -> Finished | HandBack:
    try:
        return _compare_end(state, messages, wait=wait)
    except CaptureFailedError as exc:
        return HandBack(len(state.steps), f"the end state cannot be checked: {exc}")


def _compare_end(state: ReplayState, messages: list[MessageParam], *, wait: bool) -> Finished:
    end, config = state.end, state.file.metadata.screen_state
    recorded = state.end_state
    if state.settings.end_state == "off" or end is None or config is None or recorded is None:
        return Finished(None)
    screen = current(state, messages, "the last screen")
    if screen is None:
        return Finished(None)
    skip = set(recorded.volatile) | set(recorded.parameter_tiles)
    anchor = state.last_anchor
    if anchor is not None:
        skip |= set(end.tiles_outside(_compared_box(end, anchor)))

    def evaluate(seen: Screen) -> EndStateVerdict:
        if anchor is not None:
            seen = seen.moved(anchor.offset)
        now = seen.thumbnail(config)
        total = now.rows * now.columns
        differing = [i for i in now.differing_tiles(end) if i not in skip]
        return EndStateVerdict(
            matched=not differing,
            compared_tiles=total - len(skip & set(range(total))),
            differing_tiles=differing,
            differing_boxes=[now.tile_box(i) for i in differing],
        )

    if not wait:
        return Finished(evaluate(screen))
    verdict, _ = watch(state, screen, evaluate, lambda outcome: outcome.matched)
    return Finished(
        verdict, hand_back=not verdict.matched and state.settings.end_state == "hand_back"
    )


def _compared_box(end: Thumbnail, anchor: Anchor) -> tuple[int, int, int, int]:
    """What of the final screen is compared when the last step ran moved (``x``, ``y``,
    width, height): the part of the screen the move brings into view, and of it, the
    window's recorded frame when there is one."""
    dx, dy = anchor.offset
    width, height = end.tile_box(end.rows * end.columns - 1)[2:]
    left, top = max(0, -dx), max(0, -dy)
    right, bottom = min(width, width - dx), min(height, height - dy)
    frame = anchor.frame
    if frame is not None:
        left, top = max(left, frame.x), max(top, frame.y)
        right = min(right, frame.x + frame.width)
        bottom = min(bottom, frame.y + frame.height)
    return (left, top, max(0, right - left), max(0, bottom - top))
