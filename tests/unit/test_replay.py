"""Replay: validation before each step, hand-back on mismatch or error, results and metadata."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from askcache.conversation import Conversation
from askcache.errors import AskCacheError, CacheParameterError
from askcache.messages import TextBlockParam
from askcache.parameters import substitute
from askcache.replay import CacheExecutor
from askcache.settings import CacheExecutionSettings
from askcache.speakers import SpeakerResult
from askcache.storage import LocalCacheStorage, load_cache_file
from askcache.testing import SimulatedFormApp
from askcache.tools import ComputerTool, ToolCollection
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
    executor = CacheExecutor(
        storage, sleep=(sleeps.append if sleeps is not None else lambda s: None)
    )
    executor.activate_cache_execution(load_cache_file(storage, name), name, **activation)  # type: ignore[arg-type]
    agent = FinishingSpeaker()
    conversation = Conversation(
        [executor, agent], ToolCollection([ComputerTool(app)]), first_speaker=executor.name
    )
    conversation.run(GOAL)
    return executor, agent, conversation


def test_unchanged_screen_replays_every_step_without_the_agent(storage: LocalCacheStorage) -> None:
    record_form(storage)
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
    meta = load_cache_file(storage, "form.json").metadata
    assert (meta.execution_attempts, meta.successes, meta.failures) == (1, 1, [])
    assert meta.last_executed_at is not None


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
    failure = load_cache_file(storage, "form.json").metadata.failures[-1]
    assert failure.step_index == 1
    assert "distance" in failure.reason
    assert conversation.messages[-1].role == "user"


def test_threshold_override_lets_a_changed_screen_through_and_the_click_misses(
    storage: LocalCacheStorage,
) -> None:
    # hashes only: the tone and the whole target would see the moved form too
    record_form(storage, visual_validation_tone=False, visual_validation_target=False)
    app = SimulatedFormApp(layout="banner")
    executor, agent, _ = _replay(
        storage,
        app,
        execution_settings=CacheExecutionSettings(
            visual_validation_threshold=63, visual_validation_detail_threshold=255
        ),
    )
    result = executor.result
    assert result is not None
    assert [s.threshold for s in result.steps if s.validated] == [63, 63]
    assert app.events == ["left_click (360, 88) -> None"]  # the blind click hit empty space
    assert (result.status, result.stopped_at_step) == ("handed_back", 2)
    assert "no field has the keyboard focus" in agent.turns[0]


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
    assert {s.note for s in executor.result.steps} == {"visual validation skipped by settings"}
    assert app.saved


def test_file_without_visual_validation_replays_unvalidated(storage: LocalCacheStorage) -> None:
    record_form(storage, visual_verification_method="none")
    app = SimulatedFormApp()
    executor, _, _ = _replay(storage, app)
    assert executor.result is not None
    assert (executor.result.validated, executor.result.unvalidated) == (0, 4)
    assert app.saved


def test_tool_error_during_replay_hands_back(storage: LocalCacheStorage) -> None:
    record_form(storage)
    cache_file = load_cache_file(storage, "form.json")
    del cache_file.trajectory[1]  # typing without clicking the field first fails in the app
    cache_file.trajectory[1].visual_representation = None
    from askcache.storage import save_cache_file

    save_cache_file(storage, "form.json", cache_file)
    executor, agent, _ = _replay(storage, SimulatedFormApp())
    assert executor.result is not None
    assert (executor.result.status, executor.result.stopped_at_step) == ("handed_back", 1)
    assert "no field has the keyboard focus" in agent.turns[0]
    assert "was executed but failed" in agent.turns[0]


def test_missing_parameter_values_fail_before_any_action(storage: LocalCacheStorage) -> None:
    record_form(storage, "p.json", parameters={"person": "Ada Lovelace"})
    executor = CacheExecutor(storage)
    with pytest.raises(CacheParameterError, match="missing values for person"):
        executor.activate_cache_execution(load_cache_file(storage, "p.json"), "p.json")
    with pytest.raises(CacheParameterError, match="unknown parameters persn"):
        executor.activate_cache_execution(
            load_cache_file(storage, "p.json"),
            "p.json",
            parameter_values={"person": "x", "persn": "y"},
        )
    assert not executor.is_active
    assert load_cache_file(storage, "p.json").metadata.execution_attempts == 0


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
        CacheExecutor(storage).activate_cache_execution(
            cache_file, "form.json", start_from_step_index=5
        )


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


def test_the_default_check_replays_on_a_rescaled_screen(storage: LocalCacheStorage) -> None:
    record_form(storage)
    app = SimulatedFormApp(width=960, height=600)
    executor, _, _ = _replay(storage, app)
    result = executor.result
    assert result is not None
    assert (result.status, result.validated) == ("completed", 3)
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]


def test_with_the_format_2_detail_hash_a_rescaled_screen_hands_back_at_text(
    storage: LocalCacheStorage,
) -> None:
    # the previous default: an unblurred detail hash with threshold 14
    record_form(storage, visual_validation_detail_blur=0.0, visual_validation_detail_threshold=14)
    app = SimulatedFormApp(width=960, height=600)
    executor, _, _ = _replay(storage, app)
    result = executor.result
    assert result is not None
    assert result.status == "handed_back"
    failure = load_cache_file(storage, "form.json").metadata.failures[-1]
    detail = failure.reason.split("detail (16x16 hash, 48 px): ")[1]
    assert detail.split(";")[0].endswith("> threshold 14")
    assert app.saved == []


def test_wait_for_settle_watches_the_region_until_it_is_still(storage: LocalCacheStorage) -> None:
    record_form(storage)
    app = SimulatedFormApp()
    frames: list[int] = []

    def screen() -> object:
        frames.append(1)
        # the first two frames still show the old layout, as if the UI were catching up
        return (
            SimulatedFormApp(layout="banner").screenshot() if len(frames) <= 2 else app.screenshot()
        )

    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    executor = CacheExecutor(storage, screen=screen, sleep=sleep, clock=lambda: now[0])  # type: ignore[arg-type]
    settings = CacheExecutionSettings(
        delay_time_between_action=0, wait_for_settle=True, settle_quiet_period=0.2
    )
    executor.activate_cache_execution(
        load_cache_file(storage, "form.json"), "form.json", execution_settings=settings
    )
    agent = FinishingSpeaker()
    Conversation(
        [executor, agent], ToolCollection([ComputerTool(app)]), first_speaker=executor.name
    ).run(GOAL)
    assert executor.result is not None
    assert executor.result.status == "completed"
    assert len(frames) >= 3 * 5  # each validated step polled until 0.2 s of stillness
    assert sorted(executor.regions) == [1, 2, 3]
    assert executor.regions[1].size == (100, 100)


def test_replayed_steps_get_fresh_ids_and_no_cache_fields(storage: LocalCacheStorage) -> None:
    cache_file = record_form(storage)
    _, _, conversation = _replay(storage, SimulatedFormApp())
    replayed = [call for m in conversation.messages for call in m.tool_uses]
    assert {c.id for c in replayed}.isdisjoint({s.id for s in cache_file.trajectory})
    assert len({c.id for c in replayed}) == len(replayed)
    assert all(c.visual_representation is None for c in replayed)


def test_inactive_executor_hands_the_turn_to_the_agent(storage: LocalCacheStorage) -> None:
    agent = FinishingSpeaker()
    executor = CacheExecutor(storage)
    conversation = Conversation([executor, agent], ToolCollection(), first_speaker=executor.name)
    assert conversation.run(GOAL).status == "done"
    assert agent.turns == [GOAL]


def test_substitute_fills_nested_values_and_leaves_unknown_ones() -> None:
    assert substitute({"a": ["{{x}} and {{y}}"], "b": 3}, {"x": "1"}) == {
        "a": ["1 and {{y}}"],
        "b": 3,
    }


def test_a_detail_threshold_override_lets_a_rescaled_screen_replay(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
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
    record_form(
        storage,
        name="old.json",
        visual_validation_detail_blur=0.0,
        visual_validation_detail_threshold=14,
        visual_validation_tone=False,
        visual_validation_target=False,
    )
    data = json.loads(storage.read("old.json"))
    data["version"] = 2
    for key in ("tone", "target"):
        del data["metadata"]["visual_validation"][key]
    del data["metadata"]["visual_validation"]["detail"]["blur"]
    for step in data["trajectory"]:
        del step["visual_tone"], step["visual_target"]
    storage.write("old.json", json.dumps(data).encode())
    assert load_cache_file(storage, "old.json").version == 3
    app = SimulatedFormApp(values={"name": "alice", "email": ""})
    executor, _, _ = _replay(storage, app, name="old.json")
    result = executor.result
    assert result is not None
    assert result.status == "completed"
    assert app.saved == [{"name": "aliceAda Lovelace", "email": ""}]
