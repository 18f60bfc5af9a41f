"""A window the window manager put elsewhere: the replay finds it and acts on it, on real X
applications under Xvfb (Debian's xcalc, Athena widgets; the Tk form of askcache.testing).

Each case records a task once with the window at one place (through the real ``anthropic``
client and the local stand-in) and replays it with the window started elsewhere. Where each
replayed click landed is judged against where the keys and fields really are at that moment
(xcalc's buttons as the X server lists them, the Tk form's published widget boxes), and what
the application did is read back from it (xcalc's display, the form's saved contact).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from bench.faults import CALC_GOAL, CALC_KEYS, Witness, xcalc_buttons

from askcache import ActResult, Agent, CacheWritingSettings, CachingSettings
from askcache.foundation.actions import Action
from askcache.foundation.geometry import Box
from askcache.foundation.messages import ToolUseBlockParam
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    TkFormApp,
    VirtualDisplay,
    run_on_display,
    text_reply,
    tool_use_reply,
)
from askcache.tools.desktop import DesktopBackend

pytestmark = pytest.mark.integration

SCREEN = (1280, 800)
XCALC_SIZE = (260, 360)
RECORDED_AT = (100, 100)
MOVED_TO = (400, 150)
DISPLAY_BOX = (5, 5, 255, 45)
"""xcalc's display, relative to its window."""


def _settings(cache: Path, strategy: str, filename: str) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache,
        writing_settings=CacheWritingSettings(filename=filename),
    )


@contextmanager
def _desktop() -> Iterator[tuple[str, DesktopBackend]]:
    with VirtualDisplay(*SCREEN) as screen:
        backend = DesktopBackend(screen.display)
        try:
            yield screen.display, backend
        finally:
            backend.close()


def _xcalc(display: str, at: tuple[int, int], *resources: str) -> Any:
    command = ["xcalc", "-geometry", f"{XCALC_SIZE[0]}x{XCALC_SIZE[1]}+{at[0]}+{at[1]}"]
    for resource in resources:
        command += ["-xrm", f"XCalc*ti.{resource}"]
    return run_on_display(display, *command)


def _center(box: Box) -> list[int]:
    return [(box[0] + box[2]) // 2, (box[1] + box[3]) // 2]


def _inside(point: tuple[int, int], box: Box) -> bool:
    return box[0] <= point[0] < box[2] and box[1] <= point[1] < box[3]


def _display(backend: DesktopBackend, at: tuple[int, int]) -> bytes:
    left, top, right, bottom = DISPLAY_BOX
    return (
        backend.screenshot()
        .crop((left + at[0], top + at[1], right + at[0], bottom + at[1]))
        .tobytes()
    )


class Calculator:
    """12+30= clicked on xcalc's keys, recorded once with the window at ``RECORDED_AT``."""

    def __init__(self, folder: Path) -> None:
        self.cache = folder / "cache"
        self.shown = b""
        with _desktop() as (display, backend), _xcalc(display, RECORDED_AT):
            buttons = xcalc_buttons(display)
            script: list[Any] = [tool_use_reply("computer", {"action": "screenshot"})]
            script += [
                tool_use_reply(
                    "computer", {"action": "left_click", "coordinate": _center(buttons[n - 1])}
                )
                for n in CALC_KEYS
            ]
            script.append(text_reply("12 + 30 = 42"))
            with MessagesApiStandIn(script) as api:
                result = Agent(api.client(), [Witness(backend)], model="claude-test").act(
                    CALC_GOAL, _settings(self.cache, "record", "xcalc.json")
                )
            assert result.status == "done"
            time.sleep(0.3)  # the recording's own result, read once for comparison
            self.shown = _display(backend, RECORDED_AT)

    def replay(self, at: tuple[int, int], *resources: str) -> tuple[ActResult, list[str], bytes]:
        """Replay with the window at ``at``; returns the result, where each replayed click
        landed (the key's number, or ``off``) and the display's pixels."""
        with _desktop() as (display, backend), _xcalc(display, at, *resources):
            buttons = xcalc_buttons(display)
            tool = Witness(backend)
            landed: list[str] = []

            def judge(block: ToolUseBlockParam, action: Action) -> None:
                if block.replayed and action.point is not None:
                    point = tool.to_screen(action.point)
                    keys = [n for n, box in enumerate(buttons, 1) if _inside(point, box)]
                    landed.append(str(keys[0]) if keys else "off")

            tool.before = judge
            stop = text_reply("The calculator does not look as expected; I stop here.")
            with MessagesApiStandIn([stop]) as api:
                result = Agent(api.client(), [tool], model="claude-test").act(
                    CALC_GOAL, _settings(self.cache, "execute", "xcalc.json")
                )
            time.sleep(0.3)
            return result, landed, _display(backend, at)


@pytest.fixture(scope="module")
def calculator(tmp_path_factory: pytest.TempPathFactory) -> Calculator:
    return Calculator(tmp_path_factory.mktemp("xcalc"))


def test_recording_stores_the_window_each_click_went_to(calculator: Calculator) -> None:
    stored = load_cache_file(LocalCacheStorage(calculator.cache), "xcalc.json")
    clicks = [step for step in stored.trajectory if step.input.get("action") == "left_click"]
    assert len(clicks) == len(CALC_KEYS)
    for step in clicks:
        assert step.window is not None
        # its client area: inside the 1 px border X draws around a window without a manager
        assert (step.window.x, step.window.y) == (RECORDED_AT[0] + 1, RECORDED_AT[1] + 1)
        assert (step.window.width, step.window.height) == XCALC_SIZE
        assert step.window.wm_class == "XCalc"
        assert step.window.title == "Calculator"


def test_a_moved_window_is_replayed_on_its_keys_with_no_model_call(
    calculator: Calculator,
) -> None:
    result, landed, shown = calculator.replay(MOVED_TO)
    assert result.model_calls == 0
    assert result.replay is not None
    assert (result.replay.status, result.replay.validated) == ("completed", len(CALC_KEYS))
    assert landed == [str(n) for n in CALC_KEYS]  # every click on the intended key
    assert shown == calculator.shown  # 42, as when recorded


def test_a_relabelled_key_on_a_moved_window_is_handed_back_before_it_is_clicked(
    calculator: Calculator,
) -> None:
    result, landed, _ = calculator.replay(MOVED_TO, "button49.label: 7")  # the key 3
    assert result.replay is not None
    assert result.replay.status == "handed_back"
    assert result.replay.stopped_at_step == 1 + CALC_KEYS.index(49)
    assert landed == [str(n) for n in CALC_KEYS[: CALC_KEYS.index(49)]]  # never the 3
    assert result.model_calls == 1


# The Tk form -------------------------------------------------------------------------------

GOAL = "Add the contact Ada Lovelace"


def _form_run(
    folder: Path, strategy: str, position: tuple[int, int], script: Any = None
) -> tuple[ActResult, list[tuple[str | None, str | None]], dict[str, Any]]:
    """Run the form task with the window at ``position``; returns the result, per replayed
    click the widget it landed on and the one the model clicked when recording, and the
    form's final state."""
    with (
        _desktop() as (display, backend),
        TkFormApp(
            display,
            folder / f"state-{strategy}.json",
            extra_args=["--position", *map(str, position)],
        ) as app,
    ):
        tool = Witness(backend)
        landed: list[tuple[str | None, str | None]] = []

        def judge(block: ToolUseBlockParam, action: Action) -> None:
            if block.replayed and action.point is not None:
                point = tool.to_screen(action.point)
                widgets = app.current()["widgets"]
                hit = [name for name, box in widgets.items() if _inside(point, tuple(box))]
                landed.append((hit[0] if hit else None, None))

        tool.before = judge
        chosen = (
            script(app, tool)
            if script is not None
            else FormFillingScript(app, "Ada Lovelace", to_model=tool.from_screen)
        )
        with MessagesApiStandIn(chosen) as api:
            result = Agent(api.client(), [tool], model="claude-test").act(
                GOAL, _settings(folder / "cache", strategy, "form.json")
            )
        return result, landed, app.settled()


def test_a_moved_tk_window_is_replayed_on_its_widgets_with_no_model_call(tmp_path: Path) -> None:
    recorded, _, state = _form_run(tmp_path, "record", (0, 0))
    assert recorded.status == "done"
    assert state["saved"]
    steps = load_cache_file(LocalCacheStorage(tmp_path / "cache"), "form.json").trajectory
    windows = {step.window for step in steps if step.window is not None}
    assert {(w.x, w.y, w.title) for w in windows} == {(0, 0, "Contacts")}

    replayed, landed, state = _form_run(
        tmp_path, "execute", (300, 200), script=lambda app, tool: []
    )
    assert replayed.model_calls == 0
    assert replayed.replay is not None
    assert replayed.replay.status == "completed"
    clicked = [
        step.input["coordinate"] for step in steps if step.input.get("action") == "left_click"
    ]
    assert len(landed) == len(clicked)
    assert all(widget is not None for widget, _ in landed)
    assert [widget for widget, _ in landed] == ["name", "save"]
    assert state["saved"] == [{"name": "Ada Lovelace", "email": ""}]
