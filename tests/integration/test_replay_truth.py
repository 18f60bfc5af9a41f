"""What a replay says it did is what the screen shows: on the real Tk form under Xvfb.

- A screen profile learned after a hand-back at a late step is built from the screens each
  replayed step really saw (the replay's own looks), not from the screenshots a replayed
  action returns at once; so the next run on that screen replays with no model call,
  whatever ``keep_step_views`` says.
- A replay whose typed text never reached the screen is never ``completed``, with the checks
  on or skipped (``skip_visual_validation``): a backend over the real display swallows the
  keystrokes of one typed parameter.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from askcache import (
    ActResult,
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.foundation.messages import TextBlockParam
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    SimulatedFormApp,
    TkFormApp,
    VirtualDisplay,
)
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


class SwallowsOneTyping(DesktopBackend):
    """The real display, except that the first ``type`` of ``text`` never reaches it (the
    keystrokes are dropped, as on an application that is not listening yet)."""

    def __init__(self, display: str, text: str) -> None:
        super().__init__(display)
        self.text = text
        self.swallowed: list[str] = []

    def type_text(self, text: str) -> None:
        if text == self.text and not self.swallowed:
            self.swallowed.append(text)
            return
        super().type_text(text)


def _drawn(app: TkFormApp) -> None:
    app.current()


def _act(
    api: MessagesApiStandIn,
    script: FormFillingScript,
    screen: tuple[str, DesktopBackend],
    tmp: Path,
    strategy: str,
    *,
    zoom: float = 1.0,
    save_label: str = "Save",
    execution: dict[str, Any] | None = None,
    writing: dict[str, Any] | None = None,
) -> tuple[ActResult, list[dict[str, str]]]:
    display, backend = screen
    with TkFormApp(
        display, tmp / "state.json", zoom=zoom, extra_args=["--save-label", save_label]
    ) as app:
        # the model's actions are answered once the form has drawn them (an event, not a
        # time margin: a loaded machine draws late); the replay's actions are not waited on
        tool = ComputerTool(backend, settle_delay=0.3, sleep=lambda _: _drawn(app))
        script.app, script.to_model = app, tool.from_screen
        result = Agent(api.client(), [tool], model="claude-test").act(
            GOAL,
            CachingSettings(
                strategy=strategy,
                cache_dir=tmp / "cache",
                writing_settings=CacheWritingSettings(filename="form.json", **(writing or {})),
                execution_settings=CacheExecutionSettings(**(execution or {})),
            ),
        )
        return result, app.settled()["saved"]


@pytest.mark.parametrize("keep_step_views", [False, True])
def test_a_screen_learned_after_a_late_hand_back_replays_the_next_time_with_no_model_call(
    tmp_path: Path, keep_step_views: bool
) -> None:
    # Recorded on a 1280x800 display; then a 2560x1600 display with the form drawn at 2x
    # (screenshots still 1280x800) and its Save button relabelled Open: the click on the
    # name field and the typing replay (checked for the other density), the click on Open
    # does not pass its check: a hand-back at step 3 of 3, after two replayed steps. The
    # model clicks Open; the run is kept as the 2x profile's trajectory.
    script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
    # The area check before the typing compares the focused field drawn at 2x with the
    # recording's at 1x, and hands back there now and then (a border and a caret drawn at
    # another width); it is left out so that the hand-back comes at step 3 every time. The
    # other checks are the defaults (and the typing is still checked to have reached the
    # screen), keep_step_views off and on.
    execution = {"keep_step_views": keep_step_views, "check_effects": False}
    with MessagesApiStandIn(script) as api:
        with desktop(1280, 800) as screen:
            _, saved = _act(api, script, screen, tmp_path, "record")
            assert saved == ADA
        storage = LocalCacheStorage(tmp_path / "cache")
        with desktop(2560, 1600) as screen:
            learning, saved = _act(
                api,
                script,
                screen,
                tmp_path,
                "auto",
                zoom=2.0,
                save_label="Open",
                execution=execution,
            )
            assert saved == ADA
            assert learning.replay is not None
            assert learning.replay.learning
            assert learning.replay.handback_steps == [3], learning.replay.reason
            assert learning.heal is not None, "the learning run was not kept"
            assert learning.heal.profile == "1280x800@2x"
            learned = load_cache_file(storage, "form.json").profiles["1280x800@2x"]
            steps = learned.trajectory
            # the screens before the click, the typing and the click on Open differ (the
            # field focused, then filled in), and so do the steps' fingerprints
            fingerprints = [s.visual_representation for s in steps if s.visual_representation]
            assert len(fingerprints) == 3, [s.input for s in steps]
            assert len(set(fingerprints)) == 3, fingerprints
            for step in steps[1:3]:  # the replayed click and typing changed the screen
                assert step.effect is not None, step.input
                assert step.effect.tiles, step.input
            # the next run on that screen: the learned trajectory, no model call
            calls = len(api.requests)
            again, saved = _act(
                api,
                script,
                screen,
                tmp_path,
                "auto",
                zoom=2.0,
                save_label="Open",
                execution=execution,
            )
            assert saved == ADA
            assert again.replay is not None
            assert (again.replay.status, again.model_calls) == ("completed", 0), again.replay.reason
            assert len(api.requests) == calls
            assert again.heal is None


@pytest.mark.parametrize("skip", [False, True], ids=["checked", "checks-skipped"])
def test_a_typed_parameter_that_never_reached_the_screen_is_never_completed(
    tmp_path: Path, skip: bool
) -> None:
    # Recorded with the name as a parameter; replayed with another value, once as it is
    # (the new value draws other pixels where the old one was, and the replay completes) and
    # once on a backend that drops that typing: the replay hands back at the typing step
    # instead of clicking Save on an empty form and calling itself completed.
    grace = [{"name": "Grace Hopper", "email": ""}]
    execution: dict[str, Any] = {
        "skip_visual_validation": skip,
        "parameter_values": {"name": "Grace Hopper"},
    }
    writing = {"parameters": {"name": "Ada Lovelace"}}
    with desktop(1280, 800) as screen:
        script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
        with MessagesApiStandIn(script) as api:
            _, saved = _act(api, script, screen, tmp_path, "record", writing=writing)
        assert saved == ADA
        script = FormFillingScript(SimulatedFormApp(), "Grace Hopper")
        with MessagesApiStandIn(script) as api:
            typed, saved = _act(
                api, script, screen, tmp_path, "execute", execution=execution, writing=writing
            )
            assert typed.replay is not None
            assert (typed.replay.status, typed.model_calls) == ("completed", 0), typed.replay.reason
            assert saved == grace
            assert api.requests == []
        display = screen[0]
        dropping = SwallowsOneTyping(display, "Grace Hopper")
        try:
            with MessagesApiStandIn(script) as api:
                dropped, saved = _act(
                    api,
                    script,
                    (display, dropping),
                    tmp_path,
                    "execute",
                    execution=execution,
                    writing=writing,
                )
        finally:
            dropping.close()
    assert dropping.swallowed == ["Grace Hopper"]
    replay = dropped.replay
    assert replay is not None
    assert replay.handback_steps == [2]  # at the typing, before Save was clicked
    told = [
        block.text
        for message in dropped.conversation.messages
        if message.role == "user" and not isinstance(message.content, str)
        for block in message.content
        if isinstance(block, TextBlockParam)
    ]
    assert any("the typed text never reached the screen" in text for text in told), told
    assert dropped.model_calls > 0
    # the model typed the name; the replay re-joined and saved: the form was never saved
    # empty, and the replay completed only once the text was there
    assert saved == grace


@pytest.mark.parametrize("skip", [False, True], ids=["checked", "checks-skipped"])
@pytest.mark.parametrize("value", ["I", "."])
def test_a_one_character_parameter_replays_with_no_model_call(
    tmp_path: Path, value: str, skip: bool
) -> None:
    # A value that draws no more than a caret's blink (an I, a dot) did reach the screen:
    # the replay of the unchanged form completes, with no needless hand-back.
    writing = {"parameters": {"name": "Ada Lovelace"}}
    execution: dict[str, Any] = {
        "skip_visual_validation": skip,
        "parameter_values": {"name": value},
    }
    with desktop(1280, 800) as screen:
        script = FormFillingScript(SimulatedFormApp(), "Ada Lovelace")
        with MessagesApiStandIn(script) as api:
            _, saved = _act(api, script, screen, tmp_path, "record", writing=writing)
        assert saved == ADA
        script = FormFillingScript(SimulatedFormApp(), value)
        with MessagesApiStandIn(script) as api:
            typed, saved = _act(
                api, script, screen, tmp_path, "execute", execution=execution, writing=writing
            )
            assert typed.replay is not None
            assert (typed.replay.status, typed.model_calls) == ("completed", 0), typed.replay.reason
            assert api.requests == []
        assert saved == [{"name": value, "email": ""}]
