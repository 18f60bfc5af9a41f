"""Settings: defaults, validation on construction, unknown fields, frozen."""

from __future__ import annotations

import pytest

from askcache.foundation.actions import CLICK_ACTIONS, DEFAULT_VALIDATED_ACTIONS
from askcache.foundation.errors import AskCacheError, InvalidSettingsError
from askcache.foundation.settings import (
    CacheExecutionSettings,
    CacheStrategy,
    CacheWritingSettings,
    CachingSettings,
    VisualMethod,
)


def test_defaults_are_the_documented_ones() -> None:
    writing = CacheWritingSettings()
    assert writing.visual_verification_method == VisualMethod.PHASH
    assert (
        writing.visual_validation_region_size,
        writing.visual_validation_threshold,
        writing.hash_size,
    ) == (100, 2, 8)
    assert writing.validated_actions == DEFAULT_VALIDATED_ACTIONS
    assert writing.visual_validation_shift_tolerance == 1
    execution = CacheExecutionSettings()
    assert (
        execution.delay_time_between_action,
        execution.visual_validation_threshold,
        execution.skip_visual_validation,
    ) == (0.0, None, False)
    assert CachingSettings().strategy == CacheStrategy.AUTO


def test_unknown_field_names_the_valid_ones_and_the_closest() -> None:
    with pytest.raises(InvalidSettingsError) as info:
        CacheWritingSettings(filenme="login.json")  # type: ignore[call-arg]
    message = str(info.value)
    assert "filenme: unknown field" in message
    assert "did you mean 'filename'" in message
    assert info.value.fields == ["filenme"]
    assert "visual_validation_threshold" in message
    assert isinstance(info.value, AskCacheError)
    assert isinstance(info.value, ValueError)


def test_unknown_nested_field_is_reported_with_its_path() -> None:
    with pytest.raises(
        InvalidSettingsError,
        match=r"writing_settings.filenme: unknown field.*valid fields of CacheWritingSettings",
    ) as info:
        CachingSettings(writing_settings={"filenme": "x.json"})  # type: ignore[arg-type]
    assert info.value.fields == ["writing_settings.filenme"]


def test_invalid_strategy_lists_the_valid_ones() -> None:
    with pytest.raises(InvalidSettingsError, match="'record', 'execute', 'auto' or 'off'"):
        CachingSettings(strategy="replay")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"visual_validation_threshold": 64}, "would accept any screen"),
        ({"visual_validation_threshold": -1}, "visual_validation_threshold"),
        ({"hash_size": 7}, "hash_size must be even"),
        ({"hash_size": 12, "visual_verification_method": "whash"}, "power-of-two"),
        (
            {"visual_validation_detail_hash_size": 7},
            "visual_validation_detail_hash_size must be even",
        ),
        (
            {"visual_validation_detail_threshold": 256},
            "visual_validation_detail_threshold 256 would accept any screen: a 16x16 hash",
        ),
        ({"visual_validation_detail_region_size": 4}, "visual_validation_detail_region_size"),
        ({"visual_validation_region_size": 4}, "visual_validation_region_size"),
        ({"visual_verification_method": "sha1"}, "'phash', 'ahash', 'dhash', 'whash' or 'none'"),
        ({"filename": "../outside.json"}, "relative path inside cache_dir"),
        ({"filename": "/etc/passwd"}, "relative path inside cache_dir"),
        ({"validated_actions": frozenset({"left_click", "clik"})}, "unknown actions clik"),
        ({"parameters": {"user name": "x"}}, "must be an identifier"),
        ({"parameters": {"user": ""}}, "is empty"),
    ],
)
def test_bad_writing_values_are_rejected_naming_the_field(
    fields: dict[str, object], fragment: str
) -> None:
    with pytest.raises(InvalidSettingsError, match=fragment):
        CacheWritingSettings(**fields)  # type: ignore[arg-type]


def test_without_a_detail_region_its_hash_settings_are_not_checked() -> None:
    settings = CacheWritingSettings(
        visual_validation_detail_region_size=None, visual_validation_detail_threshold=999
    )
    assert settings.visual_validation_detail_region_size is None


def test_bad_execution_values_are_rejected() -> None:
    with pytest.raises(InvalidSettingsError, match="delay_time_between_action"):
        CacheExecutionSettings(delay_time_between_action=-1)
    with pytest.raises(InvalidSettingsError, match="visual_validation_threshold"):
        CacheExecutionSettings(visual_validation_threshold=-3)


def test_filename_gets_a_json_suffix() -> None:
    assert CacheWritingSettings(filename="login").filename == "login.json"
    assert CacheWritingSettings(filename="team/login.json").filename == "team/login.json"


def test_settings_are_frozen() -> None:
    settings = CacheExecutionSettings()
    with pytest.raises(ValueError, match="frozen"):
        settings.skip_visual_validation = True  # type: ignore[misc]


def test_strings_are_accepted_for_enums() -> None:
    settings = CachingSettings(
        strategy="record", writing_settings=CacheWritingSettings(visual_verification_method="dhash")
    )  # type: ignore[arg-type]
    assert settings.strategy is CacheStrategy.RECORD
    assert settings.writing_settings.visual_verification_method is VisualMethod.DHASH


def test_seed_002_action_words_are_aliases() -> None:
    seed = CacheWritingSettings(validated_actions=frozenset({"click", "text_entry"}))
    assert seed.validated_actions == DEFAULT_VALIDATED_ACTIONS - {"scroll"}
    assert CacheWritingSettings(validated_actions={"click"}).validated_actions == CLICK_ACTIONS
    mixed = CacheWritingSettings(validated_actions=frozenset({"text_entry", "hold_key"}))
    assert mixed.validated_actions == {"type", "key", "hold_key"}
    with pytest.raises(
        InvalidSettingsError, match=r"unknown actions tap.*aliases: click, text_entry"
    ):
        CacheWritingSettings(validated_actions=frozenset({"click", "tap"}))


def test_the_hash_for_other_densities_is_validated_like_the_detail_hash() -> None:
    writing = CacheWritingSettings()
    assert writing.visual_validation_other_density_threshold == 8
    assert (
        writing.visual_validation_other_density_region_size,
        writing.visual_validation_other_density_blur,
        writing.visual_validation_other_density_noise_floor,
    ) == (64, 2.0, 500.0)
    with pytest.raises(InvalidSettingsError, match="visual_validation_other_density_region_size"):
        CacheWritingSettings(visual_validation_other_density_region_size=4)
    with pytest.raises(InvalidSettingsError, match="visual_validation_other_density_threshold"):
        CacheWritingSettings(visual_validation_other_density_threshold=256)
    with pytest.raises(InvalidSettingsError, match="visual_validation_other_density_blur"):
        CacheWritingSettings(visual_validation_other_density_blur=5.0)
    # without a detail hash there is nothing to replace, so its threshold is not checked
    CacheWritingSettings(
        visual_validation_detail_region_size=None, visual_validation_other_density_threshold=999
    )
    assert CacheWritingSettings(visual_validation_other_density_threshold=None)
