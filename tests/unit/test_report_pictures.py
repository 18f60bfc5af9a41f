"""The report's pictures drawn from a cache file alone, and the screens ``--screenshots`` reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from askcache.cli.commands.report import build_report, screens_in
from askcache.cli.html_report import MARK_COLOUR, effect_figure, end_state_figure
from askcache.foundation.actions import action_anchors
from askcache.foundation.errors import AskCacheError
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.testing import SimulatedFormApp
from tests.helpers import record_form


def test_effect_tiles_are_drawn_where_they_lie_with_their_stored_values(
    storage: LocalCacheStorage,
) -> None:
    cache_file = record_form(storage)
    anchors = list(action_anchors(cache_file.trajectory))
    step = cache_file.trajectory[2]  # typing: the field's text changed
    assert step.effect is not None
    assert step.effect.tiles
    figure = effect_figure(cache_file, 2, anchors[2])
    assert figure is not None
    config = cache_file.metadata.screen_state
    assert config is not None
    zoom, side = config.block // 2, config.tile
    columns = -(-cache_file.metadata.end_state.width // side)  # type: ignore[union-attr]
    pixels = np.asarray(figure.image.convert("RGB")).astype(int)
    rows, cols = zip(*(divmod(t, columns) for t in step.effect.tiles), strict=True)
    # the part shown: the tiles and the step's region, one tile more each way
    validation = cache_file.metadata.visual_validation
    assert validation is not None
    assert anchors[2] is not None
    half = validation.region_size / 2
    region_left, region_top = ((v - half) / config.block for v in anchors[2])
    left = max(0, int(min(min(cols) * side, region_left)) - side)
    top = max(0, int(min(min(rows) * side, region_top)) - side)
    panel_width = (figure.image.width - 8) // 2
    before, after = bytes.fromhex(step.effect.before), bytes.fromhex(step.effect.after)
    for number, tile in enumerate(step.effect.tiles):
        row, column = divmod(tile, columns)
        # the middle of the tile's top-left thumbnail pixel, in each panel
        x = (column * side - left) * zoom + zoom // 2
        y = (row * side - top) * zoom + zoom // 2
        first = number * side * side
        assert tuple(pixels[y, x]) == (before[first],) * 3
        assert tuple(pixels[y, panel_width + 8 + x]) == (after[first],) * 3
    assert figure.image.height < 400  # half the screen's size, not a whole screen
    assert effect_figure(cache_file, 0, anchors[0]) is None  # a screenshot changes nothing


def test_the_end_state_marks_every_acting_step(storage: LocalCacheStorage) -> None:
    cache_file = record_form(storage)
    figure = end_state_figure(cache_file)
    assert figure is not None
    pixels = np.asarray(figure.image).astype(int)
    red = np.abs(pixels - np.array(MARK_COLOUR)).sum(axis=2) < 60
    state = cache_file.metadata.end_state
    assert state is not None
    scale = figure.image.width // state.width
    for anchor in {a for a in action_anchors(cache_file.trajectory) if a is not None}:
        x, y = (round(v * scale / 8) for v in anchor)
        assert red[y - 3 : y + 4, x - 3 : x + 4].any()
    cache_file.metadata.end_state = None
    assert end_state_figure(cache_file) is None
    report = build_report("form.json", cache_file, [])
    assert report.end_state is None
    assert report.runs == []
    assert report.totals == ""


def test_screenshots_are_read_by_step_number(tmp_path: Path) -> None:
    screen = SimulatedFormApp().screenshot()
    screen.save(tmp_path / "only.png")
    assert sorted(screens_in(tmp_path)) == [0]  # one PNG without a number: every step
    assert sorted(screens_in(tmp_path / "only.png")) == [0]
    screen.save(tmp_path / "step_03.png")
    screen.save(tmp_path / "1.png")
    (tmp_path / "notes.txt").write_text("not a screen")
    assert sorted(screens_in(tmp_path)) == [1, 3]
    screen.save(tmp_path / "step-3.png")
    with pytest.raises(AskCacheError, match="are both step 3"):
        screens_in(tmp_path)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "2.png").write_bytes(b"not a png")
    with pytest.raises(AskCacheError, match=r"2\.png"):
        screens_in(tmp_path / "broken")
