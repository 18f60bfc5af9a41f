"""The check policy: thresholds from the file, the settings and the model, held to one rule;
what loosens a check decided there and said in the result and the run ledger."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from askcache.cachefile.format import DetailCheckConfig, VisualValidationConfig
from askcache.cachefile.parse import parse_cache_file
from askcache.cli.lint_rules import lint_cache_file
from askcache.conversation.turns import Conversation, SpeakerResult
from askcache.foundation.errors import AskCacheError, CacheFileCorruptError, InvalidSettingsError
from askcache.foundation.limits import threshold_problem
from askcache.foundation.messages import TextBlockParam, ToolUseBlockParam
from askcache.foundation.settings import CacheExecutionSettings, CacheWritingSettings
from askcache.replay import CacheExecutor, ExecuteCachedTrajectory
from askcache.replay.check_policy import CheckPolicy, InvalidThresholdError, Loosening
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.ledger import FolderLedger, RunRecord
from askcache.storage.ledger.sqlite import SqliteLedger
from askcache.testing import SimulatedFormApp
from askcache.tools import ComputerTool, ToolCollection
from tests.helpers import GOAL, record_form

DETAIL = DetailCheckConfig(hash_size=16, region_size=48, threshold=14)
CONFIG = VisualValidationConfig(
    method="phash", hash_size=8, region_size=100, threshold=2, detail=DETAIL
)


class _Done:
    """The model after the replay: it ends the task."""

    name = "agent"

    def handle_step(self, conversation: Conversation) -> SpeakerResult:
        return SpeakerResult("done", reason="finished")


def _text(content: object) -> str:
    assert isinstance(content, list)
    return " ".join(b.text for b in content if isinstance(b, TextBlockParam))


def test_without_overrides_the_files_thresholds_apply_and_nothing_is_loosened() -> None:
    policy = CheckPolicy.resolve(CONFIG, CacheExecutionSettings())
    assert (policy.threshold, policy.threshold_source) == (2, "file")
    assert (policy.detail_threshold, policy.detail_threshold_source) == (14, "file")
    assert policy.loosened == ()
    assert CheckPolicy.resolve(None).threshold is None  # a file that records no validation


def test_a_threshold_raised_above_the_files_is_a_loosening_a_lowered_one_is_not() -> None:
    raised = CheckPolicy.resolve(
        CONFIG,
        CacheExecutionSettings(
            visual_validation_threshold=6, visual_validation_detail_threshold=10
        ),
    )
    assert (raised.threshold, raised.threshold_source) == (6, "settings")
    assert raised.detail_threshold == 10  # lowered: tighter, not said
    (loosening,) = raised.loosened
    assert loosening.short == "visual_validation_threshold 2 -> 6 (settings)"
    assert "up to 6 of the hash's 64 bits may differ (the file allows 2)" in loosening.words


def test_the_models_threshold_wins_and_is_said_as_the_models() -> None:
    settings = CacheExecutionSettings(visual_validation_threshold=6)
    policy = CheckPolicy.resolve(CONFIG, settings, override=9)
    assert (policy.threshold, policy.threshold_source) == (9, "model")
    assert [item.short for item in policy.loosened] == [
        "visual_validation_threshold 2 -> 9 (model)"
    ]
    lowered = CheckPolicy.resolve(CONFIG, settings, override=1)  # below the file's: no loosening
    assert (lowered.threshold, lowered.loosened) == (1, ())


def test_a_model_threshold_that_would_accept_any_screen_is_refused_naming_field_and_source() -> (
    None
):
    with pytest.raises(InvalidThresholdError) as info:
        CheckPolicy.resolve(CONFIG, None, override=64)
    error = info.value
    assert (error.field, error.source, error.value) == ("visual_validation_threshold", "model", 64)
    assert str(error) == (
        "visual_validation_threshold asked by the model (execute_cached_trajectory): "
        "64 would accept any screen: a 8x8 hash has 64 bits"
    )
    assert isinstance(error, AskCacheError)
    assert isinstance(error, ValueError)


def test_the_callers_own_threshold_that_accepts_any_screen_runs_as_asked_and_is_said() -> None:
    policy = CheckPolicy.resolve(CONFIG, CacheExecutionSettings(visual_validation_threshold=64))
    assert policy.threshold == 64
    (loosening,) = policy.loosened
    assert loosening.source == "settings"
    assert loosening.words == threshold_problem(64, 8)


def test_a_files_own_threshold_at_the_bit_count_is_refused_naming_the_file() -> None:
    broken = CONFIG.model_copy(update={"detail": DETAIL.model_copy(update={"threshold": 256})})
    with pytest.raises(InvalidThresholdError, match=r"^metadata\.visual_validation\.detail"):
        CheckPolicy.resolve(broken)


def test_switches_that_loosen_are_said_and_those_that_only_change_timing_are_not() -> None:
    settings = CacheExecutionSettings(
        unchecked_steps="run", check_effects=False, end_state="off", wait_for_start_screen=False
    )
    policy = CheckPolicy.resolve(CONFIG, settings)  # the whole file unknown: each counts
    assert [item.what for item in policy.loosened] == [
        "unchecked_steps",
        "check_effects",
        "end_state",
    ]
    assert not policy.wait_for_start_screen  # read by the check, but no loosening
    skipped = CheckPolicy.resolve(CONFIG, CacheExecutionSettings(skip_visual_validation=True))
    assert [item.short for item in skipped.loosened] == [
        "skip_visual_validation False -> True (settings)"
    ]


def test_given_the_whole_file_a_switch_is_said_only_where_it_changes_a_check(
    storage: LocalCacheStorage,
) -> None:
    checked = record_form(storage, record_screen_state=False)
    settings = CacheExecutionSettings(unchecked_steps="run", check_effects=False, end_state="off")
    assert CheckPolicy.resolve(checked, settings).loosened == ()  # nothing unchecked, recorded
    unchecked = record_form(storage, "plain.json", visual_verification_method="none")
    assert [item.what for item in CheckPolicy.resolve(unchecked, settings).loosened] == [
        "unchecked_steps",
        "check_effects",
        "end_state",
    ]
    meta = CheckPolicy.resolve(checked.metadata, settings)  # the metadata knows effects, end
    assert [item.what for item in meta.loosened] == ["unchecked_steps"]


def test_the_policy_and_its_loosenings_are_frozen_values() -> None:
    policy = CheckPolicy.resolve(CONFIG, CacheExecutionSettings(visual_validation_threshold=5))
    with pytest.raises(ValidationError):
        policy.threshold = 60  # type: ignore[misc]
    with pytest.raises(ValidationError):
        policy.loosened[0].new = 60  # type: ignore[misc]
    assert policy == CheckPolicy.model_validate_json(policy.model_dump_json())
    assert Loosening.model_validate_json(policy.loosened[0].model_dump_json()).new == 5


def test_every_place_a_threshold_is_given_says_the_one_rules_words(
    storage: LocalCacheStorage,
) -> None:
    words = threshold_problem(64, 8)
    assert words == "64 would accept any screen: a 8x8 hash has 64 bits"
    assert threshold_problem(63, 8) is None
    with pytest.raises(InvalidSettingsError) as settings_error:
        CacheWritingSettings(visual_validation_threshold=64)
    assert f"visual_validation_threshold {words}" in str(settings_error.value)
    record_form(storage)
    data = json.loads(storage.read("form.json"))
    data["metadata"]["visual_validation"]["threshold"] = 64
    with pytest.raises(CacheFileCorruptError) as file_error:
        parse_cache_file(json.dumps(data).encode(), "form.json")
    assert words in str(file_error.value)
    loose = load_cache_file(storage, "form.json")
    visual = loose.metadata.visual_validation
    assert visual is not None
    loose.metadata.visual_validation = visual.model_copy(update={"threshold": 64})
    assert f"threshold {words}" in [p.message for p in lint_cache_file(loose)]
    tool = ExecuteCachedTrajectory(storage, executor := CacheExecutor())
    output = tool.run(
        ToolUseBlockParam(
            id="1",
            name=tool.name,
            input={"trajectory_file": "form.json", "visual_validation_threshold": 64},
        )
    )
    assert output.is_error
    assert f"asked by the model (execute_cached_trajectory): {words}" in _text(output.content)
    assert not executor.is_active


def test_the_models_raised_threshold_is_applied_by_the_check_and_said_everywhere(
    storage: LocalCacheStorage,
) -> None:
    record_form(storage)
    executor = CacheExecutor(sleep=lambda s: None)
    tool = ExecuteCachedTrajectory(storage, executor)
    output = tool.run(
        ToolUseBlockParam(
            id="1",
            name=tool.name,
            input={"trajectory_file": "form.json", "visual_validation_threshold": 10},
        )
    )
    assert not output.is_error
    assert "Checks loosened: visual_validation_threshold 2 -> 10 (model)" in _text(output.content)
    app = SimulatedFormApp()
    Conversation(
        [executor, _Done()], ToolCollection([ComputerTool(app)]), first_speaker=executor.name
    ).run(GOAL)
    replay = executor.result
    assert replay is not None
    assert [s.threshold for s in replay.steps if s.validated] == [10, 10, 10]
    assert [(item.source, item.old, item.new) for item in replay.loosened] == [("model", 2, 10)]
    assert app.saved


def test_a_loosened_run_round_trips_in_the_json_and_sqlite_ledgers_and_old_entries_read(
    storage: LocalCacheStorage,
) -> None:
    record = RunRecord(
        trajectory="form.json",
        status="completed",
        started_at=datetime.now(UTC),
        loosened=["visual_validation_threshold 2 -> 10 (model)"],
    )
    for ledger in (FolderLedger(storage), SqliteLedger(storage.directory / "ledger.sqlite3")):
        ledger.append(record)
        (back,) = ledger.records("form.json")
        assert back.loosened == ["visual_validation_threshold 2 -> 10 (model)"]
    old = record.model_dump(mode="json")
    del old["loosened"]  # an entry written before the field
    assert RunRecord.model_validate_json(json.dumps(old)).loosened == []
    assert re.search(r'"loosened":\["visual_validation_threshold 2 -> 10', record.model_dump_json())
