"""Per-step masks learned from repeat runs: a counter next to the Save button varies between
runs; after learning from one repeat run, that variation no longer hands back."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import ImageDraw, ImageFont

from askcache.fingerprint.masks import StepMask
from askcache.fingerprint.step import StepFingerprint, check_step_representation, decode_screenshot
from askcache.foundation.errors import InvalidHashError
from askcache.foundation.messages import ImageBlockParam, MessageParam
from askcache.foundation.settings import CacheWritingSettings
from askcache.record.mask_learning import learn_masks
from askcache.record.recording import CacheManager
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import SimulatedFormApp
from askcache.tools import encode_png
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
    from askcache.cli.app import main
    from askcache.record.mask_learning import save_run_screens
    from askcache.storage.versions import TrajectoryVersions

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
    from askcache.cli.app import main

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


def _record(tmp_path: Path) -> LocalCacheStorage:
    storage = LocalCacheStorage(tmp_path / "cache")
    manager = CacheManager(storage, CacheWritingSettings(filename="form.json"))
    manager.start_recording(GOAL)
    manager.finish_recording(_history("17"))
    return storage


def test_a_run_on_a_wrong_screen_is_not_learned_from_and_the_check_still_hands_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from askcache.cli.app import main
    from askcache.record.mask_learning import save_run_screens

    storage = _record(tmp_path)
    recorded = storage.read("form.json")
    banner = SimulatedFormApp(layout="banner")
    folder = tmp_path / "banner"
    save_run_screens(run_history(banner, form_calls(banner)), folder)
    where = ["--cache-dir", str(tmp_path / "cache")]

    assert main(["tune", "form", "--run", str(folder), *where]) == 0
    out = capsys.readouterr().out
    assert (
        "step 1 (computer): run 0 left out: its screen differs in 32 of 64 main-hash bits, "
        "more than a run of the same screen varies (at most 16): not learned from"
    ) in out
    assert "step 3 (computer): run 0 left out" in out
    assert "3 run(s) left out at 3 step(s)" in out
    assert "ignored from now on" not in out
    assert "the masks are as they were, nothing written" in out
    assert storage.read("form.json") == recorded
    cache_file = load_cache_file(storage, "form.json")
    assert all(step.visual_mask is None for step in cache_file.trajectory)
    config = cache_file.metadata.visual_validation
    assert config is not None
    screen = SimulatedFormApp(layout="banner").screenshot()
    for step in cache_file.trajectory[1:]:
        stored = StepFingerprint.of(step)
        assert stored is not None
        assert not check_step_representation(screen, step, stored, config).matched

    # --json lists the runs left out, by step, with the folder
    assert main(["tune", "form", "--run", str(folder), "--json", *where]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(run["step"], run["run"]) for run in report["left_out"]] == [(1, 0), (2, 0), (3, 0)]
    assert report["left_out"][0]["folder"] == str(folder)
    assert report["masked_steps"] == []


def test_a_right_run_is_learned_from_beside_a_wrong_one(tmp_path: Path) -> None:
    storage = _record(tmp_path)
    cache_file = load_cache_file(storage, "form.json")
    banner = SimulatedFormApp(layout="banner")
    from askcache.record.mask_learning import learn_mask_report, run_screens

    learning = learn_mask_report(
        cache_file,
        [run_screens(run_history(banner, form_calls(banner))), run_screens(_history("42"))],
    )
    assert {(run.step, run.run) for run in learning.left_out} == {(1, 0), (2, 0), (3, 0)}
    save = cache_file.trajectory[3]
    assert save.visual_mask is not None
    mask = StepMask.decode(save.visual_mask)
    assert 0 < mask.main.bit_count() <= 16
    assert "varied across 1 repeat run(s)" in learning.lines[-1]


def test_the_accumulated_mask_never_passes_the_bound(tmp_path: Path) -> None:
    from askcache.record.mask_learning import learn_mask_report, run_screens

    storage = _record(tmp_path)
    cache_file = load_cache_file(storage, "form.json")
    counters = ["42", "9", "123", "5", "88", "3071", "0"]
    learning = learn_mask_report(cache_file, [run_screens(_history(c)) for c in counters])
    save = cache_file.trajectory[3]
    assert save.visual_mask is not None
    assert StepMask.decode(save.visual_mask).main.bit_count() <= 16
    # each counter alone varies 12 bits or fewer; together they would pass 16, so some are
    # left out and the line says the mask would grow too wide
    assert learning.left_out
    assert all("the mask would ignore" in run.reason for run in learning.left_out)
    # what tune learns stays within what askcache lint accepts
    from askcache.cli.lint_rules import lint_cache_file

    assert not [p for p in lint_cache_file(cache_file) if p.check == "mask"]


def test_a_run_whose_tone_changed_a_lot_is_not_learned_from(tmp_path: Path) -> None:
    from PIL import ImageEnhance

    from askcache.record.mask_learning import learn_mask_report, run_screens

    storage = _record(tmp_path)
    cache_file = load_cache_file(storage, "form.json")
    screens = run_screens(_history("17"))
    dimmed = {index: ImageEnhance.Brightness(s).enhance(0.6) for index, s in screens.items()}
    learning = learn_mask_report(cache_file, [dimmed])
    assert learning.left_out
    assert any("brightness" in run.reason or "contrast" in run.reason for run in learning.left_out)
    assert all(step.visual_mask is None for step in cache_file.trajectory)


def test_lint_warns_on_a_hand_widened_mask_and_diff_shows_a_mask_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from askcache.cli.app import main
    from askcache.cli.commands.heal import diff_lines
    from askcache.cli.lint_rules import lint_cache_file
    from askcache.storage.cache_storage import save_cache_file

    storage = _record(tmp_path)
    before = load_cache_file(storage, "form.json")
    assert not [p for p in lint_cache_file(before) if p.check == "mask"]
    after = load_cache_file(storage, "form.json")
    after.trajectory[1].visual_mask = StepMask(
        main=(1 << 32) - 1, detail=(1 << 128) - 1, brightness=0.5
    ).encode()
    after.trajectory[3].visual_mask = StepMask(main=0b111, detail=0b11).encode()
    problems = [p for p in lint_cache_file(after) if p.check == "mask"]
    assert [(p.level, p.step) for p in problems] == [("warning", 1)]
    assert "32 of 64 main hash bits" in problems[0].message
    assert "128 of 256 detail hash bits" in problems[0].message
    assert "brightness tolerance 50% (the file's 6%)" in problems[0].message

    lines = diff_lines(before, after)
    assert lines[1].endswith(
        "(mask changed: 32 main bits ignored, 128 detail bits ignored, brightness tolerance 50%)"
    )
    assert lines[3].endswith("(mask changed: 3 main bits ignored, 2 detail bits ignored)")
    assert "mask" not in lines[2]
    assert "mask removed" in diff_lines(after, before)[1]

    save_cache_file(storage, "form.json", after)
    where = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["lint", "form", *where]) == 0
    assert "warning: [mask] step 1: its mask ignores 32 of 64" in capsys.readouterr().out
    assert main(["lint", "form", "--strict", *where]) == 1
    after.trajectory[1].visual_mask = "not a mask"
    problems = [p for p in lint_cache_file(after) if p.check == "mask"]
    assert [(p.level, p.step) for p in problems] == [("error", 1)]


def test_an_all_black_run_is_refused_at_every_step_and_black_still_hands_back(
    tmp_path: Path,
) -> None:
    from PIL import Image

    from askcache.record.mask_learning import learn_mask_report

    storage = _record(tmp_path)
    cache_file = load_cache_file(storage, "form.json")
    black = Image.new("RGB", SimulatedFormApp().screenshot().size)
    learning = learn_mask_report(cache_file, [dict.fromkeys(range(4), black)])
    assert [run.step for run in learning.left_out] == [1, 2, 3]
    # over the flat Name field the hashes barely move: the tone cap is what refuses it
    assert "brightness differs by 100%" in learning.left_out[0].reason
    assert all(step.visual_mask is None for step in cache_file.trajectory)
    config = cache_file.metadata.visual_validation
    assert config is not None
    for step in cache_file.trajectory[1:]:
        stored = StepFingerprint.of(step)
        assert stored is not None
        assert not check_step_representation(black, step, stored, config).matched
