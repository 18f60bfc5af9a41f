"""Heal settings, versions, proposals and diffs (the runs themselves:
tests/integration/test_heal.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from askcache import CachingSettings, RunRecord, open_ledger
from askcache.cli.app import main
from askcache.cli.commands.heal import diff_lines
from askcache.fingerprint.step import validation_config
from askcache.foundation.errors import AskCacheError, InvalidSettingsError
from askcache.foundation.settings import CacheWritingSettings, HealMode
from askcache.heal.trajectory import _writing_settings, healed_bytes
from askcache.record.recording import CacheManager
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import SimulatedFormApp
from tests.helpers import GOAL, form_calls, record_form, run_history


def _record_grace(storage: LocalCacheStorage, name: str) -> None:
    app = SimulatedFormApp()
    manager = CacheManager(storage, CacheWritingSettings(filename=name))
    manager.start_recording(GOAL)
    manager.finish_recording(run_history(app, form_calls(app, "Grace Hopper")))


@pytest.mark.parametrize(
    ("strategy", "mode"),
    [("auto", "auto"), ("execute", "off"), ("record", "auto"), ("off", "auto")],
)
def test_heal_defaults_follow_the_strategy(strategy: str, mode: str) -> None:
    settings = CachingSettings(strategy=strategy)  # type: ignore[arg-type]
    assert settings.heal is None
    assert settings.heal_mode == HealMode(mode)
    explicit = CachingSettings(strategy=strategy, heal="propose")  # type: ignore[arg-type]
    assert explicit.heal_mode == HealMode.PROPOSE


def test_an_unknown_heal_mode_lists_the_valid_ones() -> None:
    with pytest.raises(InvalidSettingsError, match="heal") as caught:
        CachingSettings(heal="sometimes")  # type: ignore[arg-type]
    assert "'off', 'propose' or 'auto'" in str(caught.value)


def test_versions_commit_archive_the_base_and_refuse_a_stale_one(
    storage: LocalCacheStorage,
) -> None:
    storage.write("t.json", b"one\n")
    versions = TrajectoryVersions(storage, "t.json", keep=3)
    assert versions.numbers() == []
    assert versions.commit(b"one\n", b"two\n") == 2
    assert storage.read(versions.version_name(1)) == b"one\n"
    assert storage.read("t.json") == b"two\n"
    assert versions.commit(b"one\n", b"three\n") is None  # healed from an old version
    assert storage.read("t.json") == b"two\n"
    assert versions.commit(b"two\n", b"three\n") == 3
    assert versions.commit(b"three\n", b"four\n") == 4
    assert versions.numbers() == [2, 3, 4]  # keep=3
    assert storage.list_names() == ["t.json"]  # versions are never listed as cache files


def _contents(storage: LocalCacheStorage, count: int) -> list[bytes]:
    """``count`` different, valid cache files (the recorded form with other goals)."""
    record_form(storage, "seed.json")
    seed = load_cache_file(storage, "seed.json")
    contents = []
    for i in range(count):
        seed.metadata.goal = f"goal {i}"
        contents.append(healed_bytes(seed))
    return contents


def test_rollback_and_accept_add_versions_and_never_lose_one(storage: LocalCacheStorage) -> None:
    one, two, five = _contents(storage, 3)
    storage.write("t.json", one)
    versions = TrajectoryVersions(storage, "t.json")
    versions.commit(one, two)
    assert versions.current_number() == 2
    assert versions.rollback() == 3
    assert storage.read("t.json") == one
    assert versions.current_number() == 3
    assert versions.resolve("previous") == ("v2", two)
    proposal = versions.propose(five)
    assert versions.resolve("proposed")[1] == five
    assert versions.accept() == 4
    assert storage.read("t.json") == five
    assert proposal not in versions.proposals()
    assert versions.rollback("2") == 5
    assert storage.read("t.json") == two
    assert versions.numbers() == [1, 2, 3, 4, 5]
    with pytest.raises(AskCacheError, match=r"versions: v1, v2, v3, v4, v5; proposals: none"):
        versions.resolve("9")
    with pytest.raises(AskCacheError, match="no proposed version"):
        versions.accept()


def test_a_first_heal_archives_a_file_edited_since_the_last_version(
    storage: LocalCacheStorage,
) -> None:
    storage.write("t.json", b"one\n")
    versions = TrajectoryVersions(storage, "t.json")
    versions.commit(b"one\n", b"two\n")
    storage.write("t.json", b"re-recorded\n")  # a new recording over the healed file
    assert versions.commit(b"re-recorded\n", b"healed again\n") == 4
    assert storage.read(versions.version_name(3)) == b"re-recorded\n"


def test_diff_lines_show_steps_kept_removed_added_and_changed_fingerprints(
    tmp_path: Path,
) -> None:
    storage = LocalCacheStorage(tmp_path)
    record_form(storage, "a.json")
    _record_grace(storage, "b.json")
    a, b = load_cache_file(storage, "a.json"), load_cache_file(storage, "b.json")
    lines = diff_lines(a, b)
    assert lines[0].startswith("=   0 -> 0   screenshot")
    assert any(line.startswith("- ") and "Ada Lovelace" in line for line in lines)
    assert any(line.startswith("+ ") and "Grace Hopper" in line for line in lines)
    assert not any("(fingerprint changed)" in line for line in lines)
    moved = a.model_copy(deep=True)
    moved.trajectory[1].visual_representation = "0" * 16
    assert [line for line in diff_lines(a, moved) if "(fingerprint changed)" in line] == [
        '=   1 -> 1   left_click {"coordinate": [360, 88]} (fingerprint changed)'
    ]


def test_cli_diff_html_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    storage = LocalCacheStorage(tmp_path)
    record_form(storage, "t.json")
    before = storage.read("t.json")
    assert main(["diff", "t.json", "--cache-dir", str(tmp_path)]) == 3
    assert "no version before the current one" in capsys.readouterr().err
    versions = TrajectoryVersions(storage, "t.json")
    _record_grace(storage, "other.json")
    versions.propose(storage.read("other.json"))
    page = tmp_path / "diff.html"
    assert main(["diff", "t.json", "--html", str(page), "--cache-dir", str(tmp_path)]) == 0
    assert "t.json -> proposed-" in capsys.readouterr().out
    html = page.read_text()
    assert html.count('alt="fingerprint"') == 6  # three checked steps on each side
    assert "Grace Hopper" in html
    nowhere = str(tmp_path / "no" / "diff.html")
    assert main(["diff", "t.json", "--html", nowhere, "--cache-dir", str(tmp_path)]) == 3
    assert "no folder" in capsys.readouterr().err
    assert main(["rollback", "missing.json", "--cache-dir", str(tmp_path)]) == 3
    assert "cache file 'missing.json' not found" in capsys.readouterr().err
    assert main(["diff", "t.json", "1", "--cache-dir", str(tmp_path)]) == 3
    assert storage.read("t.json") == before
    # like every cache command: NAME without .json, --json for scripts
    assert main(["diff", "t", "--json", "--cache-dir", str(tmp_path)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (listed["name"], listed["a"]) == ("t.json", "t.json")  # the current version
    assert listed["b"].startswith("proposed-")
    assert any(line.startswith("= ") for line in listed["lines"])
    assert main(["accept", "t", "--json", "--cache-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "t.json", "version": 2}
    assert main(["rollback", "t", "--json", "--cache-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "t.json", "version": 3}
    assert storage.read("t.json") == before


def test_a_heal_ends_a_run_of_hand_backs_in_the_ledger(storage: LocalCacheStorage) -> None:
    ledger = open_ledger(storage)
    start = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    events = [("replay", "handed_back")] * 2 + [("healed", "healed"), ("replay", "handed_back")]
    for minute, (event, status) in enumerate(events):
        ledger.append(
            RunRecord(
                trajectory="t.json",
                event=event,  # type: ignore[arg-type]
                status=status,  # type: ignore[arg-type]
                stopped_at_step=1,
                started_at=start + timedelta(minutes=minute),
                healed_steps=[1, 2] if event == "healed" else [],
            )
        )
    assert ledger.consecutive_failures("t.json") == (1, 1)
    healed = [r for r in ledger.records("t.json") if r.event == "healed"]
    assert healed[0].healed_steps == [1, 2]
    assert healed[0].host


def test_a_changed_version_is_signed_again_or_loses_a_signature_it_cannot_keep(
    storage: LocalCacheStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    from askcache.cachefile.parse import parse_cache_file
    from askcache.cachefile.signing import SIGNING_KEY_ENV, sign_cache_file, verify_cache_file
    from askcache.foundation.errors import CacheSignatureError

    monkeypatch.setenv(SIGNING_KEY_ENV, "team:" + "ab" * 32)
    record_form(storage)
    signed = load_cache_file(storage, "form.json")
    verify_cache_file(signed, "form.json")
    base = storage.read("form.json")
    signed.trajectory[1].visual_mask = "0;0;0;0;0"  # a change, as a heal or a tune makes
    with pytest.raises(CacheSignatureError):
        verify_cache_file(signed, "form.json")  # the old signature no longer verifies
    with pytest.raises(CacheSignatureError, match="does not match its content"):
        healed_bytes(signed)  # not said what it was made from: the changed file itself
    verify_cache_file(parse_cache_file(healed_bytes(signed, base), "new.json"), "new.json")

    monkeypatch.delenv(SIGNING_KEY_ENV)
    assert not sign_cache_file(signed)
    assert parse_cache_file(healed_bytes(signed), "new.json").signature is None


def test_a_heal_writes_with_the_check_the_file_was_recorded_with(
    storage: LocalCacheStorage,
) -> None:
    # A file recorded with other settings than today's defaults (here the previous default:
    # blurred detail hash, threshold 22, no floors) is healed with exactly its own check,
    # never a mix of its thresholds and today's blur or floors.
    record_form(
        storage,
        visual_validation_detail_blur=1.0,
        visual_validation_detail_threshold=22,
        visual_validation_noise_floor=0.0,
        visual_validation_detail_noise_floor=0.0,
        visual_validation_tone_mean_tolerance=0.08,
        visual_validation_target_threshold=1,
    )
    recorded = load_cache_file(storage, "form.json")
    settings = _writing_settings(recorded, {})
    assert validation_config(settings) == recorded.metadata.visual_validation


@pytest.mark.parametrize(
    "other_density",
    [
        {"visual_validation_other_density_threshold": None},  # files recorded before it
        {
            "visual_validation_other_density_threshold": 30,
            "visual_validation_other_density_region_size": 48,
            "visual_validation_other_density_blur": 3.0,
            "visual_validation_other_density_noise_floor": 250.0,
        },
    ],
)
def test_a_heal_keeps_the_files_hash_for_other_densities(
    storage: LocalCacheStorage, other_density: dict[str, object]
) -> None:
    record_form(storage, **other_density)
    recorded = load_cache_file(storage, "form.json")
    settings = _writing_settings(recorded, {})
    assert validation_config(settings) == recorded.metadata.visual_validation


def test_lint_warns_on_a_loose_threshold_for_other_densities(storage: LocalCacheStorage) -> None:
    from askcache.cli.lint_rules import lint_cache_file

    record_form(storage)
    recorded = load_cache_file(storage, "form.json")
    assert not [p for p in lint_cache_file(recorded) if p.check == "threshold"]
    record_form(storage, "small.json", visual_validation_other_density_region_size=24)
    small = [p.message for p in lint_cache_file(load_cache_file(storage, "small.json"))]
    assert any("covers 24 px, less than the detail hash" in m for m in small)
    record_form(storage, "loose.json", visual_validation_other_density_threshold=100)
    loose = list(lint_cache_file(load_cache_file(storage, "loose.json")))
    messages = [p.message for p in loose if p.check == "threshold"]
    assert messages == [
        "threshold for other pixel densities 100 is loose: more than a quarter of the 256 "
        "bits may differ and the step still counts as unchanged"
    ]
