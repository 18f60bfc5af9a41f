"""What an action changed away from its point: a calculator's display, a status line.

:mod:`askcache.foundation.screen.thumbnails` keeps, per step, the tiles *near* the action point that
the action changed, at 1/8 scale. Two things escape it:

* changes further away than the effect radius (a calculator key at the bottom of the window
  writes its digit on the display at the top);
* changes too small for a 1/8-scale average: one digit replaced by another moves a block
  average by less than the within-run level.

So, per acting step, the recording also finds the places away from the point whose pixels the
action changed (at full resolution: an 8 x 8 pixel block changed when one of its pixels moved
by more than :data:`CHANGE_LEVEL` grey levels; for a click, every group of changed blocks but
the element clicked, :data:`ELEMENT_RADIUS`; for typing and other actions, the groups beyond
the effect radius, so that the text typed and its blinking caret stay the near effect's; a
group one block wide, a caret, never), and stores each place's box (the changed
blocks and one block around them) with a perceptual hash of it before and after the action
(:class:`ChangeElsewhere`; hashes only, no pixels). After a replayed action, each place must
look as recorded after it (within :data:`MATCH_THRESHOLD` bits), and before a key press each must
look as recorded before it (:func:`check_before`; on a screen drawn at another pixel density
within :func:`before_limit`): a key pressed in a text whose caret stands on
another line than when recorded (the file has another line, the caret went to its end) writes
elsewhere than it did, while the pointer's region, where a key is checked, looks the same.
An xcalc key rebound to
another digit, whose label still looks as recorded, is clicked (nothing on the screen could
tell before) but the replay hands back at once: the display shows another digit.

What is left out, so that the check does not hand back for nothing:

* places that also changed while nothing acted (a clock, a spinner, a caret blinking between
  two screenshots): the recording leaves them out (:func:`prune`);
* steps at or after the first typed parameter: what they change elsewhere may show the
  parameter's value, which differs from run to run;
* at replay, a place that the action did not change and that looks neither as recorded before
  nor after (a clock that ticked at recording time but not now): it was not the action's;
* a screen of another size than the recorded one (re-rendered text hashes differently): not
  checked there (the near effect and the region checks still are).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from askcache.foundation.geometry import Box, Point

if TYPE_CHECKING:  # imported where used: the models here are read by the ledger's commands
    import numpy as np
    from PIL import Image

__all__ = [
    "BLOCK",
    "CHANGE_LEVEL",
    "ELEMENT_RADIUS",
    "HASH_SIZE",
    "MATCH_THRESHOLD",
    "MAX_PLACES",
    "OTHER_DENSITY_CEILING",
    "ChangeElsewhere",
    "before_limit",
    "changed_blocks",
    "changes_elsewhere",
    "check_before",
    "check_elsewhere",
    "prune",
]

BLOCK = 8
"""Side of a block, in screen pixels: the unit in which changed places are found."""
CHANGE_LEVEL = 40
"""Grey levels (of 255) one pixel must move for its block to count as changed (within one run:
the same machine draws the same pixels)."""
HASH_SIZE = 16
"""Side of a place's perceptual hash (pHash, ``HASH_SIZE**2`` bits)."""
MATCH_THRESHOLD = 24
"""Largest Hamming distance between a place's hash now and as recorded still counted as the
same (measured on xcalc's display, 2026-11-22: 0 for the same digits drawn again, 48-60 for
another digit, 2-16 for the same screen resampled to 0.8x or 1.5x and back)."""
OTHER_DENSITY_CEILING = 32
"""Before a key on a screen drawn at another pixel density, the most a place's hash may differ
from the recorded one (:func:`before_limit`): text drawn anew at 2x and brought back to the
recorded size differs by more than the same text resampled (FeatherPad's "Lines: 3" in its
status bar: 26 to 28 bits at 2x, 2026-11-28; "Lines: 4", the state after the key, 64 bits from
it at 1x and 70 at 2x)."""
MAX_PLACES = 4
"""Places kept per step (the largest)."""
ELEMENT_RADIUS = 16
"""For a click: a group of changed blocks reaching within this many pixels of the point is
the element clicked (a key pressed, a field focused), left to the near effect; every other
group is a place elsewhere."""


class ChangeElsewhere(BaseModel):
    """A place away from the action point that the action changed when recorded."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    box: tuple[int, int, int, int]
    """``(left, top, right, bottom)`` in recorded screen pixels, right and bottom exclusive."""
    before: str = Field(max_length=HASH_SIZE * HASH_SIZE // 4)
    """pHash (hex) of the place just before the action."""
    after: str = Field(max_length=HASH_SIZE * HASH_SIZE // 4)
    """pHash (hex) of the place once the action had taken effect."""


def _grey(image: Image.Image) -> np.ndarray:
    import numpy as np

    return np.asarray(image.convert("L"), dtype=np.int16)


def changed_blocks(before: Image.Image, after: Image.Image) -> np.ndarray:
    """Per block (rows x columns, partial blocks at the edges dropped), whether one of its
    pixels moved by more than :data:`CHANGE_LEVEL` from ``before`` to ``after`` (two screens of
    the same size)."""
    import numpy as np

    moved = np.abs(_grey(before) - _grey(after))
    rows, columns = moved.shape[0] // BLOCK, moved.shape[1] // BLOCK
    blocks = moved[: rows * BLOCK, : columns * BLOCK].reshape(rows, BLOCK, columns, BLOCK)
    return np.asarray(blocks.max(axis=(1, 3)) > CHANGE_LEVEL)


def _components(mask: np.ndarray) -> list[list[tuple[int, int]]]:
    """Groups of changed blocks touching each other (sides or corners)."""
    import numpy as np

    seen = np.zeros(mask.shape, dtype=bool)
    groups = []
    for row, column in zip(*np.nonzero(mask), strict=True):
        if seen[row, column]:
            continue
        seen[row, column] = True
        stack, group = [(int(row), int(column))], []
        while stack:
            r, c = stack.pop()
            group.append((r, c))
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    rr, cc = r + dr, c + dc
                    inside = 0 <= rr < mask.shape[0] and 0 <= cc < mask.shape[1]
                    if inside and mask[rr, cc] and not seen[rr, cc]:
                        seen[rr, cc] = True
                        stack.append((rr, cc))
        groups.append(group)
    return groups


def _far(block: tuple[int, int], point: Point, radius: int) -> bool:
    row, column = block
    x, y = point
    dx = max(column * BLOCK - x, 0, x - (column * BLOCK + BLOCK - 1))
    dy = max(row * BLOCK - y, 0, y - (row * BLOCK + BLOCK - 1))
    return max(dx, dy) > radius


def _hash(image: Image.Image, box: Box) -> str:
    from askcache.foundation.screen.hashing import compute_hash

    return compute_hash(image.crop(box), "phash", HASH_SIZE)


def changes_elsewhere(
    before: Image.Image, after: Image.Image, point: Point | None, radius: int
) -> list[ChangeElsewhere]:
    """The places further than ``radius`` pixels from ``point`` that changed from ``before`` to
    ``after`` (two screens of one run, the same size), the :data:`MAX_PLACES` largest, in
    reading order. A group of changed blocks reaching within the radius is left to the near
    effect, and so is a group one block wide (a caret blinking); without a point there is no
    "elsewhere"."""
    if point is None or before.size != after.size:
        return []
    groups = [
        group
        for group in _components(changed_blocks(before, after))
        if all(_far(block, point, radius) for block in group)
        and len({column for _, column in group}) > 1  # one block wide: a caret blinking
    ]
    groups = sorted(groups, key=len, reverse=True)[:MAX_PLACES]
    places = []
    for group in groups:
        rows = [r for r, _ in group]
        columns = [c for _, c in group]
        width, height = before.size
        box = (  # the changed blocks and one block around them: a digit hashed alone is noise
            max(0, (min(columns) - 1) * BLOCK),
            max(0, (min(rows) - 1) * BLOCK),
            min(width, (max(columns) + 2) * BLOCK),
            min(height, (max(rows) + 2) * BLOCK),
        )
        places.append(ChangeElsewhere(box=box, before=_hash(before, box), after=_hash(after, box)))
    return sorted(places, key=lambda place: (place.box[1], place.box[0]))


def prune(places: Iterable[ChangeElsewhere], volatile: np.ndarray | None) -> list[ChangeElsewhere]:
    """``places`` without those touching a ``volatile`` block (a block that also changed while
    nothing acted: :func:`changed_blocks` of such steps, or-ed together)."""
    if volatile is None:
        return list(places)
    kept = []
    for place in places:
        left, top, right, bottom = (v // BLOCK for v in place.box)
        if not volatile[top:bottom, left:right].any():
            kept.append(place)
    return kept


def check_elsewhere(
    places: Iterable[ChangeElsewhere], before: Image.Image, now: Image.Image
) -> str | None:
    """Why the places do not look as the recording left them (``None``: they do). ``before``
    and ``now`` are the screens just before the replayed action and now, at the recorded
    size.

    A place that the action did not change and that looks neither as recorded before nor
    after it is not the action's (a clock): it is not held against the replay.
    """
    from askcache.foundation.screen.hashing import hamming_distance

    for place in places:
        current = _hash(now, place.box)
        if hamming_distance(current, place.after) <= MATCH_THRESHOLD:
            continue
        previous = _hash(before, place.box)
        changed = hamming_distance(previous, current) > MATCH_THRESHOLD
        if not changed:
            if hamming_distance(previous, place.before) > MATCH_THRESHOLD:
                continue  # neither as before nor as after, untouched: not this action's
            return (
                f"the action's effect at {list(place.box)}, away from its point, did not "
                "appear: that place still looks as before the action"
            )
        return (
            f"the action's effect at {list(place.box)}, away from its point, differs from the "
            "recording: that place changed, but looks different from the recording after it"
        )
    return None


def before_limit(place: ChangeElsewhere, *, other_density: bool = False) -> int:
    """The most ``place``'s hash just before a key may differ from the recorded one:
    :data:`MATCH_THRESHOLD`; on a screen drawn at another pixel density (whose text is drawn
    anew, not resampled), up to half the distance the action itself moved the place when
    recorded (its before and after hashes), at most :data:`OTHER_DENSITY_CEILING`. A place
    whose own change was small (a 592 x 336 place in the bench's editors: 20 to 26 bits)
    keeps :data:`MATCH_THRESHOLD`; a screen already in the state after the key lies about the
    whole of that distance from the recorded before, twice the limit."""
    if not other_density:
        return MATCH_THRESHOLD
    from askcache.foundation.screen.hashing import hamming_distance

    moved = hamming_distance(place.before, place.after)
    return max(MATCH_THRESHOLD, min(OTHER_DENSITY_CEILING, moved // 2))


def check_before(
    places: Iterable[ChangeElsewhere],
    now: Image.Image,
    *,
    also: Image.Image | None = None,
    other_density: bool = False,
) -> str | None:
    """Why the places do not look as they did just before the action when recorded
    (``None``: they do, within :func:`before_limit`). ``now`` is the screen just
    before the replayed action, at the recorded size: a place the action is to change that
    shows something else already (another line, another number in a display) says the
    action would act on another state than the recording's. ``also``: the same screen seen
    otherwise (where the window shows it, when the step's element moved inside it); a place
    that looks as recorded in either passes. ``other_density``: ``now`` is drawn at another
    pixel density and brought to the recorded size."""
    from askcache.foundation.screen.hashing import hamming_distance

    for place in places:
        limit = before_limit(place, other_density=other_density)
        distance = hamming_distance(_hash(now, place.box), place.before)
        if distance > limit and also is not None and also.size == now.size:
            distance = min(distance, hamming_distance(_hash(also, place.box), place.before))
        if distance > limit:
            return (
                f"a place away from the action point that the action changed when recorded, "
                f"{list(place.box)}, looks different before it now ({distance} bits of "
                f"{HASH_SIZE * HASH_SIZE} differ, at most {limit}): the screen "
                "is in another state"
            )
    return None
