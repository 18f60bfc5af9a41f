"""The cache format: round trips, old files, future versions, corrupt and truncated files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from askcache.cachefile.format import (
    FORMAT_VERSION,
    CacheFile,
    CacheMetadata,
    CoordinateSpace,
    VisualValidationConfig,
    dump_cache_file,
    upgrade_cache_file,
)
from askcache.cachefile.parse import parse_cache_file
from askcache.foundation.errors import CacheFileCorruptError, UnsupportedCacheVersionError
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.parameters import placeholders_in

SCHEMA = Path(__file__).parents[2] / "docs" / "cache-format.schema.json"

texts = st.text(
    st.characters(blacklist_categories=["Cc", "Cs"]) | st.sampled_from("\n\t"), max_size=20
)


@st.composite
def steps(draw: st.DrawFn, hashed: bool, hash_size: int = 8) -> ToolUseBlockParam:
    action = draw(st.sampled_from(["left_click", "type", "key", "screenshot", "scroll", "wait"]))
    arguments: dict[str, object] = {}
    if action in ("left_click", "scroll"):
        arguments["coordinate"] = [draw(st.integers(0, 639)), draw(st.integers(0, 399))]
    if action == "type":
        arguments["text"] = draw(texts)
    if action == "key":
        arguments["text"] = draw(st.sampled_from(["Return", "ctrl+s", "Tab"]))
    if action == "wait":
        arguments["duration"] = draw(st.integers(0, 60) | st.floats(0, 60))
    toolset = draw(st.booleans())
    digits = hash_size * hash_size // 4
    return ToolUseBlockParam(
        id=draw(st.text("abcdef0123456789_", min_size=1, max_size=12)),
        name=action if toolset else "computer",
        input=arguments if toolset else {"action": action, **arguments},
        toolset_name="computer" if toolset else None,
        visual_representation=draw(
            st.none() | st.text("0123456789abcdef", min_size=digits, max_size=digits)
        )
        if hashed
        else None,
    )


@st.composite
def cache_files(draw: st.DrawFn) -> CacheFile:
    visual = draw(
        st.none()
        | st.builds(
            VisualValidationConfig,
            method=st.sampled_from(["phash", "ahash", "dhash", "whash"]),
            hash_size=st.sampled_from([8, 16]),
            region_size=st.integers(16, 400),
            threshold=st.integers(0, 60),
        )
    )
    hash_size = visual.hash_size if visual is not None else 8
    return CacheFile(
        metadata=CacheMetadata(
            goal=draw(texts),
            coordinate_space=draw(
                st.none()
                | st.builds(
                    CoordinateSpace, width=st.integers(640, 8000), height=st.integers(400, 4000)
                )
            ),
            visual_validation=visual,
            is_valid=draw(st.booleans()),
        ),
        trajectory=draw(st.lists(steps(visual is not None, hash_size), max_size=5)),
        cache_parameters=draw(
            st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), texts, max_size=3)
        ),
    )


@settings(max_examples=60, deadline=None)
@given(cache_files())
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
    assert cache_file.version == 0  # kept: loading never upgrades a file
    assert upgrade_cache_file(cache_file)
    assert cache_file.version == FORMAT_VERSION
    assert cache_file.metadata.visual_validation == VisualValidationConfig(
        method="phash", hash_size=8, region_size=100, threshold=10
    )
    assert cache_file.metadata.coordinate_space == CoordinateSpace(width=1280, height=800)
    assert cache_file.trajectory[1].visual_representation is None
    assert cache_file.cache_parameters == {}
    assert (cache_file.metadata.legacy_stats, cache_file.metadata.is_valid) == (None, True)


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
    assert cache_file.version == 1  # saving never upgrades
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
    assert cache_file.version == 2  # saving never upgrades
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


def test_version_2_replay_counts_move_to_legacy_stats() -> None:
    v2 = {
        "version": 2,
        "metadata": {
            "goal": "g",
            "execution_attempts": 7,
            "successes": 5,
            "failures": [{"step_index": 2, "reason": "changed", "at": "2026-11-01T10:00:00Z"}],
            "last_executed_at": "2026-11-02T10:00:00Z",
        },
        "trajectory": [],
    }
    cache_file = parse_cache_file(json.dumps(v2), "v2.json")
    legacy = cache_file.metadata.legacy_stats
    assert legacy is not None
    assert (legacy.execution_attempts, legacy.successes, legacy.failures[0].step_index) == (7, 5, 2)
    assert cache_file.metadata.end_state is None
    written = json.loads(dump_cache_file(cache_file))
    assert written["version"] == 2  # saving never upgrades; `askcache upgrade` does
    assert "execution_attempts" not in written["metadata"]
    again = parse_cache_file(json.dumps(written), "v2.json").metadata.legacy_stats
    assert again is not None
    assert (again.execution_attempts, again.successes) == (7, 5)


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
