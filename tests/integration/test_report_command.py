"""``askcache report NAME``: the HTML report of a trajectory and its runs, made by the real
command from a real recording and the run ledger its real replays wrote, and looked at in
headless Chromium."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from askcache import Agent, CacheExecutionSettings, CacheWritingSettings, CachingSettings
from askcache.cli.app import main
from askcache.cli.html_report import MARK_COLOUR
from askcache.foundation.screen.thumbnails import Thumbnail
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.ledger import open_ledger
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.tools import ComputerTool

pytestmark = pytest.mark.integration

GOAL = "Type Ada Lovelace into the Name field and press Save"
ASKCACHE = [sys.executable, "-m", "askcache.cli"]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ASKCACHE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder as a fleet machine leaves it: a recording, a replay that completed and
    a later one that handed back on a changed form (the model finished), both in the ledger."""
    folder = tmp_path_factory.mktemp("fleet")
    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace")
    settings = CachingSettings(
        strategy="record",
        cache_dir=folder,
        writing_settings=CacheWritingSettings(filename="form.json"),
        execution_settings=CacheExecutionSettings(delay_time_between_action=0),
    )
    replay = settings.model_copy(update={"strategy": "execute"})
    with MessagesApiStandIn(script) as api:
        Agent(api.client(), [ComputerTool(app)], model="claude-test").act(GOAL, settings)
        for layout in ("original", "banner"):
            screen = SimulatedFormApp(layout=layout)
            script.app = screen
            run = Agent(api.client(), [ComputerTool(screen)], model="claude-test").act(GOAL, replay)
            assert run.replay is not None
            assert run.replay.status == ("completed" if layout == "original" else "handed_back")
    return folder


def _images(page: str, alt: str) -> list[Image.Image]:
    found = re.findall(
        rf'<img class="\w+" alt="{re.escape(alt)}" src="data:image/png;base64,([^"]+)"', page
    )
    return [Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB") for data in found]


def _red(image: Image.Image) -> int:
    pixels = np.asarray(image.convert("RGB")).astype(int)
    near = np.abs(pixels - np.array(MARK_COLOUR)).sum(axis=2) < 60
    return int(near.sum())


END_ALT = (
    "the recorded end state: the final screen as a 1/8-scale grey thumbnail, with each "
    "step&#x27;s action point"
)


def test_the_report_shows_the_runs_the_end_state_and_every_step(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "form.html"
    args = ["report", "form", "--cache-dir", str(fleet), "--output", str(output)]
    capsys.readouterr()
    assert main([*args, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["report"] == str(output)
    assert (summary["name"], summary["runs"], summary["runs_total"]) == ("form.json", 2, 2)
    assert summary["end_state"] is True
    assert summary["checked_on"] is None
    page = output.read_text()
    runs = re.findall(r"<tr class='run ([a-z]*)'>(.*?)</tr>", page, re.S)
    # newest first: the hand-back on the banner, then the completed replay
    assert [css for css, _ in runs] == ["bad", "ok"]
    assert "<b>handed_back</b>" in runs[0][1]
    assert "step 1" in runs[0][1]  # where it stopped, and why
    assert "no longer matches" in runs[0][1]
    assert "<b>completed</b>" in runs[1][1]
    assert "saved " in runs[1][1]
    assert "(estimated: the recording&#x27;s cost" in runs[1][1]
    ledger = open_ledger(LocalCacheStorage(fleet)).records("form.json")
    handed_back = ledger[-1]
    assert handed_back.model_calls > 0
    assert f"<td>{handed_back.model_calls}</td>" in runs[0][1]
    assert f"<td>{handed_back.usage.total_tokens:,}</td>" in runs[0][1]
    assert "All replays: 2 replays, hit rate 50%" in page

    # the end state is the file's own thumbnail, scaled up (away from the red marks)
    (end,) = _images(page, END_ALT)
    cache_file = load_cache_file(LocalCacheStorage(fleet), "form.json")
    state, config = cache_file.metadata.end_state, cache_file.metadata.screen_state
    assert state is not None
    assert config is not None
    stored = Thumbnail.from_end_state(state, config).values
    scale = end.width // state.width
    assert (end.width, end.height) == (state.width * scale, state.height * scale)
    shown = np.asarray(end.convert("L"))[::scale, ::scale].astype(int)
    assert (np.abs(shown - stored) <= 1).mean() > 0.95
    assert _red(end) > 0  # the action points

    # each step: its check set-up; the effect tiles of the steps that changed the screen
    assert len(re.findall(r"<tr[^>]*><td>\d+</td>", page)) == 4
    assert "does not act on the screen: not checked" in page
    effects = _images(
        page, "what the action changed when recorded: its tiles before and after (1/8-scale grey)"
    )
    assert len(effects) == sum(
        1 for step in cache_file.trajectory if step.effect is not None and step.effect.tiles
    )
    assert len(effects) >= 2
    assert "give --screenshots DIR or --live" in page

    assert main([*args, "--runs", "1"]) == 0
    assert "1 of 2 ledger entries" in capsys.readouterr().out
    page = output.read_text()
    assert len(re.findall(r"<tr class='run ", page)) == 1
    assert "<b>handed_back</b>" in page
    assert "<b>completed</b>" not in page
    assert sorted(os.listdir(tmp_path)) == ["form.html"]  # replaced whole, no leftovers
    # the same from the storage as a URL (file://, as s3:// on a fleet)
    url = ["report", "form", "--cache-dir", fleet.as_uri(), "--output", str(output), "--json"]
    assert main(url) == 0
    assert json.loads(capsys.readouterr().out)["runs_total"] == 2


def test_with_screenshots_each_region_is_marked_and_judged(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shots = tmp_path / "shots"
    shots.mkdir()
    SimulatedFormApp().screenshot().save(shots / "step-1.png")
    capsys.readouterr()
    code = main(
        [
            "report",
            "form.json",
            "--cache-dir",
            str(fleet),
            "--screenshots",
            str(shots),
            "--json",
            "--output",
            str(tmp_path / "r.html"),
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["checked_steps"] == 3
    assert summary["would_stop_at"] == 2  # typing needs the field focused by the click
    page = (tmp_path / "r.html").read_text()
    regions = _images(page, "region with the action point")
    screens = _images(page, "whole screen with the region boxed")
    assert len(regions) == len(screens) == 3
    for region in regions:
        assert region.size == (100, 100)
        centre = region.crop((40, 40, 60, 60))
        assert _red(centre) > 10  # the cross at the action point
    for screen in screens:
        assert _red(screen) > 20  # the box around the region
    rows = re.findall(r"<tr class='(ok|bad)'><td>(\d+)</td>", page)
    assert rows == [("ok", "1"), ("bad", "2"), ("ok", "3")]
    assert "would run" in page
    assert "STOP: " in page
    assert "a replay would stop at step 2" in page

    # a screen only for a step after the others: they are not checked, never "would run"
    (shots / "step-1.png").rename(shots / "step-9.png")
    argv = ["report", "form", "--cache-dir", str(fleet), "--screenshots", str(shots)]
    assert main([*argv, "--json", "--output", str(tmp_path / "r2.html")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["checked_steps"], summary["unchecked_steps"]) == (0, [1, 2, 3])
    page = (tmp_path / "r2.html").read_text()
    assert "would run" not in page
    assert "not confirmed: step(s) 1, 2, 3 were not checked (no screen for them)" in page


def test_the_report_in_chromium_shows_its_parts(fleet: Path, tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    from askcache.parity.evidence import _CHROMIUM_FLAGS, find_chromium

    SimulatedFormApp(layout="banner").screenshot().save(tmp_path / "banner.png")
    output = tmp_path / "report.html"
    args = ["report", "form", "--cache-dir", str(fleet), "--output", str(output)]
    assert main([*args, "--screenshots", str(tmp_path / "banner.png")]) == 0
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=find_chromium(), args=_CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(output.as_uri())
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # no overflow
        images = page.locator("img")
        assert images.count() >= 1 + 2 + 2 * 3  # end state, effects, 3 checked steps
        assert all(
            page.evaluate("(i) => i.complete && i.naturalWidth > 0", handle)
            for handle in images.element_handles()
        )
        end = Image.open(io.BytesIO(page.locator("img.end").screenshot()))
        grey = np.asarray(end.convert("L"))
        assert grey.std() > 10  # a picture of a screen, not a blank box
        assert _red(end) > 0
        first_region = Image.open(
            io.BytesIO(page.locator("table.steps img.region").first.screenshot())
        )
        assert _red(first_region) > 10
        verdict = page.locator("p.verdict").inner_text()
        assert "a replay would stop at step 1" in verdict
        statuses = page.locator("table.runs tr.run b").all_inner_texts()
        assert statuses == ["handed_back", "completed"]
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert (tmp_path / "report.png").stat().st_size > 20_000


def test_user_mistakes_are_one_line_errors(fleet: Path, tmp_path: Path) -> None:
    def one_line(done: subprocess.CompletedProcess[str], code: int, words: str) -> None:
        assert done.returncode == code, done.stderr
        assert done.stderr.strip().count("\n") == 0, done.stderr
        assert "Traceback" not in done.stderr
        assert words in done.stderr

    cache = ["--cache-dir", str(fleet)]
    one_line(_run("report", "from", *cache, cwd=tmp_path), 3, "did you mean form.json?")
    one_line(_run("report", "form", "--cache-dir", str(tmp_path / "nowhere")), 3, "no cache folder")
    one_line(_run("report", "form", *cache, "--runs", "0"), 64, "at least 1 run")
    one_line(_run("report", "form", *cache, "--runs", "many"), 64, "whole number of runs")
    one_line(_run("report", *cache), 64, "the following arguments are required: name")
    one_line(_run("report", "form", *cache, "--param", "who"), 64, "expected NAME=VALUE")
    one_line(
        _run("report", "form", *cache, "--screenshots", str(tmp_path / "none")),
        3,
        "no such file or folder",
    )
    no_x = subprocess.run(
        [*ASKCACHE, "report", "form", *cache, "--live"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "DISPLAY": ""},
    )
    one_line(no_x, 3, "no X display for --live")
    (tmp_path / "empty").mkdir()
    one_line(
        _run("report", "form", *cache, "--screenshots", str(tmp_path / "empty")),
        3,
        "no PNG named by step number",
    )
    one_line(
        _run("report", "form", *cache, "--live", "--screenshots", str(tmp_path)),
        64,
        "not allowed with argument",
    )
    one_line(
        _run("report", "form", *cache, "--output", str(tmp_path / "no" / "r.html")),
        3,
        "no folder",
    )
    assert list(tmp_path.glob("*.html")) == []  # nothing written by a failed run
    done = _run("report", "form", *cache, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote askcache-report-form.html: form.json, 4 steps")
    assert (tmp_path / "askcache-report-form.html").is_file()
    helped = _run("report", "--help")
    assert helped.returncode == 0
    for option in (
        "--output FILE",
        "--runs N",
        "--screenshots DIR_OR_PNG",
        "--live",
        "--display :N",
        "--param NAME=VALUE",
        "--cache-dir DIR_OR_URL",
        "--json",
    ):
        assert option in helped.stdout
    assert "``" not in helped.stdout


def test_live_checks_each_step_on_the_screen_as_it_is(tmp_path: Path) -> None:
    from askcache.testing import TkFormApp, VirtualDisplay
    from askcache.tools.desktop import DesktopBackend

    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    cache = tmp_path / "cache"
    settings = CachingSettings(
        strategy="record",
        cache_dir=cache,
        writing_settings=CacheWritingSettings(filename="form.json"),
    )
    with VirtualDisplay(1280, 800) as screen, MessagesApiStandIn(script) as api:
        backend = DesktopBackend(screen.display)
        try:
            with TkFormApp(screen.display, tmp_path / "state.json") as app:
                tool = ComputerTool(backend, settle_delay=0.3)
                script.app, script.to_model = app, tool.from_screen
                recorded = Agent(api.client(), [tool], model="claude-test").act(GOAL, settings)
                assert recorded.status == "done"
        finally:
            backend.close()
        with TkFormApp(screen.display, tmp_path / "state.json") as app:  # drawn once started
            done = _run(
                "report", "form", "--cache-dir", str(cache), "--display", screen.display,
                "--output", str(tmp_path / "live.html"), "--json",
            )  # fmt: skip
            dry = _run("replay", "form", "--dry-run", "--cache-dir", str(cache),
                       "--display", screen.display)  # fmt: skip
            dry_json = _run("replay", "form", "--dry-run", "--cache-dir", str(cache),
                            "--display", screen.display, "--json")  # fmt: skip
            assert app.settled()["saved"] == []  # nothing was clicked or typed
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["checked_on"] == f"the live screen of {screen.display}"
    # the live screen is the one before the first click; the typing's and the Save click's
    # screens appear only once the steps before them act, which a dry run never does
    assert summary["would_stop_at"] is None
    assert (summary["checked_steps"], summary["unchecked_steps"]) == (1, [2, 3])
    page = (tmp_path / "live.html").read_text()
    assert re.search(r"<tr class='ok'><td>1</td>", page)
    assert len(_images(page, "region with the action point")) == 1
    assert "not confirmed: step(s) 2, 3 were not checked" in page
    # the same with replay --dry-run: exit 1 (not confirmed), each unchecked step said so
    assert dry.returncode == 1, dry.stderr
    lines = dry.stdout.splitlines()
    assert lines[0].split() == ["1", "left_click", "would", "run", "(checked", "on", "the",
                                "live", "screen)"]  # fmt: skip
    for line, step in zip(lines[1:3], ("2", "3"), strict=True):
        assert line.split()[0] == step
        assert "NOT CHECKED: no screen yet: its screen appears only once step 1 has acted" in line
    assert "would run" not in "".join(lines[1:])
    assert lines[3] == (
        f"form.json: 1 of 3 acting steps checked on the live screen of {screen.display}; not "
        "confirmed: step(s) 2, 3 not checked (no screen for them: give --screenshot STEP=PNG)"
    )
    assert dry_json.returncode == 1
    checked = json.loads(dry_json.stdout)
    assert (checked["checked_steps"], checked["unchecked_steps"]) == ([1], [2, 3])
    assert checked["would_stop_at"] is None
    assert [s["checked_on"] for s in checked["steps"]] == [0, None, None]
    assert [s["validated"] for s in checked["steps"]] == [True, False, False]
