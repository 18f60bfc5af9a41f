"""A screenshot from outside that declares a huge image (a 170 KB PNG of 13370 x 13370 pixels)
is refused before it is decoded, with one line naming it and askcache's pixel limit, and no
warning of Pillow's: given to the command (``replay --dry-run --screenshot``, ``report
--screenshots``, ``tune --run``), returned by a computer tool to askcache's own Agent, and
handed to the replay in the user's own loop; ``parity`` says it could not compare."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from askcache import Agent, CacheExecutionSettings, CacheWritingSettings, CachingSettings
from askcache.foundation.errors import ScreenshotTooLargeError
from askcache.foundation.limits import MAX_IMAGE_PIXELS
from askcache.foundation.messages import Base64ImageSource, ImageBlockParam, TextBlockParam
from askcache.loop import NotAScreenshotError
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.tools import ComputerTool, ToolOutput
from tests.helpers import record_form
from tests.huge_image import HUGE_SIDE, huge_png
from tests.integration.test_own_loop import _replay, _run

pytestmark = pytest.mark.integration

SIZE = f"{HUGE_SIDE}x{HUGE_SIDE} pixels"
LIMIT = f"more than the {MAX_IMAGE_PIXELS:,} askcache decodes (askcache.foundation.limits.MAX_IMAGE_PIXELS)"


@pytest.fixture(scope="module")
def huge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("huge") / "huge.png"
    path.write_bytes(huge_png())
    assert path.stat().st_size < 1_000_000
    return path


@pytest.fixture
def no_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Every warning raised in the test, kept instead of raised: the test asserts there is none
    (Pillow's DecompressionBombWarning above all)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    assert [str(w.message) for w in caught] == []


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "askcache.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "default"},
    )


@pytest.mark.parametrize("command", ["replay --dry-run --screenshot", "report", "tune --run"])
def test_the_command_refuses_a_huge_image_in_one_line(
    tmp_path: Path, huge: Path, command: str
) -> None:
    cache = tmp_path / "cache"
    record_form(LocalCacheStorage(cache), "form.json")
    folder = tmp_path / "run"
    folder.mkdir()
    where = {"report": "1.png", "tune --run": "step-1.png"}.get(command)
    shot = huge if where is None else folder / where
    if where is not None:
        shot.write_bytes(huge.read_bytes())
    argv = {
        "replay --dry-run --screenshot": ["replay", "form", "--dry-run", "--screenshot", str(shot)],
        "report": [
            "report",
            "form",
            "--screenshots",
            str(folder),
            "--output",
            str(tmp_path / "report.html"),
        ],
        "tune --run": ["tune", "form", "--run", str(folder), "--check"],
    }[command]
    done = _cli(*argv, "--cache-dir", str(cache))
    assert done.returncode == 3, done.stderr
    assert done.stderr == f"askcache: error: screenshot in {shot} is {SIZE}, {LIMIT}\n"
    assert done.stdout == ""


def test_parity_reports_a_huge_image_as_the_one_line_it_could_not_compare(
    tmp_path: Path, huge: Path
) -> None:
    done = _cli("parity", str(huge), str(huge), "--output", str(tmp_path / "parity"))
    assert done.returncode == 2, done.stderr
    assert f"source {huge}: screenshot in {huge} is {SIZE}, {LIMIT}\n" in done.stdout
    assert done.stderr == ""


def test_a_computer_tool_returning_a_huge_screenshot_hands_back_naming_the_limit(
    tmp_path: Path, huge: Path, no_warnings: list[warnings.WarningMessage]
) -> None:
    data = base64.b64encode(huge.read_bytes()).decode("ascii")

    class HugeScreenshots(ComputerTool):
        """A computer tool whose every screenshot is the huge PNG."""

        def observe(self, summary: str) -> ToolOutput:
            image = ImageBlockParam(source=Base64ImageSource(data=data))
            return ToolOutput([TextBlockParam(text=summary), image])

    def settings(strategy: str) -> CachingSettings:
        return CachingSettings(
            strategy=strategy,  # type: ignore[arg-type]
            cache_dir=tmp_path,
            writing_settings=CacheWritingSettings(filename="form.json"),
            execution_settings=CacheExecutionSettings(delay_time_between_action=0),
        )

    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace")
    goal = "Type Ada Lovelace into the Name field and press Save"
    with MessagesApiStandIn(script) as api:
        agent = Agent(api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None)
        assert agent.act(goal, settings("record")).status == "done"
        script.app = replay_app = SimulatedFormApp()
        tool = HugeScreenshots(replay_app)
        agent = Agent(api.client(), [tool], model="claude-test", sleep=lambda s: None)
        result = agent.act(goal, settings("execute"))
    assert result.replay is not None
    assert result.replay.status == "handed_back"
    assert result.replay.reason == (
        f"the screen could not be read (ScreenshotTooLargeError: screenshot in the result is "
        f"{SIZE}, {LIMIT})"
    )
    # the model went on; each re-join it offered was refused for the same reason, not raised
    refusals = [d.reason for d in result.replay.rejoin_decisions if d.refused_by == "screen"]
    assert refusals
    assert all(SIZE in reason and LIMIT in reason for reason in refusals)


def test_the_own_loop_refuses_a_huge_screenshot_in_a_tool_result(
    tmp_path: Path, huge: Path, no_warnings: list[warnings.WarningMessage]
) -> None:
    _run(tmp_path, "original", "alice")  # records login.json
    replay = _replay(tmp_path)
    action = replay.next_action()
    assert action is not None
    image = {"type": "base64", "media_type": "image/png", "data": ""}
    image["data"] = base64.b64encode(huge.read_bytes()).decode("ascii")
    result = {
        "type": "tool_result",
        "tool_use_id": action["id"],
        "content": [{"type": "image", "source": image}],
    }
    with pytest.raises(NotAScreenshotError) as raised:
        replay.tool_result(result)
    where = f"the tool result for {action['id']!r}"
    assert str(raised.value) == f"screenshot in {where} is {SIZE}, {LIMIT}"
    assert isinstance(raised.value.__cause__, ScreenshotTooLargeError)
    assert raised.value.__cause__.where == where
    page = (Path(__file__).parents[2] / "docs" / "troubleshooting.md").read_text()
    printed = f"NotAScreenshotError: {raised.value}".replace(repr(action["id"]), "'toolu_…'")
    assert f"**`{printed}`**" in page
