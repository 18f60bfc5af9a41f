"""Window titles are stored without the recording machine's paths, user and host names, and
still tell two windows of one class apart: two real xcalc windows under Xvfb whose titles
differ only in the document's name, as an editor names its windows.

The task is recorded on one of them (``beta``) through the real ``anthropic`` client and the
local stand-in; the replay runs with the two windows swapped. Where each replayed click landed
is judged against where the two calculators' keys really are (as the X server lists them),
and what each calculator shows is read back from the screen.
"""

from __future__ import annotations

import getpass
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from bench.faults import CALC_GOAL, CALC_KEYS, Witness

from askcache import ActResult, Agent, CacheWritingSettings, CachingSettings
from askcache.foundation.actions import Action
from askcache.foundation.geometry import Box
from askcache.foundation.messages import ToolUseBlockParam
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import (
    MessagesApiStandIn,
    VirtualDisplay,
    run_on_display,
    text_reply,
    tool_use_reply,
)
from askcache.tools.desktop import DesktopBackend

pytestmark = pytest.mark.integration

SCREEN = (1280, 800)
SIZE = (260, 360)
LEFT, RIGHT = (40, 100), (900, 100)
"""Where the two windows go: the pointer, at the screen's centre when a display starts, over
neither (xcalc outlines the key under the pointer)."""
DISPLAY_BOX = (5, 5, 255, 45)
"""xcalc's display, relative to its window."""
USER, HOST = getpass.getuser(), socket.gethostname()
HOME = str(Path.home())


def _title(document: str) -> str:
    """An editor's title for ``document``: its full path under the home folder, and who
    edits it where."""
    return f"{HOME}/docs/{document} - Editor ({USER}@{HOST})"


@contextmanager
def _calculators(places: dict[str, tuple[int, int]]) -> Iterator[tuple[str, DesktopBackend]]:
    """xcalc windows titled after the documents in ``places``, each at its place."""
    with VirtualDisplay(*SCREEN) as screen, ExitStack() as stack:
        for document, at in places.items():
            geometry = f"{SIZE[0]}x{SIZE[1]}+{at[0]}+{at[1]}"
            stack.enter_context(
                run_on_display(
                    screen.display, "xcalc", "-geometry", geometry, "-title", _title(document)
                )
            )
        backend = DesktopBackend(screen.display)
        try:
            yield screen.display, backend
        finally:
            backend.close()


def _keys(display: str, at: tuple[int, int]) -> list[Box]:
    """The 55 keys of the xcalc window at ``at``, in app-defaults order, as screen boxes."""
    text = subprocess.run(
        ["xwininfo", "-root", "-tree"],
        env={"DISPLAY": display, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    boxes = []
    for match in re.finditer(r"(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)", text):
        width, height, x, y = (int(v) for v in match.groups())
        inside = at[0] <= x < at[0] + SIZE[0] and at[1] <= y < at[1] + SIZE[1]
        if 40 < width < 60 and 15 < height < 30 and inside:
            boxes.append((x, y, x + width, y + height))
    assert len(boxes) == 55, boxes
    return sorted(boxes, key=lambda b: (b[1], b[0]))


def _center(box: Box) -> list[int]:
    return [(box[0] + box[2]) // 2, (box[1] + box[3]) // 2]


def _inside(point: tuple[int, int], box: Box) -> bool:
    return box[0] <= point[0] < box[2] and box[1] <= point[1] < box[3]


def _shown(backend: DesktopBackend, at: tuple[int, int]) -> bytes:
    left, top, right, bottom = DISPLAY_BOX
    box = (left + at[0], top + at[1], right + at[0], bottom + at[1])
    return backend.screenshot().crop(box).tobytes()


def _settings(cache: Path, strategy: str) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache,
        writing_settings=CacheWritingSettings(filename="xcalc.json"),
    )


def _record(cache: Path) -> bytes:
    """12+30= clicked on beta's keys, beta on the left and alpha on the right; returns what
    beta's display shows at the end."""
    with _calculators({"beta.txt": LEFT, "alpha.txt": RIGHT}) as (display, backend):
        keys = _keys(display, LEFT)
        script: list[Any] = [tool_use_reply("computer", {"action": "screenshot"})]
        script += [
            tool_use_reply("computer", {"action": "left_click", "coordinate": _center(keys[n - 1])})
            for n in CALC_KEYS
        ]
        script.append(text_reply("12 + 30 = 42"))
        with MessagesApiStandIn(script) as api:
            result = Agent(api.client(), [Witness(backend)], model="claude-test").act(
                CALC_GOAL, _settings(cache, "record")
            )
        assert result.status == "done"
        untouched = _shown(backend, RIGHT)
        return _differing(backend, LEFT, untouched)


def _differing(backend: DesktopBackend, at: tuple[int, int], other: bytes) -> bytes:
    """The display at ``at`` once it differs from ``other`` (xcalc draws the result after
    the click returned); the timeout only guards against one that never does."""
    deadline = time.monotonic() + 60
    shown = _shown(backend, at)
    while shown == other and time.monotonic() < deadline:
        time.sleep(0.05)
        shown = _shown(backend, at)
    return shown


def _replay(cache: Path) -> tuple[ActResult, list[str], bytes, bytes]:
    """Replay with the windows swapped: alpha on the left, beta on the right. Returns the
    result, where each replayed click landed (``beta 47``, ``alpha 47`` or ``off``), and
    what beta's and alpha's displays show."""
    with _calculators({"alpha.txt": LEFT, "beta.txt": RIGHT}) as (display, backend):
        keys = {"alpha": _keys(display, LEFT), "beta": _keys(display, RIGHT)}
        tool = Witness(backend)
        landed: list[str] = []

        def judge(block: ToolUseBlockParam, action: Action) -> None:
            if block.replayed and action.point is not None:
                point = tool.to_screen(action.point)
                hits = [
                    f"{name} {n}"
                    for name, boxes in keys.items()
                    for n, box in enumerate(boxes, 1)
                    if _inside(point, box)
                ]
                landed.append(hits[0] if hits else "off")

        tool.before = judge
        stop = text_reply("The calculator does not look as expected; I stop here.")
        with MessagesApiStandIn([stop]) as api:
            result = Agent(api.client(), [tool], model="claude-test").act(
                CALC_GOAL, _settings(cache, "execute")
            )
        alpha = _shown(backend, LEFT)
        return result, landed, _differing(backend, RIGHT, alpha), alpha


def test_a_stored_title_holds_no_path_user_or_host_and_finds_its_window_of_two(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    recorded = _record(cache)
    text = (cache / "xcalc.json").read_text()
    steps = load_cache_file(LocalCacheStorage(cache), "xcalc.json").trajectory
    clicks = [step for step in steps if step.input.get("action") == "left_click"]
    assert len(clicks) == len(CALC_KEYS)
    titles = {step.window.title for step in clicks if step.window is not None}
    assert titles == {"beta.txt - Editor (<user>@<host>)"}
    assert {step.window.wm_class for step in clicks if step.window is not None} == {"XCalc"}
    for machine in (HOME, "/root", f"{USER}@", f"@{HOST}", "docs/"):
        assert machine not in text, machine

    result, landed, beta, alpha = _replay(cache)
    assert result.model_calls == 0
    assert result.replay is not None
    assert result.replay.validated == len(CALC_KEYS)
    assert landed == [f"beta {n}" for n in CALC_KEYS]  # every click on beta, none on alpha
    assert beta == recorded  # 42, as when recorded
    assert alpha != recorded
