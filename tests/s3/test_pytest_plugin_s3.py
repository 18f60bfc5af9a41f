"""The pytest plugin with its cache on S3 (``--askcache-dir s3://...``, a real S3 server on
127.0.0.1): a suite records into the bucket, and a second run, on another machine as far as
it can tell (a fresh local copy), replays from it with no model call."""

from __future__ import annotations

from pathlib import Path

import fsspec
import pytest

import askcache

pytest_plugins = ["pytester"]

SRC = Path(askcache.__file__).resolve().parents[1]

FORM_TEST = """
from askcache import Agent, ComputerTool
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp


def test_fill(askcache):
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, "Ada Lovelace")) as api:
        agent = askcache.agent(
            Agent(api.client(), [ComputerTool(app)], model="claude-sonnet-4-6", sleep=lambda s: None)
        )
        agent.act("Type Ada Lovelace into the Name field and press Save")
        print(f"requests {len(api.requests)}")
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]
"""


def test_a_suite_records_to_s3_and_replays_from_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, s3_url: str, tmp_path: Path
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(SRC))
    pytester.makepyfile(test_form=FORM_TEST)
    options = ["-p", "askcache.pytest_plugin", "-p", "no:cacheprovider", "-s"]
    options.append(f"--askcache-dir={s3_url}")
    recorded = pytester.runpytest_subprocess(*options, "--askcache-mode=record")
    recorded.assert_outcomes(passed=1)
    fs = fsspec.filesystem("s3")
    key = f"{s3_url.removeprefix('s3://')}/test_form/test_fill.json"
    assert fs.exists(key)
    assert not (pytester.path / "askcache").exists()  # nothing next to the module

    monkeypatch.setenv("ASKCACHE_LOCAL_COPY_DIR", str(tmp_path / "another-machine"))
    replayed = pytester.runpytest_subprocess(*options, "--askcache-mode=replay")
    replayed.assert_outcomes(passed=1)
    out = replayed.stdout.str()
    assert "requests 0" in out
    assert "askcache (mode replay): 1 test, 1 replayed, 0 recorded" in out
    assert "model calls: 0 made, 5 avoided" in out
