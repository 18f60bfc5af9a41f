"""Fuzzing the loader and the replay with mutants of real recorded cache files.

The seeds are recorded for real (SimulatedFormApp, FormFillingScript, the real anthropic
client over HTTP to the stand-in). Each mutant is loaded and, when accepted, replayed on
the unchanged screen and on a changed one. Nothing but an AskCacheError may escape, no
case may run over its time bound, no error may come after an action ran, and nothing may
be clicked, typed or saved on the changed screen. With signing on, no altered text may be
typed at all. The counts of a bigger run are in docs/benchmarks.md (bench/fuzz.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from askcache.cachefile.format import dump_cache_file
from askcache.cachefile.parse import parse_cache_file
from askcache.cachefile.signing import SigningKeys, sign_cache_file
from askcache.foundation.limits import MAX_WAIT_SECONDS
from askcache.foundation.settings import CacheExecutionSettings
from askcache.testing.fuzz import FuzzReport, fuzz, record_seed_files

pytestmark = pytest.mark.integration

KEY = "fuzz-key:0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def seeds() -> list[bytes]:
    return record_seed_files()


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)  # thousands of hand-backs would flood the log capture
    yield
    logging.disable(logging.NOTSET)


def _clean(report: FuzzReport) -> None:
    assert report.raw == []
    assert report.hangs == []
    assert report.late == []
    assert report.acted_on_changed == []


def test_thousands_of_mutants_load_or_fail_with_an_askcache_error(seeds: list[bytes]) -> None:
    report = fuzz(seeds, 3000, replay=False, time_bound=10)
    _clean(report)
    assert report.cases == 3000
    assert 0 < report.refused_at_load < report.cases  # both outcomes are exercised


def test_replayed_mutants_never_act_on_a_changed_screen(seeds: list[bytes]) -> None:
    report = fuzz(seeds, 700, first_seed=1_000_000, big=False)
    _clean(report)
    assert report.completed > 0
    assert report.handed_back > 0
    assert report.refused_at_activation > 0
    assert report.longest_wait <= MAX_WAIT_SECONDS


def test_with_signing_no_altered_text_is_ever_typed(
    seeds: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASKCACHE_SIGNING_KEY", KEY)
    keys = SigningKeys.from_env()

    def signed(raw: bytes) -> bytes:
        cache_file = parse_cache_file(raw, "seed.json")
        assert sign_cache_file(cache_file, keys)
        return dump_cache_file(cache_file)

    report = fuzz(
        seeds,
        300,
        first_seed=2_000_000,
        big=False,
        prepare=signed,
        settings=CacheExecutionSettings(delay_time_between_action=0, require_signature=True),
    )
    _clean(report)
    assert report.typed_altered == []
    assert report.completed > 0  # mutants of the bookkeeping only still replay
    assert json.loads(signed(seeds[0]))["signature"]["key_id"] == "fuzz-key"
