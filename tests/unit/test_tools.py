"""The computer tool (both shapes, clear errors) and the caching tools."""

from __future__ import annotations

import re

import pytest

from askcache.cachefile.format import CacheFile, CacheMetadata
from askcache.fingerprint.step import decode_screenshot
from askcache.foundation.messages import ImageBlockParam, TextBlockParam, ToolUseBlockParam
from askcache.replay import CacheExecutor, ExecuteCachedTrajectory, ListCachedTrajectories
from askcache.storage.cache_storage import LocalCacheStorage, save_cache_file
from askcache.testing import SimulatedFormApp
from askcache.tools import ComputerTool, ToolCollection
from tests.helpers import computer_call, record_form


def _text(result_content: object) -> str:
    assert isinstance(result_content, list)
    return " ".join(b.text for b in result_content if isinstance(b, TextBlockParam))


@pytest.mark.parametrize("shape", ["tool", "toolset"])
def test_actions_run_in_both_shapes_and_return_a_png(app: SimulatedFormApp, shape: str) -> None:
    version = "computer_toolset_20260801" if shape == "toolset" else "computer_20251124"
    tools = ToolCollection([ComputerTool(app, version=version)])  # type: ignore[arg-type]
    result, _ = tools.run(
        computer_call("left_click", shape, coordinate=list(app.widget("name").center))
    )  # type: ignore[arg-type]
    assert not result.is_error
    assert app.focus == "name"
    assert isinstance(result.content, list)
    image = result.content[1]
    assert isinstance(image, ImageBlockParam)
    assert decode_screenshot(image.source.data).size == (640, 400)
    assert result.toolset_name == ("computer" if shape == "toolset" else None)


def test_tool_params_and_betas_per_shape(app: SimulatedFormApp) -> None:
    single = ComputerTool(app, version="computer_20250124")
    assert single.to_params() == {
        "type": "computer_20250124",
        "name": "computer",
        "display_width_px": 640,
        "display_height_px": 400,
    }
    assert single.betas() == ["computer-use-2025-01-24"]
    toolset = ComputerTool(app, version="computer_toolset_20260801")
    assert toolset.to_params() == {"type": "computer_toolset_20260801"}
    assert toolset.betas() == []


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (computer_call("left_click", coordinate=[640, 10]), "outside the screen (640x400)"),
        (computer_call("left_click", coordinate="middle"), "coordinate must be [x, y]"),
        (computer_call("teleport"), "Unknown computer action 'teleport'"),
        (computer_call("type"), "type needs a 'text' string"),
        (computer_call("mouse_move"), "mouse_move needs a coordinate"),
        (computer_call("type", text="hello"), "no field has the keyboard focus"),
        (computer_call("key", text="F13"), "does not handle the key 'F13'"),
        (ToolUseBlockParam(id="x", name="computer", input={}), "needs an 'action'"),
        (ToolUseBlockParam(id="x", name="browser", input={}), "Unknown tool 'browser'"),
    ],
)
def test_bad_calls_are_error_results_not_crashes(
    app: SimulatedFormApp, call: ToolUseBlockParam, fragment: str
) -> None:
    result, _ = ToolCollection([ComputerTool(app)]).run(call)
    assert result.is_error is True
    assert fragment in _text(result.content)
    assert app.saved == []


def test_settle_delay_waits_after_actions_but_not_screenshots(app: SimulatedFormApp) -> None:
    waits: list[float] = []
    tool = ComputerTool(app, settle_delay=0.3, sleep=waits.append)
    tool.run(computer_call("screenshot"))
    tool.run(computer_call("left_click", coordinate=[10, 10]))
    assert waits == [0.3]


def _store(storage: LocalCacheStorage, name: str, *, valid: bool = True, **writing: object) -> None:
    cache_file = record_form(storage, name, **writing)
    if not valid:
        cache_file.invalidate("the app was redesigned")
        save_cache_file(storage, name, cache_file)


def test_listing_shows_goals_steps_parameters_and_hides_invalid(storage: LocalCacheStorage) -> None:
    _store(storage, "a.json", parameters={"person": "Ada Lovelace"})
    _store(storage, "old.json", valid=False)
    storage.write("broken.json", b"{")
    tool = ListCachedTrajectories(storage)
    text = _text(tool.run(ToolUseBlockParam(id="1", name=tool.name, input={})).content)
    assert "a.json" in text
    assert "steps: 4; parameters: person" in text
    assert "old.json" not in text
    assert "broken.json: unreadable" in text
    everything = _text(
        tool.run(ToolUseBlockParam(id="2", name=tool.name, input={"include_invalid": True})).content
    )
    assert "INVALID: the app was redesigned" in everything


def test_empty_listing(storage: LocalCacheStorage) -> None:
    tool = ListCachedTrajectories(storage)
    assert (
        _text(tool.run(ToolUseBlockParam(id="1", name=tool.name, input={})).content)
        == "No cached trajectories are available."
    )


def test_execute_activates_the_executor_and_hands_off(storage: LocalCacheStorage) -> None:
    _store(storage, "a.json")
    executor = CacheExecutor()
    tool = ExecuteCachedTrajectory(storage, executor)
    output = tool.run(
        ToolUseBlockParam(
            id="1",
            name=tool.name,
            input={"trajectory_file": "a.json", "visual_validation_threshold": 3},
        )
    )
    assert not output.is_error
    assert output.handoff_to == executor.name
    assert executor.is_active


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "trajectory_file must be a file name"),
        ({"trajectory_file": "missing.json"}, "'missing.json' not found"),
        ({"trajectory_file": "../x.json"}, "rejected"),
        ({"trajectory_file": "a.json", "start_from_step_index": 9}, r"outside 0..4"),
        ({"trajectory_file": "a.json", "parameter_values": {"x": "1"}}, "unknown parameters x"),
        (
            {"trajectory_file": "a.json", "visual_validation_threshold": -2},
            "visual_validation_threshold",
        ),
        ({"trajectory_file": "old.json"}, "marked invalid"),
    ],
)
def test_execute_reports_bad_requests_to_the_model(
    storage: LocalCacheStorage, arguments: dict[str, object], fragment: str
) -> None:
    _store(storage, "a.json")
    save_cache_file(
        storage,
        "old.json",
        CacheFile(metadata=CacheMetadata(goal="g", is_valid=False), trajectory=[]),
    )
    executor = CacheExecutor()
    tool = ExecuteCachedTrajectory(storage, executor)
    output = tool.run(ToolUseBlockParam(id="1", name=tool.name, input=arguments))
    assert output.is_error
    assert output.handoff_to is None
    assert re.search(fragment, _text(output.content))
    assert not executor.is_active


def test_large_screens_are_scaled_to_the_api_resolution_and_back() -> None:
    app = SimulatedFormApp(width=2560, height=1600)  # 16:10 -> WXGA 1280x800
    tool = ComputerTool(app)
    assert tool.api_size == (1280, 800)
    assert tool.to_params()["display_width_px"] == 1280
    result, _ = ToolCollection([tool]).run(computer_call("left_click", coordinate=[640, 400]))
    assert app.pointer_at == (1280, 800)  # clicked on the real screen, not at the model's numbers
    assert isinstance(result.content, list)
    image = result.content[1]
    assert isinstance(image, ImageBlockParam)
    assert decode_screenshot(image.source.data).size == (1280, 800)
    assert "outside the screen (1280x800)" in _text(
        tool.run(computer_call("left_click", coordinate=[1300, 10])).content
    )


def test_scaling_can_be_turned_off_and_small_screens_are_not_scaled() -> None:
    assert ComputerTool(SimulatedFormApp(width=2560, height=1600), scale=False).api_size == (
        2560,
        1600,
    )
    assert ComputerTool(SimulatedFormApp(width=800, height=600)).api_size == (800, 600)
    assert ComputerTool(SimulatedFormApp(width=2048, height=1536)).api_size == (1024, 768)
    assert ComputerTool(SimulatedFormApp(width=2732, height=1536)).api_size == (1366, 768)
