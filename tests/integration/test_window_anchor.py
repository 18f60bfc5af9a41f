"""Window-anchored replay on the simulated screen: the form drawn as a window that moves.

The real ``anthropic`` client speaks over HTTP to the local stand-in; the screen is
:class:`~askcache.testing.WindowedFormApp` (a :class:`SimulatedFormApp` shown at a position
on a larger desktop, which lists its window). What the form received is read from the form
itself (its events, its saved contacts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from askcache import ActResult, Agent, CacheExecutionSettings, CacheWritingSettings, CachingSettings
from askcache.foundation.screen.windows import WindowFrame, find_window
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    SimulatedFormApp,
    WindowedFormApp,
    text_reply,
    tool_use_reply,
)
from askcache.tools.computer import ComputerTool

pytestmark = pytest.mark.integration

GOAL = "Type Ada Lovelace into the Name field and press Save"
ADA = [{"name": "Ada Lovelace", "email": ""}]


def _settings(cache: Path, strategy: str, **execution: Any) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache,
        writing_settings=CacheWritingSettings(filename="form.json"),
        execution_settings=CacheExecutionSettings(delay_time_between_action=0, **execution),
    )


def _record(cache: Path, at: tuple[int, int] = (0, 0)) -> None:
    screen = WindowedFormApp(at=at)
    script = FormFillingScript(screen.app, "Ada Lovelace", to_model=screen.to_screen)
    with MessagesApiStandIn(script) as api:
        agent = Agent(
            api.client(), [ComputerTool(screen)], model="claude-test", sleep=lambda s: None
        )
        assert agent.act(GOAL, _settings(cache, "record")).status == "done"
    assert screen.app.saved == ADA


def _run(cache: Path, screen: WindowedFormApp, **execution: Any) -> ActResult:
    stop = text_reply("The form does not look as expected; I stop here.")
    with MessagesApiStandIn([stop]) as api:
        agent = Agent(
            api.client(), [ComputerTool(screen)], model="claude-test", sleep=lambda s: None
        )
        result = agent.act(GOAL, _settings(cache, "execute", **execution))
    assert result.replay is not None
    return result


def _replay(cache: Path, screen: WindowedFormApp, **execution: Any) -> tuple[int, str, int | None]:
    result = _run(cache, screen, **execution)
    assert result.replay is not None
    return result.model_calls, result.replay.status, result.replay.stopped_at_step


START_SCREEN_DIFFERED = "does not look like the recording's screen before its first action"


def _first_step_note(result: ActResult) -> str:
    """The run report's note on the trajectory's first acting step (the Name click)."""
    assert result.replay is not None
    return next(r.note or "" for r in result.replay.steps if r.step_index == 1)


def _clicked(screen: WindowedFormApp) -> list[str]:
    """What each click reached in the form (``None``: nothing)."""
    return [event.rsplit(" -> ", 1)[1] for event in screen.app.events if "_click" in event]


def test_recording_stores_the_window_and_an_old_file_replays_as_before(tmp_path: Path) -> None:
    _record(tmp_path, at=(50, 40))
    steps = load_cache_file(LocalCacheStorage(tmp_path), "form.json").trajectory
    acting = [s for s in steps if s.input.get("action") in ("left_click", "type")]
    assert {s.window for s in acting} == {
        WindowFrame(x=50, y=40, width=640, height=400, wm_class="SimulatedForm", title="Contacts")
    }
    assert all(s.window is None for s in steps if s.input.get("action") == "screenshot")


def test_a_moved_window_replays_with_no_model_call_and_every_click_on_its_widget(
    tmp_path: Path,
) -> None:
    _record(tmp_path)
    moved = WindowedFormApp(at=(300, 250))
    assert _replay(tmp_path, moved) == (0, "completed", None)
    assert _clicked(moved) == ["name", "save"]
    assert moved.app.saved == ADA


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"wm_class": "Other"}, "no window of the recorded class"),
        ({"title": "Contacts - other.db"}, "another title and another size: not found"),
        (
            {
                "others": [
                    WindowFrame(
                        x=0, y=0, width=640, height=400, wm_class="SimulatedForm", title="Contacts"
                    )
                ]
            },
            "two candidates",
        ),
    ],
)
def test_without_one_window_to_anchor_to_the_step_is_checked_at_its_recorded_point(
    tmp_path: Path, change: dict[str, object], why: str
) -> None:
    _record(tmp_path)
    app = SimulatedFormApp(width=600, height=400) if "title" in change else SimulatedFormApp()
    moved = WindowedFormApp(app=app, at=(300, 250), **change)  # type: ignore[arg-type]
    calls, status, step = _replay(tmp_path, moved)
    assert (calls, status, step) == (1, "handed_back", 1), why
    assert _clicked(moved) == []  # nothing was clicked on the moved form
    assert moved.app.saved == []


def test_a_changed_form_on_a_moved_window_fills_the_same_field_and_stops_at_the_save_click(
    tmp_path: Path,
) -> None:
    _record(tmp_path)
    # the whole form, seen from its window, differs from the recording's before the first
    # click (Save and Clear swapped places): the first step waits for that screen, then its
    # own checks decide: the Name field is where it was, and the Save click's check stops it
    moved = WindowedFormApp(app=SimulatedFormApp(layout="swapped"), at=(300, 250))
    result = _run(tmp_path, moved, settle_timeout=2)
    assert result.replay is not None
    assert (result.model_calls, result.replay.status) == (1, "handed_back")
    assert result.replay.stopped_at_step == 3  # the Save click
    assert START_SCREEN_DIFFERED in _first_step_note(result)
    assert _clicked(moved) == ["name"]  # Clear was never clicked
    assert moved.app.values["name"] == "Ada Lovelace"
    # without the start screen's wait, the same: the Save click's own check stops it
    moved = WindowedFormApp(app=SimulatedFormApp(layout="swapped"), at=(300, 250))
    result = _run(tmp_path, moved, wait_for_start_screen=False)
    assert result.replay is not None
    assert (result.model_calls, result.replay.stopped_at_step) == (1, 3)
    assert START_SCREEN_DIFFERED not in _first_step_note(result)
    assert _clicked(moved) == ["name"]


class _OtherDesktop(WindowedFormApp):
    """The same window at the same place on another machine's desktop: a panel and another
    program's window drawn beside the form, away from it."""

    def screenshot(self) -> Image.Image:
        image = super().screenshot()
        draw = ImageDraw.Draw(image)
        draw.rectangle((760, 0, 1023, 767), fill=(200, 120, 40))  # a panel
        draw.rectangle((780, 60, 1000, 300), fill=(250, 250, 250), outline=(0, 0, 0))
        draw.text((800, 80), "another program", fill=(0, 0, 0))
        return image


def test_the_start_screen_is_judged_inside_the_first_steps_window_only(tmp_path: Path) -> None:
    # what lies outside the first step's window differs harmlessly from machine to machine:
    # the first click does not wait for a desktop it will never see, and no model is called
    _record(tmp_path, at=(50, 40))
    elsewhere = _OtherDesktop(at=(50, 40))
    result = _run(tmp_path, elsewhere, settle_timeout=2)
    assert result.replay is not None
    # the end state still compares the whole screen (a dialog the task opens may lie outside
    # the window): the desktop beside the form leaves the run unverified, never handed back
    assert (result.model_calls, result.replay.status) == (0, "completed_unverified")
    assert START_SCREEN_DIFFERED not in _first_step_note(result)  # the first look was enough
    assert _clicked(elsewhere) == ["name", "save"]
    assert elsewhere.app.saved == ADA
    # inside the window it is still the whole window: another layout there is seen (the step
    # then runs on its own checks, and the Save click's stops the replay)
    changed = _OtherDesktop(app=SimulatedFormApp(layout="swapped"), at=(50, 40))
    result = _run(tmp_path, changed, settle_timeout=2)
    assert result.replay is not None
    assert START_SCREEN_DIFFERED in _first_step_note(result)
    assert (result.model_calls, result.replay.stopped_at_step) == (1, 3)
    assert _clicked(changed) == ["name"]


def test_find_window_takes_one_candidate_only() -> None:
    recorded = WindowFrame(x=0, y=0, width=200, height=100, wm_class="App", title="a.txt - App")
    same = recorded.model_copy(update={"x": 300})
    renamed = same.model_copy(update={"title": "b.txt - App"})
    resized = renamed.model_copy(update={"width": 250})
    assert find_window(recorded, [same]) == same
    assert find_window(recorded, [same, same.model_copy(update={"y": 50})]) is None
    assert find_window(recorded, [renamed]) == renamed  # another document, the same size
    assert find_window(recorded, [renamed, resized]) == renamed
    assert find_window(recorded, [resized]) is None
    assert find_window(recorded, [renamed, same]) == same  # the exact title first
    assert find_window(recorded.model_copy(update={"wm_class": None}), [same]) is None


# The search, with no window to anchor to ---------------------------------------------------


def _record_save_click(cache: Path) -> None:
    """A trajectory of one click on Save, recorded with the form at (100, 100) on a screen
    that names no window class (nothing to anchor to)."""
    screen = WindowedFormApp(at=(100, 100), wm_class=None)
    save = list(screen.to_screen(screen.app.widget("save").center))
    script = [
        tool_use_reply("computer", {"action": "screenshot"}),
        tool_use_reply("computer", {"action": "left_click", "coordinate": save}),
        text_reply("saved"),
    ]
    with MessagesApiStandIn(script) as api:
        agent = Agent(
            api.client(), [ComputerTool(screen)], model="claude-test", sleep=lambda s: None
        )
        assert agent.act("Save the form", _settings(cache, "record")).status == "done"


def _replay_save(cache: Path, screen: WindowedFormApp, **execution: object) -> tuple[int, str]:
    settings = _settings(cache, "execute").model_copy(
        update={
            "execution_settings": CacheExecutionSettings(
                delay_time_between_action=0,
                settle_timeout=1,
                **execution,  # type: ignore[arg-type]
            )
        }
    )
    with MessagesApiStandIn([text_reply("I stop here.")]) as api:
        agent = Agent(
            api.client(), [ComputerTool(screen)], model="claude-test", sleep=lambda s: None
        )
        result = agent.act("Save the form", settings)
    assert result.replay is not None
    return result.model_calls, result.replay.status


@pytest.mark.parametrize("at", [(150, 130), (300, 250), (400, 60)])
def test_the_search_finds_a_moved_button_with_no_window_to_anchor_to(
    tmp_path: Path, at: tuple[int, int]
) -> None:
    _record_save_click(tmp_path)
    moved = WindowedFormApp(at=at, wm_class=None)
    assert _replay_save(tmp_path, moved) == (0, "completed")
    assert _clicked(moved) == ["save"]
    assert moved.app.saved == [{"name": "", "email": ""}]


def test_no_search_with_a_radius_of_zero(tmp_path: Path) -> None:
    _record_save_click(tmp_path)
    moved = WindowedFormApp(at=(150, 130), wm_class=None)
    assert _replay_save(tmp_path, moved, search_radius=0) == (1, "handed_back")
    assert _clicked(moved) == []


def test_the_search_does_not_pick_one_of_look_alikes(tmp_path: Path) -> None:
    """A click inside the Name field: along the field, every place looks alike (and the
    recorded point, still inside the moved field, nearly so): no place is taken."""
    _record(tmp_path, at=(100, 100))
    moved = WindowedFormApp(at=(150, 130), wm_class="Other")  # the window is not found
    calls, status, step = _replay(tmp_path, moved)
    assert (calls, status, step) == (1, "handed_back", 1)
    assert _clicked(moved) == []
