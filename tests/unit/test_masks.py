"""Per-step masks learned from repeat runs: a counter next to the Save button varies between
runs; after learning from one repeat run, that variation no longer hands back."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import ImageDraw, ImageFont

from askcache.errors import InvalidHashError
from askcache.masks import StepMask, learn_masks
from askcache.messages import ImageBlockParam, MessageParam
from askcache.recording import CacheManager
from askcache.settings import CacheWritingSettings
from askcache.storage import LocalCacheStorage, load_cache_file
from askcache.testing import SimulatedFormApp
from askcache.tools import encode_png
from askcache.visual import StepFingerprint, check_step_representation, decode_screenshot
from tests.helpers import GOAL, form_calls, run_history

FONT = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 12)


def _with_counter(messages: list[MessageParam], text: str) -> list[MessageParam]:
    """The history with a small counter drawn beside the Save button on every screenshot."""
    copied = [message.model_copy(deep=True) for message in messages]
    for message in copied:
        for result in message.tool_results:
            if isinstance(result.content, str):
                continue
            for item in result.content:
                if isinstance(item, ImageBlockParam):
                    image = decode_screenshot(item.source.data).copy()
                    ImageDraw.Draw(image).text((150, 240), text, font=FONT, fill=(0, 0, 0))
                    item.source.data = encode_png(image)
    return copied


def _history(counter: str) -> list[MessageParam]:
    app = SimulatedFormApp()
    return _with_counter(run_history(app, form_calls(app)), counter)


def test_a_counter_that_varied_in_a_repeat_run_is_masked(tmp_path: Path) -> None:
    storage = LocalCacheStorage(tmp_path / "cache")
    manager = CacheManager(storage, CacheWritingSettings(filename="form.json"))
    manager.start_recording(GOAL)
    manager.finish_recording(_history("17"))
    cache_file = load_cache_file(storage, "form.json")
    save = cache_file.trajectory[3]
    stored = StepFingerprint.of(save)
    assert stored is not None
    config = cache_file.metadata.visual_validation
    assert config is not None
    repeat = _history("42")
    screen = decode_screenshot(repeat[6].tool_results[0].content[1].source.data)  # type: ignore[union-attr]
    assert not check_step_representation(screen, save, stored, config).matched

    lines = learn_masks(cache_file, [repeat])
    assert len(lines) == 3  # the three validated steps
    assert lines[2].startswith("step 3 (computer): ")
    assert "varied across 1 repeat run(s)" in lines[2]
    assert "ignored from now on" in lines[2]
    assert save.visual_mask is not None
    masked = StepFingerprint.of(save)
    assert masked is not None
    assert check_step_representation(screen, save, masked, config).matched
    # a real change at the button still hands back
    other = SimulatedFormApp(layout="swapped").screenshot()
    assert not check_step_representation(other, save, masked, config).matched
    # the Name field's steps saw nothing vary (the counter is far from them)
    assert "nothing varied" in lines[0]
    assert cache_file.trajectory[1].visual_mask is None


def test_a_history_of_another_length_is_left_out(tmp_path: Path) -> None:
    history = _history("17")
    manager = CacheManager(LocalCacheStorage(tmp_path), CacheWritingSettings())
    cache_file = manager.build_cache_file(history)
    lines = learn_masks(cache_file, [history[:3]])
    assert lines[0] == "history 0 left out: 1 steps, the trajectory has 4"
    assert all(step.visual_mask is None for step in cache_file.trajectory)


@pytest.mark.parametrize("bad", ["", "1;2;3", "zz;0;0;0;0", "0;0;0;2.0;0"])
def test_a_malformed_mask_is_a_clear_error(bad: str) -> None:
    with pytest.raises(InvalidHashError, match="visual mask"):
        StepMask.decode(bad)


def test_a_mask_round_trips() -> None:
    mask = StepMask(main=0x11, detail=0xF00, ink=0b101, brightness=0.1, contrast=0.25)
    assert StepMask.decode(mask.encode()) == mask


def test_askcache_tune_learns_from_run_folders_writes_a_version_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from askcache.cli import main
    from askcache.masks import save_run_screens
    from askcache.versions import TrajectoryVersions

    storage = LocalCacheStorage(tmp_path / "cache")
    manager = CacheManager(storage, CacheWritingSettings(filename="form.json"))
    manager.start_recording(GOAL)
    manager.finish_recording(_history("17"))
    recorded = storage.read("form.json")
    repeat = _history("42")
    folder = tmp_path / "run42"
    assert [p.name for p in save_run_screens(repeat, folder)][:2] == ["step-1.png", "step-2.png"]
    where = ["--cache-dir", str(tmp_path / "cache")]

    assert main(["tune", "form", "--run", str(folder), "--check", *where]) == 0
    out = capsys.readouterr().out
    assert "step 3 (computer): " in out
    assert "--check, nothing written (1 steps would be masked)" in out
    assert storage.read("form.json") == recorded

    assert main(["tune", "form", "--run", str(folder), *where]) == 0
    assert "1 steps masked; version 2" in capsys.readouterr().out
    tuned = load_cache_file(storage, "form.json")
    save = tuned.trajectory[3]
    masked, config = StepFingerprint.of(save), tuned.metadata.visual_validation
    assert masked is not None
    assert config is not None
    screen = decode_screenshot(repeat[6].tool_results[0].content[1].source.data)  # type: ignore[union-attr]
    assert check_step_representation(screen, save, masked, config).matched
    assert TrajectoryVersions(storage, "form.json").resolve("1")[1] == recorded

    # the same runs again: nothing new, nothing written
    assert main(["tune", "form", "--run", str(folder), "--json", *where]) == 0
    assert '"version": null' in capsys.readouterr().out
    assert main(["rollback", "form.json", *where]) == 0
    assert storage.read("form.json") == recorded


def test_askcache_tune_errors_are_one_line_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from askcache.cli import main

    storage = LocalCacheStorage(tmp_path / "cache")
    manager = CacheManager(storage, CacheWritingSettings(filename="form.json"))
    manager.start_recording(GOAL)
    manager.finish_recording(_history("17"))
    recorded = storage.read("form.json")
    where = ["--cache-dir", str(tmp_path / "cache")]
    empty = tmp_path / "empty"
    empty.mkdir()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "step-3.png").write_bytes(b"not a png")
    cases = [
        (["tune", "form", "--run", str(tmp_path / "nowhere"), *where], "no such folder"),
        (["tune", "form", "--run", str(empty), *where], "no step-N.png in it"),
        (["tune", "form", "--run", str(broken), *where], "step-3.png"),
        (["tune", "missing", "--run", str(empty), *where], "missing.json"),
    ]
    for argv, fragment in cases:
        assert main(argv) == 3, argv
        err = capsys.readouterr().err
        assert fragment in err
        assert "Traceback" not in err
    assert main(["tune", "form", *where]) == 64  # --run is required
    assert main(["tune", "form", "--run", str(empty), "--keep-versions", "0", *where]) == 64
    assert storage.read("form.json") == recorded
