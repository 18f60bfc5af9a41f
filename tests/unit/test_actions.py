"""Reading computer actions in both tool shapes, and where their regions are anchored."""

from __future__ import annotations

from askcache.foundation.actions import ActionKind, action_anchors, make_tool_use, parse_action
from askcache.foundation.messages import ToolUseBlockParam


def test_single_tool_shape() -> None:
    action = parse_action(
        ToolUseBlockParam(
            id="t", name="computer", input={"action": "double_click", "coordinate": [5, 6]}
        )
    )
    assert action is not None
    assert (action.name, action.kind, action.shape, action.point) == (
        "double_click",
        ActionKind.CLICK,
        "tool",
        (5, 6),
    )


def test_toolset_shape() -> None:
    action = parse_action(
        ToolUseBlockParam(id="t", name="type", input={"text": "hi"}, toolset_name="computer")
    )
    assert action is not None
    assert (action.name, action.kind, action.shape, action.point) == (
        "type",
        ActionKind.TEXT_ENTRY,
        "toolset",
        None,
    )
    assert action.acts_at_pointer


def test_other_tools_are_not_actions() -> None:
    assert (
        parse_action(ToolUseBlockParam(id="t", name="execute_cached_trajectory", input={})) is None
    )
    assert parse_action(ToolUseBlockParam(id="t", name="computer", input={})) is None
    assert (
        parse_action(ToolUseBlockParam(id="t", name="navigate", input={}, toolset_name="browser"))
        is None
    )


def test_drag_acts_at_its_start_and_leaves_the_pointer_at_its_end() -> None:
    action = parse_action(
        make_tool_use("left_click_drag", "tool", start_coordinate=[1, 2], coordinate=[30, 40])
    )
    assert action is not None
    assert (action.point, action.pointer_after) == ((1, 2), (30, 40))


def test_malformed_coordinates_give_no_point() -> None:
    for bad in ([1], "10,20", [True, 2], None):
        action = parse_action(make_tool_use("left_click", "tool", coordinate=bad))
        assert action is not None
        assert action.point is None


def test_typing_is_anchored_at_the_last_pointer_position() -> None:
    steps = [
        make_tool_use("key", "tool", text="ctrl+l"),
        make_tool_use("left_click", "toolset", coordinate=[100, 50]),
        make_tool_use("type", "toolset", text="hello"),
        make_tool_use("mouse_move", "tool", coordinate=[7, 8]),
        make_tool_use("key", "tool", text="Return"),
        ToolUseBlockParam(id="x", name="list_cached_trajectories", input={}),
    ]
    assert list(action_anchors(steps)) == [None, (100, 50), (100, 50), (7, 8), (7, 8), None]


def test_made_tool_uses_have_fresh_ids_and_the_right_shape() -> None:
    one, two = make_tool_use("screenshot", "tool"), make_tool_use("screenshot", "toolset")
    assert one.id != two.id
    assert (one.name, one.input, one.toolset_name) == ("computer", {"action": "screenshot"}, None)
    assert (two.name, two.input, two.toolset_name) == ("screenshot", {}, "computer")
