"""End state: after the last step, the final screen against the recording's.

A replay is ``completed`` only when every step ran *and* the final screen matches the
recorded end state (tiles that changed by themselves when recorded, or that show a parameter's
value, are not compared); the screen is watched until it matches or settles. Those tiles are
checked after each typing step instead (:func:`~askcache.replay.verify.checked_effect`: the
typed text reached the screen), even with the checks skipped. The look the end state was
decided on is what the last steps left (:attr:`~askcache.replay.state.ReplayState.seen`).
"""

from __future__ import annotations

from askcache.messages import MessageParam
from askcache.replay.commands import Finished, HandBack
from askcache.replay.observe import Screen, current
from askcache.replay.result import EndStateVerdict
from askcache.replay.state import CaptureFailedError, ReplayState
from askcache.replay.wait import watch

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
        size = end.tile_box(end.rows * end.columns - 1)[2:]
        skip |= set(end.tiles_outside(anchor.compared_box((size[0], size[1]))))

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
    last = [screen]

    def look(seen: Screen) -> EndStateVerdict:
        last[0] = seen
        return evaluate(seen)

    verdict, _ = watch(state, screen, look, lambda outcome: outcome.matched)
    state.seen.looked(last[0].image)  # the screen the last steps left
    return Finished(
        verdict, hand_back=not verdict.matched and state.settings.end_state == "hand_back"
    )
