"""Recording: which steps get hashes, from which screenshot, and what the file holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from askcache.cachefile.format import CacheFile, CoordinateSpace, DetailCheckConfig
from askcache.cli.app import main
from askcache.fingerprint.step import compute_hash, region_box
from askcache.foundation.errors import (
    CacheOverwriteRefusedError,
    InvalidScreenshotError,
    InvalidSettingsError,
)
from askcache.foundation.geometry import Point
from askcache.foundation.messages import MessageParam, ToolUseBlockParam, Usage
from askcache.foundation.screen.thumbnails import ScreenStateConfig
from askcache.foundation.settings import (
    DEFAULT_DETAIL_BLUR,
    DEFAULT_DETAIL_NOISE_FLOOR,
    DEFAULT_DETAIL_THRESHOLD,
    DEFAULT_NOISE_FLOOR,
    CacheWritingSettings,
    CachingSettings,
)
from askcache.record.looks import LOOK_INTERVAL, LOOK_SECONDS
from askcache.record.recording import CacheManager, default_filename, steps_with_screens
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import SimulatedFormApp
from askcache.tools import ComputerTool, ToolCollection
from tests.helpers import GOAL, computer_call, form_calls, record_form, run_history, screenshot_in


def _record(storage: LocalCacheStorage, messages: list[MessageParam], **settings: object) -> str:
    manager = CacheManager(storage, CacheWritingSettings(**settings))  # type: ignore[arg-type]
    manager.start_recording(GOAL)
    return manager.finish_recording(messages)


def test_validated_actions_get_hashes_and_others_null(
    app: SimulatedFormApp, storage: LocalCacheStorage
) -> None:
    name = _record(storage, run_history(app, form_calls(app)), filename="form.json")
    cache_file = load_cache_file(storage, name)
    hashes = [step.visual_representation for step in cache_file.trajectory]
    assert hashes[0] is None
    assert all(h is not None and len(h) == 16 for h in hashes[1:])
    details = [step.visual_detail for step in cache_file.trajectory]
    assert details[0] is None
    assert all(d is not None and len(d) == 64 for d in details[1:])
    visual = cache_file.metadata.visual_validation
    assert visual is not None
    assert (visual.method, visual.hash_size, visual.region_size) == ("phash", 8, 100)
    assert (visual.threshold, visual.shift_tolerance) == (2, 1)
    assert visual.detail == DetailCheckConfig(
        hash_size=16,
        region_size=48,
        threshold=DEFAULT_DETAIL_THRESHOLD,
        blur=DEFAULT_DETAIL_BLUR,
        noise_floor=DEFAULT_DETAIL_NOISE_FLOOR,
    )
    assert visual.noise_floor == DEFAULT_NOISE_FLOOR
    assert visual.tone is not None
    assert visual.target is not None
    tones = [step.visual_tone for step in cache_file.trajectory]
    assert tones[0] is None
    assert all(t is not None and len(t) == 8 for t in tones[1:])
    # the Name field (clicked, then typed into) and the Save button (110 px) are wider than
    # the 100 px region: their whole boxes are stored
    targets = [step.visual_target for step in cache_file.trajectory]
    assert targets[0] is None
    assert targets[1] is not None
    assert targets[2] == targets[1]
    assert targets[3] is not None
    assert cache_file.metadata.coordinate_space == CoordinateSpace(width=640, height=400)
    assert cache_file.metadata.goal == GOAL


def test_hash_comes_from_the_screenshot_before_the_step(
    app: SimulatedFormApp, storage: LocalCacheStorage
) -> None:
    messages = run_history(app, form_calls(app))
    name = _record(storage, messages, filename="form.json")
    save = load_cache_file(storage, name).trajectory[3]
    before = screenshot_in(messages[6])
    box = region_box(before.size, tuple(save.input["coordinate"]), 100)  # type: ignore[arg-type]
    assert box is not None
    assert save.visual_representation == compute_hash(before.crop(box), "phash", 8)
    detail_box = region_box(before.size, tuple(save.input["coordinate"]), 48)  # type: ignore[arg-type]
    assert detail_box is not None
    assert save.visual_detail == compute_hash(
        before.crop(detail_box), "phash", 16, DEFAULT_DETAIL_BLUR
    )


def test_without_a_detail_region_only_the_main_hash_is_stored(
    app: SimulatedFormApp, storage: LocalCacheStorage
) -> None:
    name = _record(
        storage,
        run_history(app, form_calls(app)),
        filename="form.json",
        visual_validation_detail_region_size=None,
    )
    cache_file = load_cache_file(storage, name)
    assert cache_file.metadata.visual_validation is not None
    assert cache_file.metadata.visual_validation.detail is None
    assert all(step.visual_detail is None for step in cache_file.trajectory)
    assert sum(step.visual_representation is not None for step in cache_file.trajectory) == 3


def test_several_calls_in_one_message_each_use_the_screen_after_the_previous(
    app: SimulatedFormApp,
) -> None:
    calls = form_calls(app)
    messages = run_history(app, [calls[0], [calls[1], calls[2], calls[3]]])
    steps = steps_with_screens(messages)
    results = {r.tool_use_id: r for r in messages[-1].tool_results}
    assert steps[2].before is results[calls[1].id].content[1]  # type: ignore[index]
    assert steps[3].before is results[calls[2].id].content[1]  # type: ignore[index]
    assert steps[1].before is messages[2].tool_results[0].content[1]  # type: ignore[index]
    assert steps[3].after is results[calls[3].id].content[1]  # type: ignore[index]


@pytest.mark.parametrize("method", ["ahash", "dhash", "whash"])
def test_other_methods_and_hash_sizes(
    app: SimulatedFormApp, storage: LocalCacheStorage, method: str
) -> None:
    name = _record(
        storage,
        run_history(app, form_calls(app)),
        filename="f.json",
        visual_verification_method=method,
        hash_size=16,
    )
    cache_file = load_cache_file(storage, name)
    assert cache_file.metadata.visual_validation is not None
    assert cache_file.metadata.visual_validation.method == method
    assert len(cache_file.trajectory[1].visual_representation or "") == 64


def test_method_none_stores_no_validation(
    app: SimulatedFormApp, storage: LocalCacheStorage
) -> None:
    name = _record(
        storage,
        run_history(app, form_calls(app)),
        filename="f.json",
        visual_verification_method="none",
    )
    cache_file = load_cache_file(storage, name)
    assert cache_file.metadata.visual_validation is None
    assert all(step.visual_representation is None for step in cache_file.trajectory)


@pytest.mark.parametrize(
    ("actions", "expected"),
    [
        ({"type"}, [False, False, True, False]),
        ({"text_entry"}, [False, False, True, False]),  # seed 002's words are aliases
        ({"click"}, [False, True, False, True]),
        ({"click", "text_entry"}, [False, True, True, True]),
    ],
)
def test_validated_actions_setting_selects_steps(
    app: SimulatedFormApp, storage: LocalCacheStorage, actions: set[str], expected: list[bool]
) -> None:
    name = _record(
        storage,
        run_history(app, form_calls(app)),
        filename="f.json",
        validated_actions=frozenset(actions),
    )
    hashes = [
        s.visual_representation is not None for s in load_cache_file(storage, name).trajectory
    ]
    assert hashes == expected


def test_typing_is_hashed_around_the_field_clicked_before(
    app: SimulatedFormApp, storage: LocalCacheStorage
) -> None:
    messages = run_history(app, form_calls(app))
    name = _record(storage, messages, filename="f.json")
    typing = load_cache_file(storage, name).trajectory[2]
    before = screenshot_in(messages[4])
    field = app.widget("name").center
    box = region_box(before.size, field, 100)
    assert box is not None
    assert typing.visual_representation == compute_hash(before.crop(box), "phash", 8)


def test_parameters_become_placeholders(app: SimulatedFormApp, storage: LocalCacheStorage) -> None:
    messages = run_history(app, form_calls(app, "Ada Lovelace"), goal="Save Ada Lovelace")
    manager = CacheManager(
        storage, CacheWritingSettings(filename="p.json", parameters={"person": "Ada Lovelace"})
    )
    manager.start_recording("Save Ada Lovelace")
    cache_file = load_cache_file(storage, manager.finish_recording(messages))
    assert cache_file.metadata.goal == "Save {{person}}"
    assert cache_file.trajectory[2].input == {"action": "type", "text": "{{person}}"}
    assert cache_file.cache_parameters == {"person": ""}


def test_caching_tool_calls_are_not_recorded_and_usage_is_summed(
    app: SimulatedFormApp, storage: LocalCacheStorage
) -> None:
    messages = run_history(app, form_calls(app))
    listing = ToolUseBlockParam(id="toolu_list", name="list_cached_trajectories", input={})
    messages[1] = MessageParam(
        role="assistant",
        content=[listing, *messages[1].tool_uses],
        usage=Usage(input_tokens=100, output_tokens=7),
    )
    messages[3].usage = Usage(input_tokens=50, output_tokens=3)
    cache_file = load_cache_file(storage, _record(storage, messages, filename="f.json"))
    assert "toolu_list" not in {s.id for s in cache_file.trajectory}
    assert len(cache_file.trajectory) == 4
    assert cache_file.metadata.recording.model_calls == 2
    assert cache_file.metadata.recording.usage == Usage(input_tokens=150, output_tokens=10)


def test_generated_filename_when_none_is_given(
    app: SimulatedFormApp, storage: LocalCacheStorage
) -> None:
    name = _record(storage, run_history(app, form_calls(app)))
    assert name.startswith("type-ada-lovelace-into-name-and-press-sa-")  # 40 characters
    assert name.endswith(".json")
    assert storage.list_names() == [name]
    assert default_filename("!!!").startswith("trajectory-")


def test_step_without_any_screenshot_before_is_not_hashed(storage: LocalCacheStorage) -> None:
    messages = [
        MessageParam(role="user", content=GOAL),
        MessageParam(role="assistant", content=[computer_call("left_click", coordinate=[5, 5])]),
    ]
    cache_file = load_cache_file(storage, _record(storage, messages, filename="f.json"))
    assert cache_file.trajectory[0].visual_representation is None
    assert cache_file.metadata.coordinate_space is None


def test_corrupt_screenshot_names_the_step_and_writes_nothing(
    app: SimulatedFormApp, storage: LocalCacheStorage
) -> None:
    messages = run_history(app, form_calls(app))
    messages[2].tool_results[0].content[1].source.data = "bm90IGFuIGltYWdl"  # type: ignore[union-attr,index]
    with pytest.raises(InvalidScreenshotError, match="after step 0"):
        _record(storage, messages, filename="f.json")
    assert storage.list_names() == []


def test_recording_again_keeps_the_earlier_trajectory_as_a_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = LocalCacheStorage(tmp_path)
    record_form(storage)  # "Ada Lovelace"
    first = storage.read("form.json")
    app = SimulatedFormApp()
    manager = CacheManager(storage, CacheWritingSettings(filename="form.json"))
    manager.start_recording(GOAL)
    manager.finish_recording(run_history(app, form_calls(app, "Grace Hopper")))
    second = storage.read("form.json")
    assert second != first
    versions = TrajectoryVersions(storage, "form.json")
    assert versions.numbers() == [1, 2]
    assert storage.read(versions.version_name(1)) == first
    assert versions.current_number() == 2
    # the same versions a heal writes: diff and rollback work on them
    assert main(["diff", "form", "--cache-dir", str(tmp_path)]) == 0
    assert "v1" in capsys.readouterr().out
    assert main(["rollback", "form", "--cache-dir", str(tmp_path)]) == 0
    assert storage.read("form.json") == first
    # recorded a third time: the rolled-back one is kept too
    record_form(storage)
    assert len(versions.numbers()) == 4
    assert {storage.read(versions.version_name(n)) for n in versions.numbers()} >= {first, second}


def test_with_versions_off_recording_over_a_trajectory_is_refused_in_one_line(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
    before = storage.read("form.json")
    app = SimulatedFormApp()
    manager = CacheManager(storage, CacheWritingSettings(filename="form.json"), keep_versions=0)
    with pytest.raises(CacheOverwriteRefusedError) as info:
        manager.start_recording(GOAL)  # before any model call
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{storage.describe('form.json')} already exists")
    assert "versions are off (keep_versions=0)" in message
    assert "keep versions (keep_versions=1 or more)" in message
    assert isinstance(info.value, FileExistsError)
    # a file that appeared while the model worked is not replaced either; the recording is
    # not lost: it is kept as a proposal, which the one-line error names
    other = CacheManager(storage, CacheWritingSettings(filename="new.json"), keep_versions=0)
    other.start_recording(GOAL)
    storage.write("new.json", before)
    with pytest.raises(CacheOverwriteRefusedError) as refused:
        other.finish_recording(run_history(app, form_calls(app)))
    assert storage.read("form.json") == storage.read("new.json") == before
    proposals = TrajectoryVersions(storage, "new.json").proposals()
    assert len(proposals) == 1
    assert storage.list_prefix(".versions") == proposals
    assert refused.value.kept_as == storage.describe(proposals[0])
    assert f"kept as the proposal {storage.describe(proposals[0])}" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert load_cache_file(storage, proposals[0]).trajectory
    # a new name records as before
    fresh = CacheManager(storage, CacheWritingSettings(filename="fresh.json"), keep_versions=0)
    fresh.start_recording(GOAL)
    fresh.finish_recording(run_history(app, form_calls(app)))
    assert storage.exists("fresh.json")


def test_versions_off_is_a_setting_and_heals_are_then_only_proposed() -> None:
    assert CachingSettings(keep_versions=0).keep_versions == 0
    with pytest.raises(InvalidSettingsError, match="keep_versions"):
        CachingSettings(keep_versions=-1)


class _ChangingStorage(LocalCacheStorage):
    """Another writer replaces ``form.json`` between every read and the commit."""

    reads = 0

    def read(self, name: str) -> bytes:
        data = super().read(name)
        if name == "form.json":
            self.reads += 1
            super().write(name, data + b" ")  # changed again right after it was read
        return data


def test_a_recording_over_a_trajectory_that_keeps_changing_is_kept_as_a_proposal(
    tmp_path: Path,
) -> None:
    record_form(LocalCacheStorage(tmp_path))
    storage = _ChangingStorage(tmp_path)
    app = SimulatedFormApp()
    manager = CacheManager(storage, CacheWritingSettings(filename="form.json"))
    manager.start_recording(GOAL)
    manager.finish_recording(run_history(app, form_calls(app, "Grace Hopper")))
    versions = TrajectoryVersions(LocalCacheStorage(tmp_path), "form.json")
    proposals = versions.proposals()
    assert len(proposals) == 1  # the recording is not lost
    assert b"Grace Hopper" in LocalCacheStorage(tmp_path).read(proposals[0])
    assert storage.reads >= 5


class CaretApp(SimulatedFormApp):
    """The form with a text caret in the focused field, which blinks: the screenshot right
    after a click catches it off, later looks catch it on."""

    def __init__(self) -> None:
        super().__init__()
        self.off_looks = 0
        self.looks = 0

    def click(self, point: Point | None, button: str, count: int, modifiers: str | None) -> None:
        super().click(point, button, count, modifiers)
        self.off_looks = 1

    def caret(self) -> tuple[int, int]:
        assert self.focus is not None
        left, top, _, _ = self.widget(self.focus).box
        return (left + 8, top + 6)

    def screenshot(self) -> Image.Image:
        self.looks += 1
        image = super().screenshot()
        if self.off_looks:
            self.off_looks -= 1
        elif self.focus is not None:
            x, y = self.caret()
            ImageDraw.Draw(image).line([(x, y), (x, y + 18)], fill="black")
        return image


def _record_with_caret(storage: LocalCacheStorage, *, looking: bool) -> tuple[CaretApp, CacheFile]:
    """Record the form on :class:`CaretApp` as the agent's conversation does (each call's
    message, ``before_tool``, the call), with the computer tool's screen when ``looking``."""
    app = CaretApp()
    tool = ComputerTool(app)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    manager = CacheManager(
        storage,
        CacheWritingSettings(filename="caret.json"),
        capture=tool.capture if looking else None,
        clock=lambda: now[0],
        sleep=sleep,
    )
    manager.start_recording(GOAL)
    tools = ToolCollection([tool])
    messages = [MessageParam(role="user", content=GOAL)]
    for call in form_calls(app):
        messages.append(MessageParam(role="assistant", content=[call]))
        manager.before_tool(call, messages)  # as the conversation calls it: the call is in
        messages.append(MessageParam(role="user", content=[tools.run(call)[0]]))
    return app, manager.build_cache_file(messages)


def _tile(point: tuple[int, int], config: ScreenStateConfig, width: int) -> int:
    columns = -(-width // config.tile_pixels)
    return point[1] // config.tile_pixels * columns + point[0] // config.tile_pixels


def test_a_caret_off_in_the_screenshot_after_a_click_is_seen_by_looking_again(
    storage: LocalCacheStorage,
) -> None:
    # the click's screenshot shows the field focused but its caret blinked off: from it
    # alone, the click's recorded effect misses the caret
    app, blind = _record_with_caret(storage, looking=False)
    config = blind.metadata.screen_state
    assert config is not None
    caret = _tile(app.caret(), config, app.width)
    click = blind.trajectory[1].effect
    assert click is not None
    assert caret not in click.tiles
    # the change was faint (a focus ring), so the recorder looked again before typing and
    # caught the caret on; the typing (text: not faint) was not looked at again
    app, seen = _record_with_caret(storage, looking=True)
    click = seen.trajectory[1].effect
    assert click is not None
    assert caret in click.tiles
    assert set(blind.trajectory[1].effect.tiles) < set(click.tiles)  # type: ignore[union-attr]
    looks_after_click = round(LOOK_SECONDS / LOOK_INTERVAL) + 1
    assert 4 + looks_after_click <= app.looks <= 4 + looks_after_click + 1  # looked once
