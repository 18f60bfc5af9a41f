"""Speed and memory of visual validation: per step, per recording, a 200-step replay.

    bash scripts/bench.sh speed

Measures, on real PNG screenshots of 1280x800 and 1920x1080: decoding a screenshot once
(base64 + PNG: the unavoidable cost), checking one step against it (crop, hash, distance)
for each method, and finish_recording per step; then a 200-step replay end to end with no
delay, in a fresh process for its peak memory. Writes the "speed" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, write_section

from askcache.cachefile.format import VisualValidationConfig
from askcache.conversation.turns import Conversation, SpeakerResult
from askcache.fingerprint.step import (
    check_step_representation,
    compute_step_representation,
    validation_config,
)
from askcache.foundation.actions import make_tool_use
from askcache.foundation.messages import MessageParam
from askcache.foundation.screen.png import decode_png, forget_images
from askcache.foundation.settings import (
    DEFAULT_DETAIL_BLUR,
    DEFAULT_DETAIL_NOISE_FLOOR,
    DEFAULT_NOISE_FLOOR,
    CacheExecutionSettings,
    CacheWritingSettings,
)
from askcache.record.recording import CacheManager
from askcache.replay import CacheExecutor
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import SimulatedFormApp
from askcache.tools import ComputerTool, ToolCollection, encode_png

METHODS = ["phash", "ahash", "dhash", "whash"]
FORMAT_2 = "format 2: phash ±1 px + detail"
SHIPPED = "shipped (format 3)"
SHIPPED_FIELD = "shipped, wide field"
SHIPPED_CHANGED = "shipped, screen changed"
CHECKS = [*METHODS, "phash ±1 px", FORMAT_2, SHIPPED, SHIPPED_FIELD, SHIPPED_CHANGED]
"""Methods at the exact position (8x8, 100 px), pHash with a 1 px shift tolerance, the
format-2 default (that plus the 16x16 detail hash of a 48 px region, also ±1 px) and the
shipped format-3 default (both hashes, the tone of both regions, and the whole target when
the element is wider than the region: the Name field).
On an unchanged screen the unmoved region matches at once (the other moves are skipped); on
a changed one the first failing part stops the shifted search: the worst case."""


def timed(function: Callable[[], object], repeat: int) -> float:
    """Median seconds of ``repeat`` calls."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def screens(width: int, height: int) -> tuple[str, object]:
    app = SimulatedFormApp(width=width, height=height)
    app.values["name"] = "Ada Lovelace"
    return encode_png(app.screenshot()), app


def per_step(width: int, height: int) -> dict[str, float]:
    data, app = screens(width, height)
    click = make_tool_use("left_click", "tool", coordinate=list(app.widget("save").center))  # type: ignore[attr-defined]

    def decode() -> object:
        forget_images()
        return decode_png(data)

    results = {"decode": timed(decode, 30)}
    image = decode_png(data)
    for method in METHODS:
        config = VisualValidationConfig(method=method, hash_size=8, region_size=100, threshold=10)
        stored = compute_step_representation(image, click, config)
        assert stored is not None
        results[method] = timed(
            lambda c=config, s=stored: check_step_representation(image, click, s, c), 200
        )
    shipped = validation_config(CacheWritingSettings())
    format_2 = validation_config(
        CacheWritingSettings(
            visual_validation_tone=False,
            visual_validation_target=False,
            visual_validation_detail_blur=0.0,
            visual_validation_detail_threshold=14,
            visual_validation_noise_floor=0.0,
            visual_validation_detail_noise_floor=0.0,
        )
    )
    assert shipped is not None
    assert format_2 is not None
    plain = format_2.model_copy(update={"detail": None})
    changed = SimulatedFormApp(width=width, height=height, layout="banner").screenshot()
    field = make_tool_use("left_click", "tool", coordinate=list(app.widget("name").center))  # type: ignore[attr-defined]
    for name, config, current, step in (
        ("phash ±1 px", plain, image, click),
        (FORMAT_2, format_2, image, click),
        (SHIPPED, shipped, image, click),
        (SHIPPED_FIELD, shipped, image, field),
        (SHIPPED_CHANGED, shipped, changed, click),
    ):
        stored = compute_step_representation(image, step, config)
        assert stored is not None
        if name == SHIPPED_FIELD:
            results["field target"] = float(stored.target is not None)
        results[name] = timed(
            lambda c=config, s=stored, i=current, t=step: check_step_representation(i, t, s, c),
            200,
        )
    return results


def _unique_screens_trajectory(app: SimulatedFormApp, steps: int) -> list:  # type: ignore[type-arg]
    """A screenshot, a click into the Name field, then typing one character per step: every
    screen differs from the one before, as on a real desktop, so no decode is shared."""
    calls = [
        make_tool_use("screenshot", "tool"),
        make_tool_use("left_click", "tool", coordinate=list(app.widget("name").center)),
    ]
    calls += [make_tool_use("type", "tool", text="abcdefghij"[i % 10]) for i in range(steps - 2)]
    return calls


def recording_per_step(width: int, height: int, steps: int = 40) -> tuple[float, float]:
    app = SimulatedFormApp(width=width, height=height)
    tool = ToolCollection([ComputerTool(app, scale=False)])
    messages = [MessageParam(role="user", content="goal")]
    for call in _unique_screens_trajectory(app, steps):
        messages.append(MessageParam(role="assistant", content=[call]))
        messages.append(MessageParam(role="user", content=[tool.run(call)[0]]))
    with tempfile.TemporaryDirectory() as folder:
        manager = CacheManager(LocalCacheStorage(folder), CacheWritingSettings(filename="b.json"))
        forget_images()
        started = time.perf_counter()
        manager.finish_recording(messages)
        total = time.perf_counter() - started
    forget_images()
    started = time.perf_counter()
    for message in messages[2::2][:-1]:  # each step's "before" screenshot
        decode_png(message.tool_results[0].content[1].source.data)  # type: ignore[union-attr,index]
    decode_only = time.perf_counter() - started
    return total / steps, decode_only / steps


class _Done:
    name = "agent"

    def handle_step(self, conversation: Conversation) -> SpeakerResult:
        return SpeakerResult("done")


def replay_200(width: int, height: int) -> dict[str, float]:
    """Record a 200-step trajectory, replay it with no delay; runs in its own process."""
    app = SimulatedFormApp(width=width, height=height)
    tools = ToolCollection([ComputerTool(app, scale=False)])
    messages = [MessageParam(role="user", content="goal")]
    for call in _unique_screens_trajectory(app, 200):
        messages.append(MessageParam(role="assistant", content=[call]))
        messages.append(MessageParam(role="user", content=[tools.run(call)[0]]))
    with tempfile.TemporaryDirectory() as folder:
        storage = LocalCacheStorage(folder)
        CacheManager(storage, CacheWritingSettings(filename="r.json")).finish_recording(messages)
        replay_app = SimulatedFormApp(width=width, height=height)
        executor = CacheExecutor(sleep=lambda s: None)
        executor.activate_cache_execution(
            load_cache_file(storage, "r.json"),
            "r.json",
            execution_settings=CacheExecutionSettings(delay_time_between_action=0),
        )
        replay_tools = ToolCollection([ComputerTool(replay_app, scale=False)])
        screenshot_cost = timed(lambda: encode_png(replay_app.screenshot()), 10)
        before_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        started = time.perf_counter()
        Conversation(
            [executor, _Done()], replay_tools, first_speaker=executor.name, max_turns=1000
        ).run("goal")
        total = time.perf_counter() - started
        assert executor.result is not None
        assert executor.result.status == "completed", executor.result
        size = (Path(folder) / "r.json").stat().st_size
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "total": total,
        "per_step": total / 200,
        "screenshot": screenshot_cost,
        "peak_mib": peak_mib,
        "before_mib": before_mib,
        "file_bytes": size,
    }


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--replay":
        print(json.dumps(replay_200(int(sys.argv[2]), int(sys.argv[3]))))
        return
    lines = [
        "## Speed and memory (`bench/speed.py`)",
        "",
        machine(),
        "",
        "Per step, on a real PNG screenshot of a UI (the simulated form, drawn with Pillow), 100 px region, 8x8 hash. "
        "*Decode* is base64 + PNG decoding of the screenshot, the cost any validation must pay once per screenshot; "
        "finish_recording's trajectory types one character per step, so every screenshot differs; "
        "the check (crop, hash, distance) is what validation adds. The format-2 check: 8x8 hash of the 100 px "
        "region and 16x16 hash of the 48 px detail region, each tried at up to 9 positions for the ±1 px "
        "tolerance. The shipped format-3 check (`validation_config(CacheWritingSettings())`): the same two "
        f"hashes (with the default noise floors {DEFAULT_NOISE_FLOOR:g} and {DEFAULT_DETAIL_NOISE_FLOOR:g}, "
        f"detail blur {DEFAULT_DETAIL_BLUR:g}), plus the tone (mean and deviation "
        "of grey) of both regions, "
        "at the Save button; *wide field*: at the Name field, wider than the region, so the whole target's ink "
        "map is measured too (at 1920x1080 the field, 1200 px wide, is wider than the 800 px window the "
        "target is searched in: no target is stored there). Each stops at the first position within its threshold on an unchanged screen; "
        "on a changed screen (the banner layout) the first failing part ends the shifted search. Medians of "
        "200 calls; the load average when the section was written is in the first line.",
        "",
        "| screen | decode once | "
        + " | ".join(f"check {m}" for m in CHECKS)
        + " | finish_recording per step | of which decoding |",
        "| --- | --- | " + " | ".join("---" for _ in CHECKS) + " | --- | --- |",
    ]
    replays = {}
    for width, height in ((1280, 800), (1920, 1080)):
        step = per_step(width, height)
        record, record_decode = recording_per_step(width, height)
        checks = " | ".join(
            f"{step[m] * 1000:.2f} ms ({step[m] / step['decode']:.2f}x)" for m in CHECKS
        )
        lines.append(
            f"| {width}x{height} | {step['decode'] * 1000:.1f} ms | {checks} | {record * 1000:.1f} ms ({record / step['decode']:.2f}x) | {record_decode * 1000:.1f} ms |"
        )
        done = subprocess.run(
            [sys.executable, __file__, "--replay", str(width), str(height)],
            capture_output=True,
            text=True,
            check=True,
        )
        replays[(width, height)] = json.loads(done.stdout.strip().splitlines()[-1])
    lines += [
        "",
        "(ratios in brackets: to decoding the screenshot once)",
        "",
        "A 200-step replay end to end (a screenshot, a click, then 198 validated keystrokes, each changing the screen), "
        "delay 0, in a fresh process, each step checked on its tool result's screenshot: the executor is given no "
        "screen of its own, so nothing is waited for (no auto-wait, no `settle_still_period`; the replay latency "
        "section measures those on a real application). "
        "The time includes the simulated application rendering and PNG-encoding a screenshot after every action, "
        "which a real desktop also pays (mss + PNG).",
        "",
        "| screen | total | per step | of which the app's screenshot (PNG encode) | peak RSS before the replay | peak RSS after | cache file |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (width, height), r in replays.items():
        lines.append(
            f"| {width}x{height} | {r['total']:.2f} s | {r['per_step'] * 1000:.1f} ms | {r['screenshot'] * 1000:.1f} ms | {r['before_mib']:.0f} MiB | {r['peak_mib']:.0f} MiB | {r['file_bytes'] / 1024:.1f} KiB ({r['file_bytes'] / 200:.0f} B/step) |"
        )
    body = "\n".join(lines)
    write_section("speed", body)
    print(body)


if __name__ == "__main__":
    main()
