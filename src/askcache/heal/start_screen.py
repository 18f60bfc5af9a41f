"""The start screen of a healed trajectory: what the first step waits for.

A heal rebuilds the trajectory from its run, so the healed file's start screen would be that
run's (:attr:`~askcache.cachefile.format.CacheMetadata.start_state`). When the run's first
acting step was the file's own step (it passed its own checks and the hand-back came later),
both screens are screens the trajectory starts from: the recorded one and this run's, which
differs in an area a later step reaches (Save and Clear swapped places, and the heal learns
the Save click's other way). Keeping only one would make every replay on the other layout
wait ``settle_timeout`` before its first step. So the recorded start screen is kept and the
tiles in which this run's differed are added to its ``varying`` tiles, which are not
compared.

The start screen decides *when* the first step runs, never *whether* (its own checks do), so
leaving tiles out costs no safety; but a start screen with most tiles left out would no
longer tell a half-drawn window. A run whose start screen differed in more than
:data:`MAX_VARYING_SHARE` of the tiles (a window still drawing when the first step's wait ran
out, another screen altogether) keeps the recorded start screen unchanged.
"""

from __future__ import annotations

from askcache.cachefile.format import CacheFile
from askcache.foundation.screen.thumbnails import StartState, Thumbnail

__all__ = ["MAX_VARYING_SHARE", "healed_start_state"]

MAX_VARYING_SHARE = 0.25
"""The largest share of the screen's tiles a start screen leaves out as ``varying``."""


def healed_start_state(
    old: CacheFile, seen: StartState | None, first_replayed: bool
) -> StartState | None:
    """The start screen of the trajectory healed from ``old``: ``seen`` (the healed run's
    start screen) when the run's first acting step was not the file's own
    (``first_replayed`` false: the heal rebuilt the trajectory from its start); otherwise the
    recorded one with the tiles ``seen`` differs in added to its ``varying`` tiles (see the
    module docstring)."""
    recorded, config = old.metadata.start_state, old.metadata.screen_state
    if not first_replayed or recorded is None or config is None:
        return seen
    if seen is None:
        return recorded
    before = Thumbnail.from_end_state(recorded, config)
    now = Thumbnail.from_end_state(seen, config)
    if now.values.shape != before.values.shape:
        return recorded
    varying = sorted(set(recorded.varying) | set(before.differing_tiles(now)))
    if len(varying) > MAX_VARYING_SHARE * before.rows * before.columns:
        return recorded
    return recorded.model_copy(update={"varying": varying})
