"""The failing-region thumbnails of a replay that handed back
(``CachingSettings.ledger_thumbnails``): :func:`failing_region_images`, kept beside its
ledger entry by :func:`keep_failing_region`.

When a replay hands back because the pixels of a step's region, or the area it changes, no
longer look as recorded (reason code ``screen_changed`` or ``area_changed``), two pictures of
that region are kept (:mod:`askcache.storage.ledger.spot_images`):

* **latest**: the region as the replay saw it when it handed back (the check's own look, in
  recorded screen pixels), scaled down to at most 96 px a side;
* **recorded**: what the trajectory file keeps of it. The file keeps hashes, not pixels; what
  it keeps of a screen is a 1/8-scale grey thumbnail of the screen before the first acting
  step (``start_state``) and, per step, the tiles near its point it changed, before and after.
  So the recorded picture is the region as those show it before the step (1/8-scale grey,
  shown in blocks; what the file does not keep is drawn in beige), or not kept when they show
  none of it.

**Never with a secret on it.** Neither picture is kept (the note says why, never the secret)
when the step types a secret (a ``{{secret:name}}`` placeholder, a parameter the file
describes as secret, or text holding a registered secret value), or when the region overlaps
a field an earlier step typed a secret into: the tiles that step changed when recorded, and a
band of the screen's width around where it typed (its anchor:
:func:`~askcache.foundation.actions.action_anchors`), as high as a check region. When an
earlier step typed a secret somewhere askcache cannot place (no anchor), no picture of any
later step is kept. A picture of a screen showing a secret askcache was never told about (a
page that prints a password it made up) cannot be recognised: keep the setting off for such
applications.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np
from PIL import Image

from askcache.agent.outbox_sync import RunWriter, within
from askcache.cachefile.format import CacheFile
from askcache.foundation.errors import AskCacheError
from askcache.foundation.geometry import Box
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.parameters import PLACEHOLDER, SECRET_PREFIX
from askcache.foundation.redaction import redact
from askcache.foundation.screen.thumbnails import ScreenStateConfig, Thumbnail
from askcache.replay.session import ReplaySession
from askcache.replay.transcript import secret_values
from askcache.storage.ledger import RunRecord
from askcache.storage.ledger.day_totals import spot_key
from askcache.storage.ledger.spot_images import SpotImages, png_of

__all__ = [
    "THUMBNAIL_CODES",
    "failing_region_images",
    "keep_failing_region",
    "secret_refusal",
]

logger = logging.getLogger(__name__)

THUMBNAIL_CODES = frozenset({"screen_changed", "area_changed"})
"""The hand-back reason codes whose failing region is kept: a step's pixel or area check."""

_FIELD_BAND = 1
"""A typed secret's field is taken as a band this many check regions high (and the screen's
width) around where it was typed (besides the tiles its typing changed when recorded)."""

_NOT_STORED = (238, 232, 213)
"""What the recorded picture shows where the file keeps no pixels (beige)."""


def keep_failing_region(
    writer: RunWriter, session: ReplaySession, record: RunRecord, entry_id: str
) -> bool:
    """Keep the failing region's thumbnails of ``session``'s hand-back beside ledger entry
    ``entry_id`` (see the module docstring); True when kept. A failure is logged, never
    raised, and bounded by the writer's ledger timeout (the run itself is done)."""
    images = failing_region_images(session, record, entry_id)
    if images is None:
        return False
    try:
        within(writer.ledger_timeout, lambda: writer.ledger.put_spot_images(images))
    except (AskCacheError, OSError) as exc:
        logger.warning("could not keep the failing region of %s: %s", record.trajectory, exc)
        return False
    return True


def failing_region_images(
    session: ReplaySession, record: RunRecord, entry_id: str
) -> SpotImages | None:
    """The thumbnails of the region ``session`` handed back on, for ledger entry
    ``entry_id`` (``record``); ``None`` when there is nothing to keep: it did not hand back
    on a pixel or area check, or the check's look was not kept (the replay ran without
    ``keep_failure_views``)."""
    index = record.stopped_at_step
    if record.status != "handed_back" or index is None:
        return None
    if record.reason_code not in THUMBNAIL_CODES:
        return None
    view = session.views.get(index)
    if view is None:
        return None
    images = SpotImages(
        trajectory=record.trajectory,
        spot=spot_key(index, record.reason_code, record.profile),
        entry_id=entry_id,
        at=record.started_at,
    )
    refused = secret_refusal(
        session.file,
        session.steps,
        session.anchors,
        index=index,
        box=view.box,
        values=session.parameter_values,
    )
    if refused is not None:
        images.latest_note = images.recorded_note = refused
        return images
    images.latest = png_of(view.region)
    recorded = recorded_region(session.file, session.steps, index, view.box)
    if recorded is None:
        images.recorded_note = (
            "not kept: the trajectory file keeps hashes of this region, no pixels"
        )
    else:
        images.recorded = png_of(recorded)
        images.recorded_note = "as the file keeps it: 1/8-scale grey, beige where it keeps none"
    return images


def secret_refusal(
    cache_file: CacheFile,
    steps: Sequence[ToolUseBlockParam],
    anchors: Sequence[tuple[int, int] | None],
    *,
    index: int,
    box: Box,
    values: Mapping[str, str],
) -> str | None:
    """Why no picture of region ``box`` (recorded screen pixels) of step ``index`` may be
    kept, or ``None`` when it may (see the module docstring's rule); never quotes a secret."""
    secret_names = {
        name for name, text in cache_file.cache_parameters.items() if text.startswith(SECRET_PREFIX)
    }
    secrets = secret_values(cache_file, values)
    recorded = cache_file.trajectory

    def types_secret(position: int) -> bool:
        as_recorded = recorded[position] if position < len(recorded) else None
        return any(
            _types_secret(step, secret_names, secrets, values)
            for step in (steps[position], as_recorded)
            if step is not None
        )

    if types_secret(index):
        return "not kept: the step types a secret"
    space = cache_file.metadata.coordinate_space
    width = space.width if space is not None else max(box[2], 1) * 4
    validation = cache_file.metadata.visual_validation
    side = validation.region_size if validation is not None else max(box[2] - box[0], 1)
    for earlier in range(index):
        if not types_secret(earlier):
            continue
        anchor = anchors[earlier] if earlier < len(anchors) else None
        if anchor is None:
            return "not kept: an earlier step typed a secret where askcache cannot place it"
        half = side * _FIELD_BAND // 2
        fields = [(0, anchor[1] - half, width, anchor[1] + half)]
        fields.extend(_effect_boxes(cache_file, steps[earlier]))
        if any(_overlap(box, field) for field in fields):
            return f"not kept: the region overlaps the field step {earlier} typed a secret into"
    return None


def recorded_region(
    cache_file: CacheFile, steps: Sequence[ToolUseBlockParam], index: int, box: Box
) -> Image.Image | None:
    """Region ``box`` before step ``index`` as the file keeps it (the start screen for the
    first acting step, then the tiles the step changed, as they were before it): 1/8-scale
    grey drawn in blocks, beige where nothing is kept; ``None`` when nothing of it is."""
    config = cache_file.metadata.screen_state
    if config is None:
        return None
    block = config.block
    left, top = box[0] // block, box[1] // block
    right, bottom = -(-box[2] // block), -(-box[3] // block)
    if right <= left or bottom <= top:
        return None
    grey = np.zeros((bottom - top, right - left), dtype=np.int16) - 1
    start = cache_file.metadata.start_state
    if start is not None and _first_acting(steps) == index:
        try:
            values = Thumbnail.from_end_state(start, config).values
        except ValueError:
            values = None
        if values is not None:
            part = values[top:bottom, left:right]
            grey[: part.shape[0], : part.shape[1]] = part
    for (x, y), tile in _effect_tiles(cache_file, steps[index], config):
        for row in range(tile.shape[0]):
            for column in range(tile.shape[1]):
                ty, tx = y + row - top, x + column - left
                if 0 <= ty < grey.shape[0] and 0 <= tx < grey.shape[1]:
                    grey[ty, tx] = tile[row, column]
    if (grey < 0).all():
        return None
    rgb = np.empty((*grey.shape, 3), dtype=np.uint8)
    rgb[:] = _NOT_STORED
    known = grey >= 0
    rgb[known] = np.repeat(grey[known].astype(np.uint8)[:, None], 3, axis=1)
    small = Image.fromarray(rgb, "RGB")
    return small.resize((small.width * block, small.height * block), Image.Resampling.NEAREST)


def _types_secret(
    step: ToolUseBlockParam,
    secret_names: set[str],
    secrets: Mapping[str, str],
    values: Mapping[str, str],
) -> bool:
    """True when ``step`` types a secret: a secret placeholder, a secret parameter's value,
    or text holding a registered secret value (:func:`~askcache.foundation.redaction.redact`)."""
    text = step.input.get("text")
    if not isinstance(text, str) or not text:
        return False
    for match in PLACEHOLDER.finditer(text):
        if match.group(1) or match.group(2) in secret_names or match.group(2) in secrets:
            return True
    filled = PLACEHOLDER.sub(lambda m: values.get(m.group(2), ""), text)
    if any(value and value in filled for value in secrets.values()):
        return True
    return redact(filled) != filled


def _first_acting(steps: Sequence[ToolUseBlockParam]) -> int | None:
    for position, step in enumerate(steps):
        if step.visual_representation is not None:
            return position
    return None


def _tile_grid(cache_file: CacheFile, config: ScreenStateConfig) -> int | None:
    """Tiles per row of the file's thumbnails."""
    meta = cache_file.metadata
    if meta.end_state is not None:
        width = meta.end_state.width
    elif meta.coordinate_space is not None:
        width = -(-meta.coordinate_space.width // config.block)
    else:
        return None
    return -(-width // config.tile)


def _effect_tiles(
    cache_file: CacheFile, step: ToolUseBlockParam, config: ScreenStateConfig
) -> list[tuple[tuple[int, int], np.ndarray]]:
    """The step's effect tiles before it: (thumbnail x, y of the tile's corner, its values)."""
    effect = step.effect
    columns = _tile_grid(cache_file, config)
    if effect is None or not effect.tiles or columns is None:
        return []
    side = config.tile
    try:
        before = bytes.fromhex(effect.before)
    except ValueError:
        return []
    if len(before) != side * side * len(effect.tiles):
        return []
    found = []
    for position, tile in enumerate(effect.tiles):
        row, column = divmod(tile, columns)
        chunk = before[position * side * side : (position + 1) * side * side]
        values = np.frombuffer(chunk, dtype=np.uint8).reshape(side, side)
        found.append(((column * side, row * side), values))
    return found


def _effect_boxes(cache_file: CacheFile, step: ToolUseBlockParam) -> list[Box]:
    """The tiles a step changed when recorded, as boxes in screen pixels."""
    config = cache_file.metadata.screen_state
    effect = step.effect
    columns = _tile_grid(cache_file, config) if config is not None else None
    if config is None or effect is None or columns is None:
        return []
    size = config.tile_pixels
    boxes: list[Box] = []
    for tile in [*effect.tiles, *effect.parameter_before, *effect.parameter_after]:
        row, column = divmod(tile, columns)
        boxes.append((column * size, row * size, (column + 1) * size, (row + 1) * size))
    return boxes


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
