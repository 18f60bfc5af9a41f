"""Replay: validation before each step, hand-back on mismatch or error, results; the
trajectory file is never written by a replay."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import pytest
from PIL import Image

from askcache.conversation.turns import Conversation, SpeakerResult
from askcache.foundation.errors import AskCacheError, CacheFileRefusedError, CacheParameterError
from askcache.foundation.geometry import Point
from askcache.foundation.messages import TextBlockParam, ToolUseBlockParam
from askcache.foundation.parameters import substitute
from askcache.foundation.screen.thumbnails import StepEffect
from askcache.foundation.settings import CacheExecutionSettings
from askcache.replay import CacheExecutor
from askcache.replay.screens import FIRST_POLL_SECONDS, POLL_SECONDS, poll_pauses
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import SimulatedFormApp
from askcache.tools import ComputerTool, ToolCollection
from askcache.tools.tool import ToolOutput
from tests.helpers import GOAL, record_form


@dataclass
class FinishingSpeaker:
    """A stand-in agent that only counts its turns and ends the task."""

    name: str = "agent"
    turns: list[str] = field(default_factory=list)

    def handle_step(self, conversation: Conversation) -> SpeakerResult:
        last = conversation.messages[-1].blocks[-1]
        self.turns.append(last.text if isinstance(last, TextBlockParam) else "")
        return SpeakerResult("done", reason="agent finished")


def _replay(
    storage: LocalCacheStorage,
    app: SimulatedFormApp,
    *,
    name: str = "form.json",
    sleeps: list[float] | None = None,
    **activation: object,
) -> tuple[CacheExecutor, FinishingSpeaker, Conversation]:
    executor = CacheExecutor(sleep=(sleeps.append if sleeps is not None else lambda s: None))
    executor.activate_cache_execution(load_cache_file(storage, name), name, **activation)  # type: ignore[arg-type]
    agent = FinishingSpeaker()
    conversation = Conversation(
        [executor, agent], ToolCollection([ComputerTool(app)]), first_speaker=executor.name
    )
    conversation.run(GOAL)
    return executor, agent, conversation


def test_unchanged_screen_replays_every_step_without_the_agent(storage: LocalCacheStorage) -> None:
    record_form(storage)
    before = storage.read("form.json")
    app, sleeps = SimulatedFormApp(), []
    executor, agent, _ = _replay(
        storage,
        app,
        sleeps=sleeps,
        execution_settings=CacheExecutionSettings(delay_time_between_action=0.25),
    )
    result = executor.result
    assert result is not None
    assert (result.status, result.steps_run, result.validated, result.unvalidated) == (
        "completed",
        4,
        3,
        1,
    )
    assert [s.distance for s in result.steps if s.validated] == [0, 0, 0]
    assert agent.turns == []
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]
    assert sleeps == [0.25, 0.25, 0.25]
    assert result.end_state is not None
    assert result.end_state.matched
    assert [s.effect for s in result.steps] == ["not_checked", "none_recorded", "seen", "seen"]
    assert storage.read("form.json") == before  # a replay never rewrites the trajectory


def test_changed_screen_hands_back_before_the_step(storage: LocalCacheStorage) -> None:
    record_form(storage)
    app = SimulatedFormApp(layout="banner")
    executor, agent, conversation = _replay(storage, app)
    result = executor.result
    assert result is not None
    assert (result.status, result.stopped_at_step, result.steps_run) == ("handed_back", 1, 1)
    assert app.events == []  # the click on the moved field never happened
    assert len(agent.turns) == 1
    message = agent.turns[0]
    for fragment in (
        "stopped at step 1 of 4 (left_click at [360, 88])",
        "phash, 8x8 hash, 100 px region ±1 px",
        "> threshold 2",
        "was NOT executed",
        GOAL,
    ):
        assert fragment in message
    assert result.reason is not None
    assert "distance" in result.reason
    assert conversation.messages[-1].role == "user"


def test_threshold_override_lets_a_changed_screen_through_and_the_click_misses(
    storage: LocalCacheStorage,
) -> None:
    # hashes only: the tone and the whole target would see the moved form too, and so
    # would the whole screen before the first action
    record_form(storage, visual_validation_tone=False, visual_validation_target=False)
    app = SimulatedFormApp(layout="banner")
    executor, agent, _ = _replay(
        storage,
        app,
        execution_settings=CacheExecutionSettings(
            visual_validation_threshold=63,
            visual_validation_detail_threshold=255,
            wait_for_start_screen=False,
        ),
    )
    result = executor.result
    assert result is not None
    assert [s.threshold for s in result.steps if s.validated] == [63, 63]
    assert app.events == ["left_click (360, 88) -> None"]  # the blind click hit empty space
    # typing is stopped all the same: the area it filled when recorded shows the banner now
    assert (result.status, result.stopped_at_step) == ("handed_back", 2)
    assert "the area this action changed when recorded looks different" in agent.turns[0]


def test_skip_visual_validation_counts_steps_unvalidated(storage: LocalCacheStorage) -> None:
    record_form(storage)
    app = SimulatedFormApp()
    executor, _, _ = _replay(
        storage, app, execution_settings=CacheExecutionSettings(skip_visual_validation=True)
    )
    assert executor.result is not None
    assert (executor.result.status, executor.result.validated, executor.result.unvalidated) == (
        "completed",
        0,
        4,
    )
    assert {s.note for s in executor.result.steps} == {
        "visual validation skipped by settings",
        "does not act on the screen",
    }
    assert app.saved


def test_file_without_fingerprints_hands_back_unless_told_to_run_unchecked(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage, visual_verification_method="none")
    app = SimulatedFormApp()
    executor, agent, _ = _replay(storage, app)
    assert executor.result is not None
    assert (executor.result.status, executor.result.stopped_at_step) == ("handed_back", 1)
    assert "stores no fingerprint" in agent.turns[0]
    assert app.events == []
    with pytest.raises(CacheFileRefusedError, match=r"step 1 \(left_click\) cannot be checked"):
        _replay(storage, app, execution_settings=CacheExecutionSettings(unchecked_steps="refuse"))
    assert app.events == []
    executor, _, _ = _replay(
        storage, app, execution_settings=CacheExecutionSettings(unchecked_steps="run")
    )
    assert executor.result is not None
    assert (executor.result.validated, executor.result.unvalidated) == (0, 4)
    assert app.saved


def test_tool_error_during_replay_hands_back(storage: LocalCacheStorage) -> None:
    record_form(storage)
    cache_file = load_cache_file(storage, "form.json")
    del cache_file.trajectory[1]  # typing without clicking the field first fails in the app
    cache_file.trajectory[1].visual_representation = None
    cache_file.trajectory[1].visual_detail = None
    cache_file.trajectory[1].visual_weak = None
    cache_file.trajectory[1].visual_other_density = None
    from askcache.storage.cache_storage import save_cache_file

    save_cache_file(storage, "form.json", cache_file)
    executor, agent, _ = _replay(
        storage,
        SimulatedFormApp(),
        execution_settings=CacheExecutionSettings(unchecked_steps="run", check_effects=False),
    )
    assert executor.result is not None
    assert (executor.result.status, executor.result.stopped_at_step) == ("handed_back", 1)
    assert "no field has the keyboard focus" in agent.turns[0]
    assert "was executed but did not work as recorded" in agent.turns[0]


def test_missing_parameter_values_fail_before_any_action(storage: LocalCacheStorage) -> None:
    record_form(storage, "p.json", parameters={"person": "Ada Lovelace"})
    executor = CacheExecutor()
    with pytest.raises(CacheParameterError, match="missing values for person"):
        executor.activate_cache_execution(load_cache_file(storage, "p.json"), "p.json")
    with pytest.raises(CacheParameterError, match="unknown parameters persn"):
        executor.activate_cache_execution(
            load_cache_file(storage, "p.json"),
            "p.json",
            parameter_values={"person": "x", "persn": "y"},
        )
    assert not executor.is_active


def test_parameters_are_filled_in_when_replaying(storage: LocalCacheStorage) -> None:
    record_form(storage, "p.json", parameters={"person": "Ada Lovelace"})
    other = SimulatedFormApp()
    executor, _, _ = _replay(
        storage, other, name="p.json", parameter_values={"person": "Grace Hopper"}
    )
    assert executor.result is not None
    assert executor.result.status == "completed"
    assert other.saved == [{"name": "Grace Hopper", "email": ""}]


def test_start_index_at_the_end_means_nothing_to_do(storage: LocalCacheStorage) -> None:
    record_form(storage)
    app = SimulatedFormApp()
    executor, agent, _ = _replay(storage, app, start_from_step_index=4)
    assert executor.result is not None
    assert (executor.result.status, executor.result.steps_run) == ("completed", 0)
    assert app.events == []
    assert agent.turns == []


def test_start_index_out_of_range_is_an_error(storage: LocalCacheStorage) -> None:
    cache_file = record_form(storage)
    with pytest.raises(AskCacheError, match=r"outside 0\.\.4"):
        CacheExecutor().activate_cache_execution(cache_file, "form.json", start_from_step_index=5)


def test_resuming_midway_takes_a_fresh_screenshot_first(storage: LocalCacheStorage) -> None:
    record_form(storage)
    app = SimulatedFormApp()
    app.focus = "name"
    app.pointer_at = app.widget("name").center
    executor, _, conversation = _replay(storage, app, start_from_step_index=2)
    result = executor.result
    assert result is not None
    assert (result.status, result.screenshots_taken, result.validated) == ("completed", 1, 2)
    first_call = conversation.messages[1].tool_uses[0]
    assert first_call.input == {"action": "screenshot"}
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]


def test_other_aspect_ratio_hands_back_instead_of_clicking(storage: LocalCacheStorage) -> None:
    record_form(storage)
    app = SimulatedFormApp(width=800, height=600)
    executor, agent, _ = _replay(storage, app)
    assert executor.result is not None
    assert executor.result.stopped_at_step == 1
    assert (
        "800x600 but the trajectory was recorded at 640x400, another aspect ratio" in agent.turns[0]
    )
    assert app.events == []


def test_same_aspect_ratio_is_rescaled(storage: LocalCacheStorage) -> None:
    # Without the detail hash: text re-rendered at another size moves a fine hash too far
    # (the next test), so a trajectory meant for rescaled screens is recorded without it.
    record_form(storage, visual_validation_detail_region_size=None)
    app = SimulatedFormApp(width=960, height=600)
    executor, _, conversation = _replay(storage, app)
    result = executor.result
    assert result is not None
    assert (result.status, result.validated) == ("completed", 3)
    assert all(s.distance is not None and s.distance <= 4 for s in result.steps if s.validated)
    clicks = [
        c.input["coordinate"]
        for m in conversation.messages
        for c in m.tool_uses
        if "coordinate" in c.input
    ]
    assert clicks == [[540, 132], [172, 345]]  # 640x400 points scaled by 1.5
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]


def test_with_the_format_2_detail_hash_a_rescaled_screen_hands_back_at_text(
    storage: LocalCacheStorage,
) -> None:
    # the format-2 default: an unblurred detail hash with threshold 14, no noise floors
    record_form(
        storage,
        visual_validation_detail_blur=0.0,
        visual_validation_detail_threshold=14,
        visual_validation_noise_floor=0.0,
        visual_validation_detail_noise_floor=0.0,
        visual_validation_other_density_threshold=None,
        record_elements=False,  # the pixels alone (the label's text would replay it)
    )
    app = SimulatedFormApp(width=960, height=600)
    executor, _, _ = _replay(storage, app)
    result = executor.result
    assert result is not None
    assert result.status == "handed_back"
    assert result.reason is not None
    detail = result.reason.split("detail (16x16 hash, 48 px): ")[1]
    assert detail.split(";")[0].endswith("> threshold 14")
    assert app.saved == []


class StartingApp(SimulatedFormApp):
    """A form whose first screenshots still show another screen, as if it were starting."""

    def __init__(self, stale: int) -> None:
        super().__init__()
        self.stale = stale
        self.frames = 0

    def screenshot(self) -> Image.Image:
        self.frames += 1
        if self.frames <= self.stale:
            return SimulatedFormApp(layout="banner").screenshot()
        return super().screenshot()


def test_auto_wait_goes_as_soon_as_the_screen_matches(storage: LocalCacheStorage) -> None:
    record_form(storage)
    app = StartingApp(stale=3)  # the screenshot step's result and two more looks are stale
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    tool = ComputerTool(app)
    executor = CacheExecutor(screen=tool.capture, sleep=sleep, clock=lambda: now[0])
    executor.activate_cache_execution(load_cache_file(storage, "form.json"), "form.json")
    agent = FinishingSpeaker()
    Conversation([executor, agent], ToolCollection([tool]), first_speaker=executor.name).run(GOAL)
    result = executor.result
    assert result is not None
    assert result.status == "completed"
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]
    first_click = result.steps[1]
    assert 0 < first_click.waited_seconds < 1.0  # two polls, not a quiet period
    assert executor.regions == {}  # no report asked for: no image of a step kept


def test_with_step_views_kept_each_checked_step_keeps_its_region_and_screen(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
    app = SimulatedFormApp(layout="banner")
    tool = ComputerTool(app)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    executor = CacheExecutor(screen=tool.capture, sleep=sleep, clock=lambda: now[0])
    executor.activate_cache_execution(
        load_cache_file(storage, "form.json"),
        "form.json",
        execution_settings=CacheExecutionSettings(keep_step_views=True, settle_timeout=0.2),
    )
    Conversation(
        [executor, FinishingSpeaker()], ToolCollection([tool]), first_speaker=executor.name
    ).run(GOAL)
    assert executor.result is not None
    assert executor.result.status == "handed_back"
    assert sorted(executor.regions) == [1]  # the step it stopped at, as it was checked
    assert executor.regions[1].size == (100, 100)
    assert executor.views[1].screen.width == 320


class ChangesAfterTheFirstClick(SimulatedFormApp):
    """A form that shows the banner layout once the first click's result was taken: the
    screen changes under the second step (not the first, whose wait is the start-up wait)."""

    def __init__(self) -> None:
        super().__init__()
        self.looks_after_click = 0

    def screenshot(self) -> Image.Image:
        if self.events:
            self.looks_after_click += 1
            if self.looks_after_click > 1:
                self.layout = "banner"
        return super().screenshot()


def test_auto_wait_hands_back_once_a_different_screen_stays_still(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
    app = ChangesAfterTheFirstClick()
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    tool = ComputerTool(app)
    executor = CacheExecutor(screen=tool.capture, sleep=sleep, clock=lambda: now[0])
    settings = CacheExecutionSettings(settle_quiet_period=0.5)
    executor.activate_cache_execution(
        load_cache_file(storage, "form.json"), "form.json", execution_settings=settings
    )
    Conversation(
        [executor, FinishingSpeaker()], ToolCollection([tool]), first_speaker=executor.name
    ).run(GOAL)
    result = executor.result
    assert result is not None
    assert (result.status, result.stopped_at_step) == ("handed_back", 2)
    assert 0.5 <= result.steps[-1].waited_seconds < 0.6
    assert "settle_timeout" not in (result.reason or "")
    assert len(app.events) == 1  # the first click; the typing did not run


def test_the_first_step_waits_for_the_application_up_to_the_timeout(
    storage: LocalCacheStorage,
) -> None:
    # An application that has not started yet: the screen stays as it is (no quiet period
    # ends this wait), and after settle_timeout the replay hands back saying so.
    record_form(storage)
    app = SimulatedFormApp(layout="banner")
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    tool = ComputerTool(app)
    executor = CacheExecutor(screen=tool.capture, sleep=sleep, clock=lambda: now[0])
    settings = CacheExecutionSettings(settle_quiet_period=0.5, settle_timeout=4)
    executor.activate_cache_execution(
        load_cache_file(storage, "form.json"), "form.json", execution_settings=settings
    )
    Conversation(
        [executor, FinishingSpeaker()], ToolCollection([tool]), first_speaker=executor.name
    ).run(GOAL)
    result = executor.result
    assert result is not None
    assert (result.status, result.stopped_at_step) == ("handed_back", 1)
    assert 4 <= result.steps[-1].waited_seconds < 4.1
    assert "waited 4.0 s (settle_timeout 4 s)" in (result.reason or "")
    assert app.events == []


def test_the_first_step_goes_once_the_application_has_started(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
    app = StartingApp(stale=200)  # the old screen stays, unchanged, for 200 looks (4 s)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    tool = ComputerTool(app)
    executor = CacheExecutor(screen=tool.capture, sleep=sleep, clock=lambda: now[0])
    settings = CacheExecutionSettings(settle_quiet_period=0.5, settle_timeout=10)
    executor.activate_cache_execution(
        load_cache_file(storage, "form.json"), "form.json", execution_settings=settings
    )
    agent = FinishingSpeaker()
    Conversation([executor, agent], ToolCollection([tool]), first_speaker=executor.name).run(GOAL)
    result = executor.result
    assert result is not None
    assert result.status == "completed"
    assert agent.turns == []
    assert 3.5 < result.steps[1].waited_seconds < 4.5  # far past the quiet period
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]


def test_replayed_steps_get_fresh_ids_and_no_cache_fields(storage: LocalCacheStorage) -> None:
    cache_file = record_form(storage)
    _, _, conversation = _replay(storage, SimulatedFormApp())
    replayed = [call for m in conversation.messages for call in m.tool_uses]
    assert {c.id for c in replayed}.isdisjoint({s.id for s in cache_file.trajectory})
    assert len({c.id for c in replayed}) == len(replayed)
    assert all(c.visual_representation is None for c in replayed)


def test_inactive_executor_hands_the_turn_to_the_agent(storage: LocalCacheStorage) -> None:
    agent = FinishingSpeaker()
    executor = CacheExecutor()
    conversation = Conversation([executor, agent], ToolCollection(), first_speaker=executor.name)
    assert conversation.run(GOAL).status == "done"
    assert agent.turns == [GOAL]


def test_substitute_fills_typed_text_only_literally_and_leaves_unknown_ones() -> None:
    assert substitute({"text": "{{x}} and {{y}}", "b": "{{x}}"}, {"x": "{{y}}"}) == {
        "text": "{{y}} and {{y}}",
        "b": "{{x}}",
    }


def test_a_detail_threshold_override_lets_a_rescaled_screen_replay(
    storage: LocalCacheStorage,
) -> None:
    # a file without a hash for other densities (recorded before it, or with it off)
    record_form(storage, visual_validation_other_density_threshold=None)
    app = SimulatedFormApp(width=960, height=600)
    executor, _, _ = _replay(
        storage,
        app,
        execution_settings=CacheExecutionSettings(visual_validation_detail_threshold=256),
    )
    result = executor.result
    assert result is not None
    assert (result.status, result.validated) == ("completed", 3)
    assert all(s.detail_threshold == 256 for s in result.steps if s.validated)
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]


def test_a_rescaled_screen_is_checked_with_the_hash_for_other_densities(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
    app = SimulatedFormApp(width=960, height=600)
    executor, _, _ = _replay(storage, app)
    result = executor.result
    assert result is not None
    assert (result.status, result.validated) == ("completed", 3)
    checked = [s for s in result.steps if s.validated]
    assert all("detail for another pixel density" in (s.note or "") for s in checked)
    assert all(s.detail_threshold == 8 for s in checked)
    assert all("64 px" in (s.note or "") for s in checked)  # its own region
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]
    # the same screen size as recorded: the detail hash, as always
    same = SimulatedFormApp()
    executor, _, _ = _replay(storage, same)
    assert executor.result is not None
    assert executor.result.status == "completed"
    assert all("another pixel density" not in (s.note or "") for s in executor.result.steps)
    # a screenshot a few pixels off the recorded size is resized but checked as usual
    near = SimulatedFormApp(width=650, height=406)  # recorded: 640x400
    executor, _, _ = _replay(storage, near)
    assert executor.result is not None
    checked = [s for s in executor.result.steps if s.validated]
    assert checked
    assert all("another pixel density" not in (s.note or "") for s in checked)


class BrokenScreenApp(SimulatedFormApp):
    """A form whose screenshots fail after the first ``working`` ones."""

    def __init__(self, working: int) -> None:
        super().__init__()
        self.working = working

    def screenshot(self) -> Image.Image:
        if self.working <= 0:
            raise OSError("the X server closed the connection")
        self.working -= 1
        return super().screenshot()


@pytest.mark.parametrize("working", [0, 1, 2, 3])
def test_a_screen_that_cannot_be_read_hands_back_and_never_acts_blind(
    storage: LocalCacheStorage, working: int
) -> None:
    record_form(storage)
    app = BrokenScreenApp(working)
    tool = ComputerTool(app)
    executor = CacheExecutor(screen=tool.capture, sleep=lambda s: None)
    executor.activate_cache_execution(load_cache_file(storage, "form.json"), "form.json")
    agent = FinishingSpeaker()
    Conversation([executor, agent], ToolCollection([tool]), first_speaker=executor.name).run(GOAL)
    result = executor.result
    assert result is not None
    assert result.status == "handed_back"
    # every action that ran was checked on a screen that could be read before it
    assert len(app.events) <= working
    assert {s.action for s in result.steps if not s.validated} <= {"screenshot"}


def test_dry_run_checks_steps_on_given_screens_without_acting(storage: LocalCacheStorage) -> None:
    from askcache.replay import dry_run

    record_form(storage)
    cache_file = load_cache_file(storage, "form.json")
    app = SimulatedFormApp()
    before_click = app.screenshot()
    app.focus, app.pointer_at = "name", app.widget("name").center
    before_typing = app.screenshot()
    steps = dry_run(cache_file, "form.json", {1: before_click, 2: before_typing})
    assert [(s.step_index, s.problem) for s in steps] == [(1, None), (2, None), (3, None)]
    assert [s.checked_on for s in steps] == [1, 2, 2]
    changed = SimulatedFormApp(layout="banner")
    live = dry_run(cache_file, "form.json", changed.screenshot)
    assert live[0].problem is not None
    assert "no longer matches" in live[0].problem
    assert changed.events == []
    filled = SimulatedFormApp()
    filled.values["name"] = "Ada"
    filled.focus = "name"
    typed = dry_run(cache_file, "form.json", {2: filled.screenshot()})
    assert typed[1].problem is not None
    assert re.search("looks different|no longer matches", typed[1].problem)


def test_a_live_dry_run_checks_only_the_steps_whose_screen_is_there(
    storage: LocalCacheStorage,
) -> None:
    from askcache.replay import dry_run

    record_form(storage)
    cache_file = load_cache_file(storage, "form.json")
    app = SimulatedFormApp()
    steps = dry_run(cache_file, "form.json", app.screenshot)
    # the live screen is the one before the click; typing and Save need the screens the
    # click and the typing make, which a dry run never makes: not checked, never "passing"
    assert [(s.step_index, s.checked_on, s.problem) for s in steps] == [
        (1, 0, None),
        (2, None, None),
        (3, None, None),
    ]
    assert [s.validated for s in steps] == [True, False, False]
    assert steps[1].note == (
        "no screen yet: its screen appears only once step 1 has acted, and a dry run never acts"
    )
    assert steps[2].note is not None
    assert "step 1 has acted" in steps[2].note
    assert app.events == []
    # not even after a step recorded as changing nothing: the recorded effect is coarse
    quiet = cache_file.model_copy(deep=True)
    assert quiet.trajectory[1].effect is not None
    quiet.trajectory[1].effect = StepEffect()
    assert [s.checked_on for s in dry_run(quiet, "form.json", app.screenshot)] == [0, None, None]


def test_dry_run_told_the_display_size_checks_as_a_replay_on_that_display(
    storage: LocalCacheStorage,
) -> None:
    from askcache.replay import dry_run

    record_form(storage, display_size=(640, 400))
    cache_file = load_cache_file(storage, "form.json")
    # the form drawn at 2x on a 1280x800 display, sent at the recorded size (as ComputerTool
    # scales a HiDPI screen's screenshots)
    hidpi = SimulatedFormApp(width=1280, height=800).screenshot().resize((640, 400))
    told = dry_run(cache_file, "form.json", {1: hidpi}, display_size=(1280, 800))
    assert [s.problem for s in told] == [None, None, None]  # the replay there would run
    assert all("detail for another pixel density" in (s.note or "") for s in told)
    untold = dry_run(cache_file, "form.json", {1: hidpi})
    assert not any("another pixel density" in (s.note or "") for s in untold)
    assert any(s.problem is not None for s in untold)  # checked strictly, it would stop


class BlinkingApp(ChangesAfterTheFirstClick):
    """The banner form (after the first click) with a caret that blinks: every other
    screenshot shows it."""

    frames = 0

    def screenshot(self) -> Image.Image:
        self.frames += 1
        image = super().screenshot()
        if self.layout == "banner" and self.frames % 2:
            image.paste((0, 0, 0), (300, 200, 302, 230))
        return image


def test_a_blinking_screen_counts_as_still_so_the_hand_back_is_not_delayed(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
    app = BlinkingApp()
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    tool = ComputerTool(app)
    executor = CacheExecutor(screen=tool.capture, sleep=sleep, clock=lambda: now[0])
    settings = CacheExecutionSettings(settle_quiet_period=0.5, settle_timeout=5)
    executor.activate_cache_execution(
        load_cache_file(storage, "form.json"), "form.json", execution_settings=settings
    )
    Conversation(
        [executor, FinishingSpeaker()], ToolCollection([tool]), first_speaker=executor.name
    ).run(GOAL)
    result = executor.result
    assert result is not None
    assert (result.status, result.stopped_at_step) == ("handed_back", 2)
    assert 0.5 <= result.steps[-1].waited_seconds < 0.6  # the quiet period, not the timeout
    assert len(app.events) == 1


def test_a_screenshot_the_replay_takes_that_fails_is_a_hand_back(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
    app = SimulatedFormApp()

    def broken() -> Image.Image:
        raise OSError("the display went away")

    executor = CacheExecutor(screen=broken, sleep=lambda s: None)
    executor.activate_cache_execution(load_cache_file(storage, "form.json"), "form.json")
    agent = FinishingSpeaker()
    Conversation(
        [executor, agent], ToolCollection([ComputerTool(app)]), first_speaker=executor.name
    ).run(GOAL)
    result = executor.result
    assert result is not None
    assert (result.status, result.stopped_at_step) == ("handed_back", 1)
    assert result.reason == (
        "no screenshot could be taken (3 attempts in a row): OSError: the display went away"
    )
    assert app.events == []  # the click was not run unchecked
    assert len(agent.turns) == 1


class LateApp(SimulatedFormApp):
    """A slow form: a click on a field takes effect only after ``late`` more screenshots."""

    def __init__(self, late: int) -> None:
        super().__init__()
        self.late = late
        self.due: tuple[int, str] | None = None
        self.looks = 0

    def screenshot(self) -> Image.Image:
        self.looks += 1
        if self.due is not None and self.looks >= self.due[0]:
            self.focus, self.due = self.due[1], None
        return super().screenshot()

    def click(self, point: Point | None, button: str, count: int, modifiers: str | None) -> None:
        before = self.focus
        super().click(point, button, count, modifiers)
        if self.focus != before and self.focus is not None:
            self.due, self.focus = (self.looks + self.late, self.focus), before


def test_one_failed_screenshot_inside_the_wait_does_not_end_it(
    storage: LocalCacheStorage,
) -> None:
    # The slow form answers the click 10 looks later; looks of the replay's wait for the
    # focused field fail, once and then twice in a row: each is a look skipped, and the
    # replay finishes without the model.
    record_form(storage)
    app = LateApp(late=10)
    tool = ComputerTool(app)
    looks, failed = [0], []

    def flaky() -> Image.Image:
        looks[0] += 1
        if looks[0] in (3, 6, 7):  # all within the wait for the focus (12 looks)
            failed.append(looks[0])
            raise OSError("the X server is busy")
        return tool.capture()

    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    executor = CacheExecutor(screen=flaky, sleep=sleep, clock=lambda: now[0])
    executor.activate_cache_execution(load_cache_file(storage, "form.json"), "form.json")
    agent = FinishingSpeaker()
    Conversation([executor, agent], ToolCollection([tool]), first_speaker=executor.name).run(GOAL)
    result = executor.result
    assert result is not None
    assert (result.status, result.handbacks, agent.turns) == ("completed", 0, [])
    assert result.steps[2].waited_seconds > 0  # the typing waited for the focus
    assert failed == [3, 6, 7]
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]


class FailingClickTool(ComputerTool):
    """The computer tool whose first click is done but then reports an error (its result
    screenshot failed, say)."""

    failed = False

    def run(self, block: ToolUseBlockParam) -> ToolOutput:
        output = super().run(block)
        if block.input.get("action") == "left_click" and not self.failed:
            self.failed = True
            raise RuntimeError("the screenshot after the click could not be taken")
        return output


def test_a_hand_back_after_a_failed_tool_call_waits_for_the_screen_to_settle(
    storage: LocalCacheStorage,
) -> None:
    # The click ran on the slow form, but its tool call failed: the replay hands back, and
    # lets the screen settle first, so the model's first look shows the field focused by
    # that click (and the model does not click it again).
    record_form(storage)
    app = LateApp(late=10)
    tool = FailingClickTool(app)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    focus_seen_by_model: list[str | None] = []

    @dataclass
    class Looking(FinishingSpeaker):
        def handle_step(self, conversation: Conversation) -> SpeakerResult:
            focus_seen_by_model.append(app.focus)
            return super().handle_step(conversation)

    executor = CacheExecutor(screen=tool.capture, sleep=sleep, clock=lambda: now[0])
    executor.activate_cache_execution(load_cache_file(storage, "form.json"), "form.json")
    Conversation([executor, Looking()], ToolCollection([tool]), first_speaker=executor.name).run(
        GOAL
    )
    result = executor.result
    assert result is not None
    assert (result.status, result.stopped_at_step) == ("handed_back", 1)
    assert result.handbacks == 1
    assert focus_seen_by_model == ["name"]


def test_text_left_in_the_name_field_hands_back_before_typing(storage: LocalCacheStorage) -> None:
    # The headline case: the Name field still holds "alice" at its left end; the click at
    # its middle and the typing would append to it. The whole target sees it.
    record_form(storage)
    app = SimulatedFormApp(values={"name": "alice", "email": ""})
    executor, agent, _ = _replay(storage, app)
    result = executor.result
    assert result is not None
    assert (result.status, result.stopped_at_step) == ("handed_back", 1)
    assert app.events == []  # neither the click nor the typing happened
    assert "ink columns changed > 0" in agent.turns[0]
    assert app.values["name"] == "alice"


def test_a_format_2_file_replays_as_recorded(storage: LocalCacheStorage) -> None:
    # The same trajectory as a format-2 file: no tone, no target, no blur. It loads and
    # replays with exactly its old check, which does not see the far end of the field.
    _format_2_form(storage)
    app = SimulatedFormApp(values={"name": "alice", "email": ""})
    executor, _, _ = _replay(storage, app, name="old.json")
    result = executor.result
    assert result is not None
    assert result.status == "completed"
    assert app.saved == [{"name": "aliceAda Lovelace", "email": ""}]


def _format_2_form(storage: LocalCacheStorage) -> None:
    """The form recorded, then written back as format 2 would have stored it: no tone, no
    target, no detail blur, no effects and no screen state, as ``old.json``."""
    record_form(
        storage,
        name="old.json",
        visual_validation_detail_blur=0.0,
        visual_validation_detail_threshold=14,
        visual_validation_tone=False,
        visual_validation_target=False,
        visual_validation_noise_floor=0.0,
        visual_validation_detail_noise_floor=0.0,
    )
    data = json.loads(storage.read("old.json"))
    data["version"] = 2
    for key in ("tone", "target"):
        del data["metadata"]["visual_validation"][key]
    del data["metadata"]["visual_validation"]["detail"]["blur"]
    for step in data["trajectory"]:
        del step["visual_tone"], step["visual_target"], step["effect"]
    del data["metadata"]["screen_state"], data["metadata"]["end_state"]
    del data["metadata"]["start_state"]
    storage.write("old.json", json.dumps(data).encode())
    assert load_cache_file(storage, "old.json").version == 2  # loading never upgrades


def test_a_format_2_file_on_a_changed_screen_hands_back_after_the_wait(
    storage: LocalCacheStorage,
) -> None:
    # A file without screen-state thumbnails (format 2), replayed with auto-wait on the
    # banner layout: no look can tell whether the screen still moves, so the replay waits
    # settle_timeout, then hands back before the first click (it used to fail an assertion).
    _format_2_form(storage)
    app = SimulatedFormApp(layout="banner")
    tool = ComputerTool(app)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    executor = CacheExecutor(screen=tool.capture, sleep=sleep, clock=lambda: now[0])
    executor.activate_cache_execution(
        load_cache_file(storage, "old.json"),
        "old.json",
        execution_settings=CacheExecutionSettings(settle_timeout=2),
    )
    Conversation(
        [executor, FinishingSpeaker()], ToolCollection([tool]), first_speaker=executor.name
    ).run(GOAL)
    result = executor.result
    assert result is not None
    assert (result.status, result.stopped_at_step) == ("handed_back", 1)
    assert app.events == []
    assert 2 <= now[0] < 3


class HalfDrawnApp(SimulatedFormApp):
    """A form still being drawn: its first ``blank`` screenshots show the lower part of the
    window empty (the buttons and the status line not drawn yet), the Name field as it will
    be. Remembers how many screenshots were taken when the first click came."""

    def __init__(self, blank: int) -> None:
        super().__init__()
        self.blank = blank
        self.frames = 0
        self.frames_at_click: int | None = None

    def screenshot(self) -> Image.Image:
        self.frames += 1
        image = super().screenshot()
        if self.frames <= self.blank:
            image.paste((236, 239, 244), (0, 200, self.width, self.height))
        return image

    def click(self, point: Point | None, button: str, count: int, modifiers: str | None) -> None:
        if self.frames_at_click is None:
            self.frames_at_click = self.frames
        super().click(point, button, count, modifiers)


def _replay_on(
    storage: LocalCacheStorage, app: SimulatedFormApp, name: str = "form.json", **settings: Any
) -> tuple[CacheExecutor, FinishingSpeaker]:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    tool = ComputerTool(app)
    executor = CacheExecutor(screen=tool.capture, sleep=sleep, clock=lambda: now[0])
    executor.activate_cache_execution(
        load_cache_file(storage, name),
        name,
        execution_settings=CacheExecutionSettings(settle_quiet_period=0.5, **settings),
    )
    agent = FinishingSpeaker()
    Conversation([executor, agent], ToolCollection([tool]), first_speaker=executor.name).run(GOAL)
    return executor, agent


def test_the_first_action_waits_until_the_whole_screen_looks_as_recorded(
    storage: LocalCacheStorage,
) -> None:
    # the first click's own region (the Name field) is drawn from the start; the rest of
    # the window comes 100 looks (2 s) later: the click waits for it
    cache_file = record_form(storage)
    assert cache_file.metadata.start_state is not None
    app = HalfDrawnApp(blank=100)
    executor, agent = _replay_on(storage, app, settle_timeout=10)
    result = executor.result
    assert result is not None
    assert (result.status, agent.turns) == ("completed", [])
    assert app.frames_at_click is not None
    assert app.frames_at_click > app.blank
    assert result.steps[1].waited_seconds > 1.5  # past the quiet period: the start-up wait
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]


def test_a_start_screen_that_never_comes_leaves_the_first_step_to_its_own_checks(
    storage: LocalCacheStorage,
) -> None:
    # the lower part of the window is never drawn: the first click waits the whole
    # settle_timeout for the start screen, then its own checks decide (the Name field is
    # there); the Save click, whose button is missing, hands back before acting
    record_form(storage)
    app = HalfDrawnApp(blank=10_000)
    executor, agent = _replay_on(storage, app, settle_timeout=3)
    result = executor.result
    assert result is not None
    assert (result.status, result.stopped_at_step) == ("handed_back", 3)
    first = result.steps[1]
    assert first.step_index == 1
    assert first.waited_seconds >= 3  # the clock is the test's: the wait ran to the timeout
    note = first.note or ""
    assert "does not look like the recording's screen before its first action" in note
    assert "after waiting 3.3 s for it: ran on the step's own checks" in note
    assert [event.rsplit(" -> ", 1)[1] for event in app.events] == ["name"]
    assert app.saved == []
    assert len(agent.turns) == 1


def test_without_a_recorded_start_screen_the_first_action_waits_only_for_its_region(
    storage: LocalCacheStorage,
) -> None:
    # a file recorded before the start state (or with the check turned off) replays as
    # before: the click goes as soon as its own checks pass, the window half drawn
    record_form(storage)
    data = json.loads(storage.read("form.json"))
    del data["metadata"]["start_state"]
    storage.write("older.json", json.dumps(data).encode())
    for name, settings in (("older.json", {}), ("form.json", {"wait_for_start_screen": False})):
        app = HalfDrawnApp(blank=100)
        _replay_on(storage, app, name, settle_timeout=10, **settings)
        assert app.frames_at_click is not None, name
        assert app.frames_at_click <= app.blank, name


class LateTypingApp(SimulatedFormApp):
    """A form that draws typed text only ``late`` looks after the keys, noting each look at
    the screen and each action in order."""

    def __init__(self, late: int) -> None:
        super().__init__()
        self.late = late
        self.order: list[str] = []
        self.typed: tuple[int, str] | None = None

    def screenshot(self) -> Image.Image:
        if self.typed is not None and len(self.order) >= self.typed[0]:
            assert self.focus is not None
            self.values[self.focus] += self.typed[1]
            self.typed = None
        self.order.append(f"look name={self.values['name']!r}")
        return super().screenshot()

    def click(self, point: Point | None, button: str, count: int, modifiers: str | None) -> None:
        self.order.append("click")
        super().click(point, button, count, modifiers)

    def type_text(self, text: str) -> None:
        self.order.append("type")
        self.typed = (len(self.order) + self.late, text)


def test_the_pauses_of_a_wait_double_from_the_first_up_to_the_longest() -> None:
    pauses = list(itertools.islice(poll_pauses(), 7))
    assert pauses[0] == FIRST_POLL_SECONDS
    assert pauses[-1] == POLL_SECONDS
    assert pauses == sorted(pauses)
    assert all(b == min(2 * a, POLL_SECONDS) for a, b in pairwise(pauses))
