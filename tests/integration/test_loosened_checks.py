"""A replay that checks less than its file asks says so, end to end: the model raising the
threshold through ``execute_cached_trajectory``, the caller skipping the checks. The result,
the run ledger, ``askcache show`` and the report page name each loosening and who asked."""

from __future__ import annotations

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
    open_ledger,
)
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    SimulatedFormApp,
    text_reply,
    tool_use_reply,
)

pytestmark = pytest.mark.integration

GOAL = "Type Ada Lovelace into the Name field and press Save"
BY_MODEL = "visual_validation_threshold 2 -> 10 (model)"
SKIPPED = "skip_visual_validation False -> True (settings)"


def _settings(
    cache_dir: Path, strategy: str, filename: str | None, **execution: object
) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(filename=filename),
        execution_settings=CacheExecutionSettings(delay_time_between_action=0, **execution),
    )


def _agent(api: MessagesApiStandIn, app: SimulatedFormApp) -> Agent:
    return Agent(api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "askcache.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=dict(os.environ),
    )


def test_a_loosened_replay_is_said_in_its_result_the_ledger_show_and_the_report(
    tmp_path: Path,
) -> None:
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, "Ada Lovelace")) as api:
        recorded = _agent(api, app).act(GOAL, _settings(tmp_path, "record", "form.json"))
        assert recorded.status == "done"

    by_model = SimulatedFormApp()
    script = [
        tool_use_reply(
            "execute_cached_trajectory",
            {"trajectory_file": "form.json", "visual_validation_threshold": 10},
        ),
        text_reply("Saved."),
    ]
    with MessagesApiStandIn(script) as api:
        result = _agent(api, by_model).act(GOAL, _settings(tmp_path, "execute", None))
        assert result.status == "done"
        assert "Checks loosened: " + BY_MODEL in str(api.requests[1]["messages"])  # its answer
    assert by_model.saved == [{"name": "Ada Lovelace", "email": ""}]
    assert result.replay is not None
    assert [item.short for item in result.replay.loosened] == [BY_MODEL]
    assert {step.threshold for step in result.replay.steps if step.validated} == {10}

    skipping = SimulatedFormApp()
    with MessagesApiStandIn([]) as api:
        skipped = _agent(api, skipping).act(
            GOAL,
            _settings(tmp_path, "execute", "form.json", skip_visual_validation=True),
        )
    assert skipped.replay is not None
    assert skipped.replay.status == "completed"
    assert skipping.saved == [{"name": "Ada Lovelace", "email": ""}]

    runs = open_ledger(LocalCacheStorage(tmp_path)).records("form.json")
    assert [r.loosened for r in runs if r.event == "replay"] == [[BY_MODEL], [SKIPPED]]

    shown = _cli("show", "form", "--cache-dir", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert "  checks loosened in 2 of 2 replays (the last, " in shown.stdout
    assert f": {SKIPPED})\n" in shown.stdout
    page = tmp_path / "form.html"
    report = _cli("report", "form", "--cache-dir", str(tmp_path), "--output", str(page))
    assert report.returncode == 0, report.stderr
    html = page.read_text()
    for said in (BY_MODEL, SKIPPED):
        assert f"checks loosened: {said.replace('>', '&gt;')}" in html
