"""Real desktop: Xvfb, real applications, pyautogui and mss, the real anthropic client.

Each test starts its own Xvfb server(s). The model is a scripted stand-in served over HTTP
on 127.0.0.1; what the applications did is read from the applications themselves (the Tk
form's published state, xcalc's display).
"""

from __future__ import annotations

import importlib.util
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from askcache import (
    ActResult,
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.fingerprint.step import compute_hash, hamming_distance
from askcache.replay.screens import POLL_SECONDS
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    SimulatedFormApp,
    TkFormApp,
    VirtualDisplay,
    run_on_display,
    text_reply,
    tool_use_reply,
)
from askcache.testing.simulated import Layout
from askcache.testing.xvfb import accepts_connections
from askcache.tools.desktop import DesktopBackend

pytestmark = pytest.mark.integration

GOAL = "Type Ada Lovelace into the Name field and press Save"
ADA = [{"name": "Ada Lovelace", "email": ""}]


@contextmanager
def desktop(width: int, height: int) -> Iterator[tuple[str, DesktopBackend]]:
    with VirtualDisplay(width, height) as screen:
        backend = DesktopBackend(screen.display)
        try:
            yield screen.display, backend
        finally:
            backend.close()


def _settings(cache_dir: Path, strategy: str, **writing: Any) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(filename="form.json", **writing),
        execution_settings=CacheExecutionSettings(),
    )


def _act(
    api: MessagesApiStandIn,
    script: FormFillingScript,
    screen: tuple[str, DesktopBackend],
    tmp: Path,
    strategy: str,
    *,
    layout: Layout = "original",
    zoom: float = 1.0,
    writing: dict[str, Any] | None = None,
    save_label: str = "Save",
) -> tuple[ActResult, list[dict[str, str]], dict[str, str]]:
    display, backend = screen
    with TkFormApp(
        display,
        tmp / "state.json",
        layout=layout,
        zoom=zoom,
        extra_args=["--save-label", save_label],
    ) as app:
        tool = ComputerTool(backend, settle_delay=0.3)
        script.app, script.to_model = app, tool.from_screen
        result = Agent(api.client(), [tool], model="claude-test").act(
            GOAL, _settings(tmp / "cache", strategy, **(writing or {}))
        )
        state = app.settled()  # every input handled
        return result, state["saved"], state["values"]


def test_tk_form_record_replay_and_hand_back(tmp_path: Path) -> None:
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with MessagesApiStandIn(script) as api, desktop(1280, 800) as screen:
        recorded, saved, _ = _act(api, script, screen, tmp_path, "record")
        assert recorded.status == "done"
        assert saved == ADA
        assert len(api.requests) == 5
        cache_file = load_cache_file(LocalCacheStorage(tmp_path / "cache"), "form.json")
        assert [step.visual_representation is not None for step in cache_file.trajectory] == [
            False,
            True,
            True,
            True,
        ]
        assert cache_file.metadata.coordinate_space is not None
        assert str(cache_file.metadata.coordinate_space) == "1280x800"

        replayed, saved, _ = _act(api, script, screen, tmp_path, "execute")
        assert replayed.model_calls == 0
        assert len(api.requests) == 5
        assert replayed.replay.status == "completed"
        assert saved == ADA

        changed, saved, _ = _act(api, script, screen, tmp_path, "execute", layout="banner")
        assert changed.replay.status == "handed_back"
        assert changed.replay.stopped_at_step == 1
        assert changed.model_calls == 5
        assert saved == ADA
        assert api.rejected == []


def test_tk_form_heals_after_the_layout_changed_and_then_replays_with_no_model_call(
    tmp_path: Path,
) -> None:
    # The goal: recorded on the original layout, then 10 runs on the banner layout
    # with strategy "auto": run 1 hands back and heals; runs 2-10 use 0 model calls.
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with MessagesApiStandIn(script) as api, desktop(1280, 800) as screen:
        _, saved, _ = _act(api, script, screen, tmp_path, "record")
        assert saved == ADA
        calls, heals = [], []
        for _ in range(10):
            result, saved, _ = _act(api, script, screen, tmp_path, "auto", layout="banner")
            assert result.status == "done"
            assert saved == ADA  # the app saved the right value, every run
            calls.append(result.model_calls)
            heals.append(result.heal.event if result.heal else None)
        assert calls[0] == 5
        assert calls[1:] == [0] * 9
        assert heals == ["healed"] + [None] * 9
        assert result.replay is not None
        assert result.replay.status == "completed"
        assert api.rejected == []


def test_tk_form_a_failed_fix_changes_nothing_and_an_alternating_banner_costs_one_heal(
    tmp_path: Path,
) -> None:
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    gives_up = [False]

    def model(request: dict[str, Any]) -> Any:
        return text_reply("I cannot find the field.") if gives_up[0] else script(request)

    with MessagesApiStandIn(model) as api, desktop(1280, 800) as screen:
        _act(api, script, screen, tmp_path, "record")
        storage = LocalCacheStorage(tmp_path / "cache")
        recorded = storage.read("form.json")
        gives_up[0] = True
        failed, saved, _ = _act(api, script, screen, tmp_path, "auto", layout="banner")
        assert failed.replay is not None
        assert failed.replay.status == "handed_back"
        assert failed.heal is None
        assert saved == []
        assert storage.read("form.json") == recorded  # byte for byte
        gives_up[0] = False
        calls = []
        for layout in ["banner", "original"] * 3:
            result, saved, _ = _act(api, script, screen, tmp_path, "auto", layout=layout)
            assert saved == ADA
            calls.append(result.model_calls)
        assert calls == [5, 0, 0, 0, 0, 0]
        assert result.replay is not None
        assert result.replay.variants_used != []  # the original layout takes the old way


def _record(tmp_path: Path, **writing: Any) -> None:
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with MessagesApiStandIn(script) as api, desktop(1280, 800) as screen:
        _act(api, script, screen, tmp_path, "record", writing=writing)


FORGIVING = {
    "visual_validation_other_density_threshold": 22,
    "visual_validation_other_density_region_size": 48,
}
"""The looser hash for other pixel densities (docs/caching.md, "Rescaled screens"): more such
screens replay, and some relabels there go through."""


@pytest.mark.parametrize(("size", "zoom"), [((1920, 1200), 1.5), ((1024, 640), 0.8)])
def test_same_aspect_ratio_on_another_screen_size_replays_rescaled_when_recorded_forgiving(
    tmp_path: Path, size: tuple[int, int], zoom: float
) -> None:
    # The rescaled screenshots tell the replay that the form is drawn at another pixel
    # density, so each step is checked with the hash for that, here the forgiving one.
    _record(tmp_path, **FORGIVING)
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with MessagesApiStandIn([]) as api, desktop(*size) as screen:
        replayed, saved, _ = _act(api, script, screen, tmp_path, "execute", zoom=zoom)
        assert replayed.replay.status == "completed", replayed.replay.reason
        assert replayed.model_calls == 0
        assert saved == ADA
        checked = [s for s in replayed.replay.steps if s.validated]
        assert all("another pixel density (16x16 hash, 48 px" in (s.note or "") for s in checked)


@pytest.mark.parametrize(("size", "zoom"), [((1920, 1200), 1.5), ((1024, 640), 0.8)])
def test_with_the_defaults_a_rescaled_tk_form_hands_back_and_the_model_finishes(
    tmp_path: Path, size: tuple[int, int], zoom: float
) -> None:
    # The default hash for other densities is strict (it catches every relabel of the
    # benchmark's tuning split): the Tk form re-rendered at 1.5x or 0.8x is not forgiven by
    # the pixels alone (recorded without elements: with them, see the next test).
    _record(tmp_path, record_elements=False)
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with MessagesApiStandIn(script) as api, desktop(*size) as screen:
        replayed, saved, _ = _act(api, script, screen, tmp_path, "execute", zoom=zoom)
        assert replayed.replay is not None
        assert replayed.replay.status == "handed_back"
        assert re.search(
            r"detail for another pixel density \(16x16 hash, 64 px, noise floor 500\): "
            r"distance \d+ > threshold 8",
            replayed.replay.reason or "",
        ), replayed.replay.reason
        assert replayed.model_calls > 0
        assert saved == ADA


def test_a_hidpi_screen_replays_with_the_defaults_and_a_relabel_there_hands_back(
    tmp_path: Path,
) -> None:
    # Recorded on a 1280x800 display; replayed on a 2560x1600 one with the form drawn at 2x.
    # ComputerTool sends both as 1280x800 screenshots: only the display size tells the
    # replay that the text is drawn at another pixel density.
    _record(tmp_path)
    recorded = load_cache_file(LocalCacheStorage(tmp_path / "cache"), "form.json")
    assert str(recorded.metadata.display_size) == "1280x800"
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with MessagesApiStandIn(script) as api, desktop(2560, 1600) as screen:
        replayed, saved, _ = _act(api, script, screen, tmp_path, "execute", zoom=2.0)
        assert replayed.replay is not None
        assert replayed.replay.status == "completed", replayed.replay.reason
        assert replayed.model_calls == 0
        assert saved == ADA
        checked = [s for s in replayed.replay.steps if s.validated]
        assert checked
        assert all("detail for another pixel density" in (s.note or "") for s in checked)
        relabelled, _, _ = _act(
            api, script, screen, tmp_path, "execute", zoom=2.0, save_label="Open"
        )
        assert relabelled.replay is not None
        assert relabelled.replay.status == "handed_back"
        assert relabelled.replay.stopped_at_step == 3  # at the button, before clicking it
        assert relabelled.model_calls > 0


def test_a_relabelled_button_on_a_rescaled_screen_hands_back_even_when_forgiving(
    tmp_path: Path,
) -> None:
    _record(tmp_path, **FORGIVING)
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with MessagesApiStandIn(script) as api, desktop(1920, 1200) as screen:
        replayed, _, _ = _act(api, script, screen, tmp_path, "execute", zoom=1.5, save_label="Open")
        assert replayed.replay is not None
        assert replayed.replay.status == "handed_back"
        assert replayed.replay.stopped_at_step == 3  # the click on the button, not before
        assert replayed.replay.steps_run == 3
        reason = replayed.replay.reason or ""
        assert "detail for another pixel density (16x16 hash, 48 px, noise floor 500)" in reason
        assert replayed.model_calls > 0


def test_with_the_defaults_a_rescaled_tk_form_replays_by_its_labels_on_first_sight(
    tmp_path: Path,
) -> None:
    # No accessibility in Tk: at 1.5x each click's label reads as recorded and its look passes
    # (askcache.replay.element_check), so the re-drawn form is replayed with no model call.
    _record(tmp_path)
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with MessagesApiStandIn([]) as api, desktop(1920, 1200) as screen:
        replayed, saved, _ = _act(api, script, screen, tmp_path, "execute", zoom=1.5)
        assert replayed.replay is not None
        assert replayed.model_calls == 0, replayed.replay.reason
        assert saved == ADA
        assert "label+look" in {step.decided_by for step in replayed.replay.steps}


def test_with_the_format_2_detail_hash_a_rescaled_real_app_hands_back_and_the_model_finishes(
    tmp_path: Path,
) -> None:
    # the format-2 check: an unblurred detail hash with threshold 14, no tone, no target
    _record(
        tmp_path,
        visual_validation_detail_blur=0.0,
        visual_validation_detail_threshold=14,
        visual_validation_tone=False,
        visual_validation_target=False,
        visual_validation_noise_floor=0.0,
        visual_validation_detail_noise_floor=0.0,
        visual_validation_other_density_threshold=None,
        record_elements=False,  # the pixels alone
    )
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with MessagesApiStandIn(script) as api, desktop(1920, 1200) as screen:
        replayed, saved, _ = _act(api, script, screen, tmp_path, "execute", zoom=1.5)
        assert replayed.replay.status == "handed_back"
        # The main hash accepts the rescaled screen; the detail hash sees the re-rendered text.
        reason = replayed.replay.reason or ""
        detail = reason.split("detail (16x16 hash, 48 px): ")[1]
        assert detail.split(";")[0].rstrip(")").endswith("> threshold 14")
        assert replayed.replay.steps[-1].distance is not None
        assert replayed.replay.steps[-1].distance <= 2
        assert replayed.model_calls > 0
        assert saved == ADA


def test_other_aspect_ratio_hands_back_without_clicking(tmp_path: Path) -> None:
    _record(tmp_path)
    with (
        MessagesApiStandIn([text_reply("The form looks different; stopping.")]) as api,
        desktop(1024, 768) as (display, backend),
        TkFormApp(display, tmp_path / "state.json") as app,
    ):
        tool = ComputerTool(backend, settle_delay=0.3)
        result = Agent(api.client(), [tool], model="claude-test").act(
            GOAL, _settings(tmp_path / "cache", "execute")
        )
        assert len(api.requests) == 1  # the model was asked once, after the hand-back
        assert result.replay is not None
        assert result.replay.stopped_at_step == 1
        assert "1024x768 but the trajectory was recorded at 1280x800, another aspect ratio" in (
            result.replay.reason or ""
        )
        state = app.settled()
        assert state["values"] == {"name": "", "email": ""}
        assert state["focus"] is None


XCALC_DISPLAY = (130, 30)  # the calculator's display, in a 260x360 window at the origin
XCALC_DISPLAY_BOX = (5, 5, 255, 45)


def xcalc(display: str) -> AbstractContextManager[None]:
    return run_on_display(display, "xcalc", "-geometry", "260x360+0+0")


def _display_digits(tool: ComputerTool) -> Image.Image:
    return tool.capture().crop(XCALC_DISPLAY_BOX)


def test_xcalc_calculation_is_recorded_replayed_and_shows_the_result(tmp_path: Path) -> None:
    script = [
        tool_use_reply("computer", {"action": "screenshot"}),
        tool_use_reply("computer", {"action": "left_click", "coordinate": list(XCALC_DISPLAY)}),
        tool_use_reply("computer", {"action": "type", "text": "12+30="}),
        text_reply("12 + 30 = 42"),
    ]

    def settings(strategy: str) -> CachingSettings:
        return CachingSettings(
            strategy=strategy,
            cache_dir=tmp_path,
            writing_settings=CacheWritingSettings(filename="xcalc.json"),
        )  # type: ignore[arg-type]

    with MessagesApiStandIn(script) as api, desktop(1280, 800) as (display, backend):
        tool = ComputerTool(backend, settle_delay=0.3)
        with xcalc(display):
            recorded = Agent(api.client(), [tool], model="claude-test").act(
                "Compute 12+30 in xcalc", settings("record")
            )
            assert recorded.status == "done"
            after_recording = _display_digits(tool)
        with xcalc(display):  # the expected result, typed directly
            backend.move(XCALC_DISPLAY)
            backend.type_text("42")
            time.sleep(0.3)
            expected = _display_digits(tool)
        with xcalc(display):
            replayed = Agent(api.client(), [tool], model="claude-test").act(
                "Compute 12+30 in xcalc", settings("execute")
            )
            time.sleep(0.3)
            shown = _display_digits(tool)
        assert replayed.model_calls == 0
        assert replayed.replay is not None
        assert (replayed.replay.status, replayed.replay.validated) == ("completed", 2)
        assert len(api.requests) == 4
    assert (
        hamming_distance(compute_hash(shown, "phash", 16), compute_hash(expected, "phash", 16)) == 0
    )
    assert shown.tobytes() == expected.tobytes()
    assert after_recording.tobytes() == expected.tobytes()


def _example(name: str) -> Any:
    path = Path(__file__).parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_examples_record_replay_and_tune_on_a_real_display(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    with desktop(1280, 800) as (display, _):
        with (
            TkFormApp(display, tmp_path / "state.json") as app,
            MessagesApiStandIn(FormFillingScript(app, "Ada Lovelace")) as api,
        ):
            code = _example("record").main(
                [
                    "Save the contact Ada Lovelace",
                    "--filename",
                    "contact.json",
                    "--cache-dir",
                    cache,
                    "--display",
                    display,
                    "--param",
                    "who=Ada Lovelace",
                ],
                client=api.client(),
            )
            assert code == 0
            assert app.settled()["saved"] == ADA
        assert (
            load_cache_file(LocalCacheStorage(cache), "contact.json").metadata.goal
            == "Save the contact {{who}}"
        )

        with TkFormApp(display, tmp_path / "state.json") as app, MessagesApiStandIn([]) as api:
            code = _example("replay").main(
                [
                    "contact.json",
                    "--cache-dir",
                    cache,
                    "--display",
                    display,
                    "--param",
                    "who=Grace Hopper",
                ],
                client=api.client(),
            )
            assert code == 0
            assert app.settled()["saved"] == [{"name": "Grace Hopper", "email": ""}]
            assert api.requests == []

        with TkFormApp(display, tmp_path / "state.json"):
            tune = _example("tune_thresholds")
            assert (
                tune.main(
                    [
                        "contact.json",
                        "--cache-dir",
                        cache,
                        "--runs",
                        "1",
                        "--write",
                        "--display",
                        display,
                        "--param",
                        "who=Tune Test",
                    ]
                )
                == 0
            )
    visual = load_cache_file(LocalCacheStorage(cache), "contact.json").metadata.visual_validation
    assert visual is not None
    assert 2 <= visual.threshold <= 31
    assert visual.detail is not None
    assert 2 <= visual.detail.threshold <= 127
    assert tune.suggest_threshold([0, 3, 1], 64) == 5
    assert tune.suggest_threshold([40], 64) == 31


def test_tk_form_variants_used_by_the_accuracy_benchmark(tmp_path: Path) -> None:
    with desktop(1280, 800) as (display, backend):
        with TkFormApp(display, tmp_path / "state.json") as app:
            plain = ComputerTool(backend).capture()
            assert "save" in app.state()["widgets"]
        with TkFormApp(
            display, tmp_path / "state.json", extra_args=["--hide-save", "--status", "Saved Grace"]
        ) as app:
            hidden = ComputerTool(backend).capture()
            state = app.state()
        assert "save" not in state["widgets"]
        assert state["status"] == "Saved Grace"
        with TkFormApp(display, tmp_path / "state.json", extra_args=["--save-label", "Open"]):
            relabelled = ComputerTool(backend).capture()
    save_box = (60, 210, 170, 250)
    assert plain.crop(save_box).tobytes() != hidden.crop(save_box).tobytes()
    assert plain.crop(save_box).tobytes() != relabelled.crop(save_box).tobytes()
    assert (
        plain.crop((600, 0, 1280, 800)).tobytes() == relabelled.crop((600, 0, 1280, 800)).tobytes()
    )


def test_a_display_counts_as_reachable_only_when_its_server_answers(tmp_path: Path) -> None:
    with VirtualDisplay(640, 480) as screen:
        assert accepts_connections(screen.display)
        assert accepts_connections(f"{screen.display}.0")
    # the socket file of a stopped server may linger; a file that answers nothing is not a
    # display (a number far above those Xvfb picks, so no other test's server is touched)
    number = next(
        n
        for n in range(900, 1000)
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists()
    )
    stale = Path(f"/tmp/.X11-unix/X{number}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(stale))
    listener.close()  # bound and closed: the file stays, nobody listens
    try:
        assert not accepts_connections(f":{number}")
    finally:
        stale.unlink(missing_ok=True)
    assert not accepts_connections("otherhost:0")
    assert not accepts_connections("")


def test_a_replay_sleeps_only_to_watch_the_screen_and_leaves_pyautogui_as_the_user_set_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No fixed sleep in a replayed step (pyautogui's pause, a click interval, a delay):
    every sleep of the replaying thread is one of the replay's looks at the screen. And
    pyautogui's settings, which the user's own code may rely on, are as the user set them
    before the desktop backend was made."""
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    with MessagesApiStandIn(script) as api, desktop(1280, 800) as (display, recorder):
        _act(api, script, (display, recorder), tmp_path, "record")
        import pyautogui

        monkeypatch.setattr(pyautogui, "PAUSE", 0.25)
        monkeypatch.setattr(pyautogui, "FAILSAFE", True)
        users_connection = pyautogui._pyautogui_x11._display
        backend = DesktopBackend(display)
        sleeps: list[tuple[float, bool]] = []  # (seconds, one of the replay's looks)
        watching = threading.local()
        recording = threading.Event()
        replaying = threading.get_ident()

        def audit(event: str, args: tuple[Any, ...]) -> None:  # a hook stays: it is gated
            if event == "time.sleep" and recording.is_set() and threading.get_ident() == replaying:
                sleeps.append((float(args[0]), getattr(watching, "now", False)))

        def watch(seconds: float) -> None:
            watching.now = True
            try:
                time.sleep(seconds)
            finally:
                watching.now = False

        sys.addaudithook(audit)
        try:
            with TkFormApp(display, tmp_path / "state.json") as app:
                tool = ComputerTool(backend, settle_delay=0.3)
                script.app, script.to_model = app, tool.from_screen
                agent = Agent(api.client(), [tool], model="claude-test", sleep=watch)
                recording.set()
                try:
                    replayed = agent.act(GOAL, _settings(tmp_path / "cache", "execute"))
                finally:
                    recording.clear()
                assert app.settled()["saved"] == ADA
        finally:
            backend.close()
        assert replayed.replay is not None
        assert replayed.replay.status == "completed"
        assert replayed.model_calls == 0
        fixed = [seconds for seconds, watched in sleeps if seconds > 0 and not watched]
        assert fixed == []
        assert all(0 < seconds <= POLL_SECONDS for seconds, watched in sleeps if watched)
        assert pyautogui.PAUSE == 0.25
        assert pyautogui.FAILSAFE is True
        assert pyautogui._pyautogui_x11._display is users_connection
