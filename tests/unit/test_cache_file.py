"""The cache format: round trips, old files, future versions, corrupt and truncated files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from askcache.cache_file import (
    FORMAT_VERSION,
    MAX_FAILURES_KEPT,
    CacheFile,
    CacheMetadata,
    CoordinateSpace,
    VisualValidationConfig,
    dump_cache_file,
    parse_cache_file,
)
from askcache.errors import CacheFileCorruptError, UnsupportedCacheVersionError
from askcache.messages import ToolUseBlockParam
from askcache.parameters import placeholders_in

SCHEMA = Path(__file__).parents[2] / "docs" / "cache-format.schema.json"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
steps = st.builds(
    ToolUseBlockParam,
    id=st.text(min_size=1, max_size=12),
    name=st.sampled_from(["computer", "left_click", "type", "custom"]),
    input=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    toolset_name=st.none() | st.just("computer"),
    visual_representation=st.none() | st.text("0123456789abcdef", min_size=16, max_size=16),
)
cache_files = st.builds(
    CacheFile,
    metadata=st.builds(
        CacheMetadata,
        goal=st.text(max_size=40),
        coordinate_space=st.none()
        | st.builds(CoordinateSpace, width=st.integers(1, 8000), height=st.integers(1, 8000)),
        visual_validation=st.none()
        | st.builds(
            VisualValidationConfig,
            method=st.sampled_from(["phash", "ahash", "dhash", "whash"]),
            hash_size=st.sampled_from([8, 16]),
            region_size=st.integers(16, 400),
            threshold=st.integers(0, 60),
        ),
        execution_attempts=st.integers(0, 1000),
        successes=st.integers(0, 1000),
        is_valid=st.booleans(),
    ),
    trajectory=st.lists(steps, max_size=5),
    cache_parameters=st.dictionaries(
        st.from_regex(r"[a-z_]{1,8}", fullmatch=True), st.text(max_size=10), max_size=3
    ),
)


@settings(max_examples=60, deadline=None)
@given(cache_files)
def test_round_trip(cache_file: CacheFile) -> None:
    assert parse_cache_file(dump_cache_file(cache_file), "x.json") == cache_file


def test_seed_era_file_without_version_or_hash_size_loads() -> None:
    old = {
        "metadata": {
            "goal": "Open the form",
            "created_at": "2026-01-05T10:00:00",
            "screen_size": {"width": 1280, "height": 800},
            "visual_validation": {"method": "phash", "region_size": 100, "threshold": 10},
        },
        "trajectory": [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "computer",
                "input": {"action": "left_click", "coordinate": [10, 10]},
                "visual_representation": "ff00ff00ff00ff00",
            },
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "computer",
                "input": {"action": "screenshot"},
            },
        ],
    }
    cache_file = parse_cache_file(json.dumps(old), "old.json")
    assert cache_file.version == FORMAT_VERSION
    assert cache_file.metadata.visual_validation == VisualValidationConfig(
        method="phash", hash_size=8, region_size=100, threshold=10
    )
    assert cache_file.metadata.coordinate_space == CoordinateSpace(width=1280, height=800)
    assert cache_file.trajectory[1].visual_representation is None
    assert cache_file.cache_parameters == {}
    assert (cache_file.metadata.execution_attempts, cache_file.metadata.is_valid) == (0, True)


def test_version_1_file_reads_as_version_3_without_detail_tone_or_target() -> None:
    v1 = {
        "version": 1,
        "metadata": {
            "goal": "Open the form",
            "visual_validation": {
                "method": "phash",
                "hash_size": 8,
                "region_size": 100,
                "threshold": 2,
                "shift_tolerance": 1,
            },
        },
        "trajectory": [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "computer",
                "input": {"action": "left_click", "coordinate": [10, 10]},
                "visual_representation": "ff00ff00ff00ff00",
            }
        ],
    }
    cache_file = parse_cache_file(json.dumps(v1), "v1.json")
    assert cache_file.version == 3
    visual = cache_file.metadata.visual_validation
    assert visual is not None
    assert (visual.detail, visual.tone, visual.target) == (None, None, None)
    step = cache_file.trajectory[0]
    assert (step.visual_detail, step.visual_tone, step.visual_target) == (None, None, None)
    again = parse_cache_file(dump_cache_file(cache_file), "v1.json")
    assert again == cache_file


def test_a_bad_detail_config_names_the_field() -> None:
    text = json.dumps(
        {
            "version": 2,
            "metadata": {
                "goal": "g",
                "visual_validation": {
                    "method": "phash",
                    "region_size": 100,
                    "detail": {"hash_size": 16, "region_size": 48},
                },
            },
            "trajectory": [],
        }
    )
    with pytest.raises(
        CacheFileCorruptError,
        match=r"metadata\.visual_validation\.detail\.threshold: Field required",
    ):
        parse_cache_file(text, "bad.json")


def test_version_2_file_keeps_its_checks_exactly_as_recorded() -> None:
    v2 = {
        "version": 2,
        "metadata": {
            "goal": "g",
            "visual_validation": {
                "method": "phash",
                "region_size": 100,
                "threshold": 2,
                "shift_tolerance": 1,
                "detail": {"hash_size": 16, "region_size": 48, "threshold": 14},
            },
        },
        "trajectory": [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "computer",
                "input": {"action": "left_click", "coordinate": [10, 10]},
                "visual_representation": "ff00ff00ff00ff00",
                "visual_detail": "00" * 32,
            }
        ],
    }
    cache_file = parse_cache_file(json.dumps(v2), "v2.json")
    visual = cache_file.metadata.visual_validation
    assert cache_file.version == 3
    assert visual is not None
    assert visual.detail is not None
    assert (visual.detail.blur, visual.tone, visual.target) == (0.0, None, None)
    assert cache_file.trajectory[0].visual_detail == "00" * 32


def test_future_version_fails_clearly() -> None:
    with pytest.raises(
        UnsupportedCacheVersionError, match=r"'new.json' has format version 7.*up to 3"
    ):
        parse_cache_file(json.dumps({"version": 7, "metadata": {}, "trajectory": []}), "new.json")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"version": 1, "metadata": {"goal": "x"}, "trajectory": [', "looks truncated"),
        ("not json at all", "not valid JSON"),
        ("[1, 2]", "top level is list"),
        ('{"version": "one"}', "version: expected a whole number"),
        ('{"version": 1, "trajectory": []}', "metadata: Field required"),
        (
            '{"version": 1, "metadata": {"goal": "x"}, "trajectory": [{"type": "tool_use", "id": "a", "name": "c", "input": 5}]}',
            r"trajectory\[0\]\.input",
        ),
        (
            '{"version": 1, "metadata": {"goal": "x", "visual_validation": {"method": "md5", "region_size": 9}}, "trajectory": []}',
            "metadata.visual_validation.method",
        ),
    ],
)
def test_corrupt_files_name_the_file_and_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(CacheFileCorruptError, match=fragment) as info:
        parse_cache_file(text, "broken.json")
    assert "'broken.json'" in str(info.value)


def test_binary_garbage_is_reported_not_crashed() -> None:
    with pytest.raises(CacheFileCorruptError, match="not UTF-8"):
        parse_cache_file(b"\xff\xfe\x00garbage", "bin.json")


def test_failures_keep_only_the_most_recent() -> None:
    cache_file = CacheFile(metadata=CacheMetadata(goal="g"), trajectory=[])
    for index in range(MAX_FAILURES_KEPT + 5):
        cache_file.record_failure(index, "changed")
    assert len(cache_file.metadata.failures) == MAX_FAILURES_KEPT
    assert cache_file.metadata.failures[-1].step_index == MAX_FAILURES_KEPT + 4


def test_placeholders_are_found_in_nested_values() -> None:
    assert placeholders_in(["Log in as {{user}}", {"a": ["{{pw}}", 3]}, "{{ not_one }}"]) == {
        "user",
        "pw",
    }


def test_shipped_schema_matches_the_models() -> None:
    shipped = json.loads(SCHEMA.read_text())
    assert shipped == CacheFile.model_json_schema(), "run: python scripts/generate_schema.py"


def test_files_that_do_not_say_their_threshold_or_shift_keep_the_original_behaviour() -> None:
    visual = VisualValidationConfig.model_validate({"method": "phash", "region_size": 100})
    assert (visual.threshold, visual.shift_tolerance) == (10, 0)
