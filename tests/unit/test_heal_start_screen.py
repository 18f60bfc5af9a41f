"""The healed trajectory's start screen (:mod:`askcache.heal.start_screen`), on a recorded form."""

from __future__ import annotations

from PIL import Image, ImageDraw

from askcache.cachefile.format import CacheFile
from askcache.foundation.screen.thumbnails import StartState, Thumbnail
from askcache.heal.start_screen import MAX_VARYING_SHARE, healed_start_state
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.testing import SimulatedFormApp
from tests.helpers import record_form


def _recorded(storage: LocalCacheStorage) -> CacheFile:
    return record_form(storage)


def _start_of(image: Image.Image, cache_file: CacheFile) -> StartState:
    config = cache_file.metadata.screen_state
    assert config is not None
    return Thumbnail.of(image, config).to_start_state()


def test_a_run_whose_first_step_replayed_keeps_the_recorded_screen_and_leaves_out_its_changes(
    storage: LocalCacheStorage,
) -> None:
    old = _recorded(storage)
    recorded = old.metadata.start_state
    assert recorded is not None
    swapped = _start_of(SimulatedFormApp(layout="swapped").screenshot(), old)
    healed = healed_start_state(old, swapped, first_replayed=True)
    assert healed is not None
    assert healed.data == recorded.data
    config = old.metadata.screen_state
    assert config is not None
    differ = Thumbnail.from_end_state(recorded, config).differing_tiles(
        Thumbnail.from_end_state(swapped, config)
    )
    assert healed.varying == sorted(differ)
    assert healed.varying  # the buttons' tiles
    # a second heal on the same layout adds nothing
    old.metadata.start_state = healed
    assert healed_start_state(old, swapped, first_replayed=True) == healed


def test_a_run_that_rebuilt_the_trajectory_from_its_start_keeps_its_own_screen(
    storage: LocalCacheStorage,
) -> None:
    old = _recorded(storage)
    banner = _start_of(SimulatedFormApp(layout="banner").screenshot(), old)
    assert healed_start_state(old, banner, first_replayed=False) == banner


def test_a_start_screen_that_differs_in_most_tiles_is_not_learned(
    storage: LocalCacheStorage,
) -> None:
    old = _recorded(storage)
    image = SimulatedFormApp().screenshot()
    ImageDraw.Draw(image).rectangle((0, 0, image.width, image.height * 2 // 3), fill="black")
    half_drawn = _start_of(image, old)
    config = old.metadata.screen_state
    assert config is not None
    assert old.metadata.start_state is not None
    recorded = Thumbnail.from_end_state(old.metadata.start_state, config)
    share = len(recorded.differing_tiles(Thumbnail.from_end_state(half_drawn, config)))
    assert share > MAX_VARYING_SHARE * recorded.rows * recorded.columns
    assert healed_start_state(old, half_drawn, first_replayed=True) == old.metadata.start_state
