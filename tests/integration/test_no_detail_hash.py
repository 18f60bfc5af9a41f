"""A file recorded without the detail hash (``visual_validation_detail_region_size=None``)
cannot see a relabelled small control, and says so: ``askcache lint`` warns, ``askcache show``,
the report page and ``replay --dry-run`` add a line, and every replay of it carries the
warning in its result. A
file recorded with the default detail hash has none of these."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from askcache import (
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.cachefile.blind_spots import NO_DETAIL_HASH
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from tests.helpers import record_form

pytestmark = pytest.mark.integration

GOAL = "Type Ada Lovelace into the Name field and press Save"
WARNING = "no detail hash recorded (visual_validation_detail_region_size=None)"


def _settings(cache_dir: Path, strategy: str, name: str, **writing: object) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(filename=name, **writing),  # type: ignore[arg-type]
        execution_settings=CacheExecutionSettings(delay_time_between_action=0),
    )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "askcache.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=dict(os.environ),
    )


def test_each_replay_of_a_file_without_the_detail_hash_says_what_it_cannot_see(
    tmp_path: Path,
) -> None:
    warnings: dict[str, list[str]] = {}
    for name, writing in (
        ("plain.json", {"visual_validation_detail_region_size": None}),
        ("detailed.json", {}),
    ):
        app = SimulatedFormApp()
        script = FormFillingScript(app, "Ada Lovelace")
        with MessagesApiStandIn(script) as api:
            agent = Agent(
                api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None
            )
            recorded = agent.act(GOAL, _settings(tmp_path, "record", name, **writing))
            assert recorded.status == "done"
            script.app = replay_app = SimulatedFormApp()
            agent = Agent(
                api.client(), [ComputerTool(replay_app)], model="claude-test", sleep=lambda s: None
            )
            replayed = agent.act(GOAL, _settings(tmp_path, "execute", name))
        assert replayed.replay is not None
        assert (replayed.replay.status, replayed.model_calls) == ("completed", 0)
        warnings[name] = replayed.replay.warnings
    assert warnings == {"plain.json": [NO_DETAIL_HASH], "detailed.json": []}
    assert NO_DETAIL_HASH.startswith(WARNING)
    assert "a 7 key that now reads 9" in NO_DETAIL_HASH


def test_lint_show_and_the_report_name_what_the_file_cannot_see(tmp_path: Path) -> None:
    storage = LocalCacheStorage(tmp_path)
    record_form(storage, "plain.json", visual_validation_detail_region_size=None)
    record_form(storage, "detailed.json")
    form = tmp_path / "form.png"
    SimulatedFormApp().screenshot().save(form)
    where = ("--cache-dir", str(tmp_path))
    lint = _cli("lint", "--cache-dir", str(tmp_path), "--json")
    assert lint.returncode == 0, lint.stderr  # a warning: the file still replays
    problems = {f["name"]: f["problems"] for f in json.loads(lint.stdout)["files"]}
    assert problems["detailed.json"] == []
    assert problems["plain.json"] == [
        {"level": "warning", "check": "unchecked", "message": NO_DETAIL_HASH, "step": None}
    ]
    strict = _cli("lint", "plain", "--strict", "--cache-dir", str(tmp_path))
    assert strict.returncode == 1
    assert f"  warning: [unchecked] {NO_DETAIL_HASH}\n" in strict.stdout

    for name, expected in (("plain", [NO_DETAIL_HASH]), ("detailed", [])):
        shown = _cli("show", name, "--cache-dir", str(tmp_path))
        assert shown.returncode == 0, shown.stderr
        assert (f"  cannot see: {NO_DETAIL_HASH}\n" in shown.stdout) == bool(expected)
        as_json = _cli("show", name, "--cache-dir", str(tmp_path), "--json")
        assert json.loads(as_json.stdout)["cannot_see"] == expected
        page = tmp_path / f"{name}.html"
        report = _cli("report", name, "--cache-dir", str(tmp_path), "--output", str(page))
        assert report.returncode == 0, report.stderr
        assert ("Cannot see: no detail hash recorded" in page.read_text()) == bool(expected)
        dry = _cli("replay", name, "--dry-run", "--screenshot", str(form), *where, "--json")
        assert dry.stderr == ""  # (step 2 is checked on the screen before step 1: it stops)
        assert json.loads(dry.stdout)["cannot_see"] == expected


def test_a_replay_whose_own_thresholds_accept_any_screen_says_what_it_cannot_see(
    tmp_path: Path,
) -> None:
    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace")
    with MessagesApiStandIn(script) as api:
        agent = Agent(api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None)
        assert agent.act(GOAL, _settings(tmp_path, "record", "detailed.json")).status == "done"
        results = {}
        for label, overrides in (
            ("detail", {"visual_validation_detail_threshold": 256}),
            ("main", {"visual_validation_threshold": 10_000}),
            ("none", {}),
        ):
            script.app = replay_app = SimulatedFormApp()
            settings = _settings(tmp_path, "execute", "detailed.json").model_copy(
                update={
                    "execution_settings": CacheExecutionSettings(
                        delay_time_between_action=0, **overrides
                    )
                }
            )
            agent = Agent(
                api.client(), [ComputerTool(replay_app)], model="claude-test", sleep=lambda s: None
            )
            replayed = agent.act(GOAL, settings)
            assert replayed.replay is not None
            assert replayed.replay.status == "completed"
            results[label] = replayed.replay.warnings
    (detail,) = results["detail"]
    assert detail.startswith("visual_validation_detail_threshold=256 accepts any detail region")
    assert "a 7 key that now reads 9" in detail
    (main,) = results["main"]
    assert main.startswith("visual_validation_threshold=10000 accepts any screen")
    assert results["none"] == []
