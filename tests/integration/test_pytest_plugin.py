"""The pytest plugin, run by pytest itself (``pytester``, each run in its own interpreter):
a suite of agent tests on the simulated form (the real ``anthropic`` client over HTTP to the
local Messages API stand-in) records, replays with no model call, fails on a hand-back in
``replay`` mode with the step, the reason and the report page, passes when the model is
allowed, changes nothing in mode ``off``, keeps secrets out of names and pages, and prints
one summary whose figures are the run ledger's (``askcache stats --json``), under
pytest-xdist too; and the same on a real Tk application under Xvfb.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import askcache
from askcache.pytest_plugin.naming import trajectory_stem

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.integration

SRC = Path(askcache.__file__).resolve().parents[1]
ROOT = SRC.parent

FORM_TEST = """
import os

import pytest

from askcache import Agent, ComputerTool
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp


@pytest.mark.parametrize("person", ["Ada Lovelace", "Grace"])
def test_fill(askcache, person):
    app = SimulatedFormApp(layout=os.environ.get("FORM_LAYOUT", "original"))
    with MessagesApiStandIn(FormFillingScript(app, person)) as api:
        agent = askcache.agent(
            Agent(api.client(), [ComputerTool(app)], model="claude-sonnet-4-6", sleep=lambda s: None)
        )
        agent.act(
            f"Type {person} into the Name field and press Save",
            askcache.settings(execution_settings={"settle_timeout": 2}),
        )
        print(f"requests {len(api.requests)}")
    assert app.saved == [{"name": person, "email": ""}]


def test_without_the_fixture():
    assert True
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A folder for an agent test suite whose pytest imports this askcache."""
    monkeypatch.setenv("PYTHONPATH", str(SRC))
    monkeypatch.delenv("FORM_LAYOUT", raising=False)
    return pytester


def _run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest_subprocess(
        "-p", "askcache.pytest_plugin", "-p", "no:cacheprovider", *args
    )


def _summary(result: pytest.RunResult) -> list[str]:
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if re.match(r"=+ askcache =+$", line))
    return [line for line in lines[start + 1 :] if not line.startswith("=")][:6]


def _stats(cache: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "askcache.cli", "stats", "--cache-dir", str(cache), "--json"],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )
    data: dict[str, object] = json.loads(done.stdout)
    return data


def test_record_replay_hand_back_and_the_allowed_model(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(test_form=FORM_TEST)
    cache = suite.path / "askcache"
    ada = f"test_form/{trajectory_stem(['test_fill'], 'Ada Lovelace')}.json"
    grace = "test_form/test_fill-Grace.json"
    assert re.fullmatch(r"test_form/test_fill-Ada-Lovelace-[0-9a-f]{8}\.json", ada)

    recorded = _run(suite, "--askcache-mode=record")
    recorded.assert_outcomes(passed=3)
    assert (cache / ada).is_file()
    assert (cache / grace).is_file()
    assert _summary(recorded)[:2] == [
        "askcache (mode record): 2 tests, 0 replayed, 2 recorded",
        "model calls: 10 made, 0 avoided",
    ]

    replayed = _run(suite, "--askcache-mode=replay", "-n", "2")  # the summary from the workers
    replayed.assert_outcomes(passed=3)
    summary = _summary(replayed)
    assert summary[:3] == [
        "askcache (mode replay): 2 tests, 2 replayed, 0 recorded",
        "replays: 2 completed",
        "model calls: 0 made, 10 avoided",
    ]
    saved = re.fullmatch(
        r"replays saved 10 model calls and ([\d,]+) tokens \(\$(\d+\.\d\d)\) against the recordings",
        summary[3],
    )
    assert saved is not None, summary
    stats = _stats(cache)
    totals = stats["total"]
    assert isinstance(totals, dict)
    assert totals["saved_model_calls"] == 10
    assert int(saved.group(1).replace(",", "")) == totals["saved_tokens"]
    assert float(saved.group(2)) == pytest.approx(totals["dollars_saved"], abs=0.005)

    monkeypatch.setenv("FORM_LAYOUT", "banner")  # the app moved its form down
    failed = _run(suite, "--askcache-mode=replay", "-k", "Grace")
    failed.assert_outcomes(failed=1, deselected=2)
    out = failed.stdout.str()
    for line in (
        "askcache: the replay handed back at step 1 (screen_changed: the screen around the "
        "step's action point no longer looks as recorded)\n",
        f"  trajectory: {grace} in {cache}\n",
        "  reason: the screen around the action point no longer matches the recording (",
        f"  report: {suite.path}/askcache-reports/test_form/test_fill-Grace.html\n",
        "  the model was not called (--askcache-mode=replay).",
    ):
        assert line in out
    page = suite.path / "askcache-reports" / "test_form" / "test_fill-Grace.html"
    text = page.read_text()
    assert "handed back at step 1 (screen_changed" in text
    assert "STOPPED HERE" in text
    assert "whole screen with the region boxed" in text  # what the replay checked step 1 on
    assert _summary(failed)[:4] == [
        "askcache (mode replay): 1 test, 1 replayed, 0 recorded, 1 failed by a hand-back",
        "replays: 1 handed back",
        "hand-backs by reason: screen_changed 1 (the screen around the step's action point no "
        "longer looks as recorded)",
        "model calls: 0 made, 1 avoided",
    ]

    allowed = _run(suite, "--askcache-mode=replay", "--askcache-allow-model", "-k", "Grace", "-s")
    allowed.assert_outcomes(passed=1, deselected=2)
    assert "requests 5" in allowed.stdout.str()
    summary = _summary(allowed)
    assert summary[1:4] == [
        "replays: 1 handed back",
        "hand-backs by reason: screen_changed 1 (the screen around the step's action point no "
        "longer looks as recorded)",
        "model calls: 5 made, 0 avoided",
    ]


def test_mode_off_changes_nothing_and_the_command_line_wins_over_the_marker(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(
        test_off=FORM_TEST.replace(
            "@pytest.mark.parametrize",
            '@pytest.mark.askcache(mode="record")\n@pytest.mark.parametrize',
        )
    )
    result = _run(suite, "--askcache-mode=off", "-k", "Grace or without")
    result.assert_outcomes(passed=2, deselected=1)
    assert not (suite.path / "askcache").exists()
    assert not any(re.match(r"=+ askcache =+$", line) for line in result.outlines)
    result.stdout.fnmatch_lines(["*2 passed*"])

    marked = _run(suite, "-k", "Grace")  # no mode on the command line: the marker's
    marked.assert_outcomes(passed=1, deselected=2)
    assert (suite.path / "askcache" / "test_off" / "test_fill-Grace.json").is_file()


def test_nothing_is_done_without_a_mode(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_form=FORM_TEST)
    result = _run(suite, "-k", "Grace or without")
    result.assert_outcomes(passed=2, deselected=1)
    assert not [p.name for p in suite.path.iterdir() if p.name.startswith("askcache")]
    # pytest's header names the installed plugin ("plugins: askcache-0.1.0"); nothing else may
    shown = [line for line in result.outlines if not line.startswith("plugins:")]
    assert "askcache" not in "\n".join(shown).replace("askcache.pytest_plugin", "")


SECRET_TEST = """
import os

import pytest

from askcache import Agent, ComputerTool
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp

PASSWORD = "Hunter2-Sesame!"


@pytest.mark.parametrize("password", [PASSWORD])
def test_login(askcache, password):
    app = SimulatedFormApp(layout=os.environ.get("FORM_LAYOUT", "original"))
    with MessagesApiStandIn(FormFillingScript(app, password)) as api:
        agent = askcache.agent(Agent(api.client(), [ComputerTool(app)], model="claude-sonnet-4-6", sleep=lambda s: None))
        agent.act(
            f"Type {password} into the Name field and press Save",
            askcache.settings(secrets={"password": password}, execution_settings={"settle_timeout": 2}),
        )
    assert app.saved == [{"name": password, "email": ""}]
"""


def test_a_declared_secret_never_reaches_a_name_a_file_or_the_failure(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(test_login=SECRET_TEST)
    secret = "Hunter2-Sesame!"
    _run(suite, "--askcache-mode=record").assert_outcomes(passed=1)
    monkeypatch.setenv("FORM_LAYOUT", "banner")
    failed = _run(suite, "--askcache-mode=replay")
    failed.assert_outcomes(failed=1)
    written = [p for p in suite.path.rglob("*") if p.is_file() and p.suffix in (".json", ".html")]
    names = [p.relative_to(suite.path).as_posix() for p in written]
    assert "askcache/test_login/test_login-secret-password-" in " ".join(names)
    assert any(name.startswith("askcache-reports/test_login/") for name in names)
    for path in written:
        assert secret not in path.as_posix()
        assert secret.encode() not in path.read_bytes(), path
    failure = failed.stdout.str()
    message = failure[failure.index("askcache: the replay") : failure.index("short test summary")]
    assert secret not in message


def test_the_entry_point_names_the_plugin_module() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    points = project["project"]["entry-points"]["pytest11"]
    assert points == {"askcache.pytest_plugin": "askcache.pytest_plugin"}
    import askcache.pytest_plugin as plugin

    assert callable(plugin.pytest_addoption)
    assert callable(plugin.askcache)
    installed = [
        point
        for point in metadata.entry_points(group="pytest11")
        if point.value.startswith("askcache")
    ]
    for point in installed:  # an install made from this pyproject says the same
        assert (point.name, point.value) == ("askcache.pytest_plugin", "askcache.pytest_plugin")


TK_TEST = """
import os

import pytest

from askcache import Agent, ComputerTool
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp, TkFormApp, VirtualDisplay
from askcache.tools.desktop import DesktopBackend


def test_tk_form(askcache, tmp_path):
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with MessagesApiStandIn(script) as api, VirtualDisplay(1280, 800) as screen:
        backend = DesktopBackend(screen.display)
        try:
            with TkFormApp(screen.display, tmp_path / "state.json", layout=os.environ.get("FORM_LAYOUT", "original")) as app:
                tool = ComputerTool(backend, settle_delay=0.3)
                script.app, script.to_model = app, tool.from_screen
                agent = askcache.agent(Agent(api.client(), [tool], model="claude-sonnet-4-6"))
                agent.act(
                    "Type Ada Lovelace into the Name field and press Save",
                    askcache.settings(execution_settings={"settle_timeout": 3}),
                )
                state = app.settled()
        finally:
            backend.close()
        print(f"requests {len(api.requests)}")
    assert state["saved"] == [{"name": "Ada Lovelace", "email": ""}]
"""


def test_a_real_tk_application_under_xvfb(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(test_tk=TK_TEST)
    _run(suite, "--askcache-mode=auto").assert_outcomes(passed=1)
    assert (suite.path / "askcache" / "test_tk" / "test_tk_form.json").is_file()
    replayed = _run(suite, "--askcache-mode=replay", "-s")
    replayed.assert_outcomes(passed=1)
    assert "requests 0" in replayed.stdout.str()  # the stand-in heard nothing
    assert _summary(replayed)[:3] == [
        "askcache (mode replay): 1 test, 1 replayed, 0 recorded",
        "replays: 1 completed",
        "model calls: 0 made, 5 avoided",
    ]
    monkeypatch.setenv("FORM_LAYOUT", "banner")
    failed = _run(suite, "--askcache-mode=replay")
    failed.assert_outcomes(failed=1)
    out = failed.stdout.str()
    assert "askcache: the replay handed back at step 1 (" in out
    assert f"  report: {suite.path}/askcache-reports/test_tk/test_tk_form.html\n" in out


LOOP_TEST = """
import base64
import io
import os

from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp

GOAL = "Type Ada Lovelace into the Name field and press Save"


def run_tool(app, call):
    arguments = call["input"]
    if arguments["action"] == "left_click":
        app.click(tuple(arguments["coordinate"]), "left", 1, None)
    elif arguments["action"] == "type":
        app.type_text(arguments["text"])
    buffer = io.BytesIO()
    app.screenshot().save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    return {"type": "tool_result", "tool_use_id": call["id"], "content": [image]}


def test_own_loop(askcache):
    app = SimulatedFormApp(layout=os.environ.get("FORM_LAYOUT", "original"))
    width, height = app.screenshot().size
    tools = [{"type": "computer_20251124", "name": "computer", "display_width_px": width, "display_height_px": height}]
    with MessagesApiStandIn(FormFillingScript(app, "Ada Lovelace")) as api:
        client = api.client()
        messages = [{"role": "user", "content": GOAL}]
        replay = askcache.loop_replay(
            messages,
            settings=askcache.settings(execution_settings={"settle_timeout": 2}),
            model="claude-sonnet-4-6",
        )
        while True:
            for action in replay.actions(messages):
                replay.tool_result(run_tool(app, action))
            if replay.finished:
                break
            response = client.beta.messages.create(
                model="claude-sonnet-4-6", max_tokens=1024, messages=messages, tools=tools,
                betas=["computer-use-2025-11-24"],
            )
            content = [block.model_dump(exclude_none=True) for block in response.content]
            messages.append({"role": "assistant", "content": content})
            results = [run_tool(app, block) for block in content if block["type"] == "tool_use"]
            if not results:
                break
            messages.append({"role": "user", "content": results})
        replay.done(messages)
        print(f"requests {len(api.requests)}")
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]
"""


def test_your_own_loop_records_replays_and_fails_at_a_hand_back(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(test_loop=LOOP_TEST)
    recorded = _run(suite, "--askcache-mode=auto", "-s")
    recorded.assert_outcomes(passed=1)
    assert "requests 5" in recorded.stdout.str()
    assert (suite.path / "askcache" / "test_loop" / "test_own_loop.json").is_file()
    replayed = _run(suite, "--askcache-mode=replay", "-s")
    replayed.assert_outcomes(passed=1)
    assert "requests 0" in replayed.stdout.str()
    assert _summary(replayed)[:3] == [
        "askcache (mode replay): 1 test, 1 replayed, 0 recorded",
        "replays: 1 completed",
        "model calls: 0 made, 5 avoided",
    ]
    monkeypatch.setenv("FORM_LAYOUT", "banner")
    failed = _run(suite, "--askcache-mode=replay")
    failed.assert_outcomes(failed=1)
    out = failed.stdout.str()
    assert "askcache: the replay handed back at step 1 (screen_changed: " in out
    assert "/askcache-reports/test_loop/test_own_loop.html\n" in out
    assert _summary(failed)[3] == "model calls: 0 made, 1 avoided"


MARKER_TEST = """
import pytest


@pytest.mark.askcache(mode="rewind")
def test_bad_mode(askcache):
    pass


@pytest.mark.askcache(record_mode="once")
def test_bad_field(askcache):
    pass
"""


def test_a_wrong_marker_is_named(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_marker=MARKER_TEST)
    result = _run(suite)
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert "MarkerError: the askcache marker of test_marker.py::test_bad_mode: mode 'rewind'" in out
    assert "unknown field record_mode (valid: mode, allow_model, name)" in out


def test_installed_the_entry_point_loads_the_plugin_and_p_names_the_same_one(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    points = project["project"]["entry-points"]["pytest11"]
    site = tmp_path / "site"  # what an install writes for the entry point, and nothing else
    info = site / "askcache_entry_point_check-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: askcache-entry-point-check\n")
    lines = [f"{name} = {value}" for name, value in points.items()]
    (info / "entry_points.txt").write_text("[pytest11]\n" + "\n".join(lines) + "\n")
    monkeypatch.setenv("PYTHONPATH", f"{site}:{SRC}")
    suite.makepyfile(test_mode="def test_mode(askcache):\n    assert askcache.mode == 'off'\n")
    for options in ([], ["-p", "askcache.pytest_plugin"]):
        result = suite.runpytest_subprocess("-p", "no:cacheprovider", *options)
        result.assert_outcomes(passed=1)  # the fixture is there, registered once
    off = suite.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:askcache.pytest_plugin")
    off.assert_outcomes(errors=1)
    assert "fixture 'askcache' not found" in off.stdout.str()


CONFIG_TEST = """
import pytest

from askcache.pytest_plugin.fixture import FixtureUsageError


def test_plain(askcache, pytestconfig):
    expected = pytestconfig.getoption("expect")
    assert askcache.mode.value == expected.split(",")[0]
    assert str(askcache.cache_dir) == expected.split(",")[1].replace("ROOT", str(pytestconfig.rootpath))
    assert askcache.name() == expected.split(",")[2]
    settings = askcache.settings(parameters={"user": "ada"}, secrets={"pw": "Open-Sesame-9"})
    assert settings.writing_settings.secret_parameters == {"pw": "Open-Sesame-9"}
    assert settings.execution_settings.parameter_values == {"user": "ada", "pw": "Open-Sesame-9"}
    with pytest.raises(FixtureUsageError, match="strategy is set by the plugin"):
        askcache.settings(strategy="off")


@pytest.mark.askcache(mode="replay")
class TestMarked:
    @pytest.mark.askcache(allow_model=True)
    def test_marked(self, askcache, pytestconfig):
        settings = askcache.settings()
        assert str(settings.strategy) == pytestconfig.getoption("marked")
        assert askcache.allow_model
        assert settings.execution_settings.model_after_hand_back
        assert askcache.name(part="second").endswith("TestMarked.test_marked-second.json")

    def test_strict(self, askcache, pytestconfig):
        settings = askcache.settings()
        assert str(settings.strategy) == pytestconfig.getoption("marked")
        if askcache.mode.value == "replay":
            assert not settings.execution_settings.model_after_hand_back
            assert settings.execution_settings.keep_step_views
"""

CONFIG_CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--expect")
    parser.addoption("--marked")
"""


def test_the_ini_options_the_marker_and_the_command_line_decide_in_that_order(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(test_cfg=CONFIG_TEST)
    suite.makeconftest(CONFIG_CONFTEST)
    suite.makeini("[pytest]\naskcache_mode = auto\naskcache_dir = cache\n")
    # the ini's mode for the unmarked test, the markers' (class, then method) for the others
    result = _run(suite, "--expect=auto,ROOT/cache,test_cfg/test_plain.json", "--marked=execute")
    result.assert_outcomes(passed=3)
    # the command line wins over both; a URL is kept as given
    result = _run(
        suite,
        "--askcache-mode=record",
        "--askcache-dir=s3://bucket/suite",
        "--expect=record,s3://bucket/suite,test_cfg/test_plain.json",
        "--marked=record",
    )
    result.assert_outcomes(passed=3)
