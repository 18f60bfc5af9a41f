"""A whole recording and replay on a real GTK 3 form with its accessibility tree: the element
anchors decide what pixels cannot.

Debian's ``yad`` (a form with a Name and an Email field, a Save and a Cancel button) on Xvfb, in
a private accessibility session (:class:`askcache.testing.accessibility.AccessibilitySession`),
driven by :class:`askcache.tools.desktop.DesktopBackend` through the real ``anthropic`` client
talking to the local stand-in of the Messages API. The task is recorded once in GTK's default
theme; then:

- in the dark theme (``GTK_THEME=Adwaita:dark``), the replay runs to its end with no model call:
  the click into the Name field draws a focus ring too faint for its tiles, and its effect is the
  one the field says (it gained the keyboard focus: :func:`askcache.replay.effects.element_effect`);
  the form saves what the recording typed;
- with its Save button relabelled Send, recorded without the detail hash, the replay hands back
  before the button is clicked: the form is still open, nothing saved (the pixels refuse it
  here too: the area the click changed when recorded looks different before it; the tree finds
  no button named Save in the window).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from askcache import ActResult, Agent, CacheWritingSettings, CachingSettings
from askcache.testing import MessagesApiStandIn, VirtualDisplay, text_reply, tool_use_reply
from askcache.testing.accessibility import AccessibilitySession
from askcache.tools.computer import ComputerTool
from askcache.tools.desktop import DesktopBackend

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("yad") is None, reason="yad is not installed (Debian: yad)"),
]

GOAL = "Type Ada Lovelace into the Name field of the Contact form and save it"
NAME, SAVE = (130, 18), (79, 95)
"""The Name field and the Save button, the form at the screen's corner (no window manager)."""
AWAY = (900, 700)
"""Where the pointer is when a form opens: off the form."""
CLICK_NAME, CLICK_SAVE = 1, 3
"""Their steps in the trajectory (step 0 is the first screenshot, step 2 the typing)."""


def _computer(action: str, **fields: Any) -> dict[str, Any]:
    return tool_use_reply("computer", {"action": action, **fields})


SCRIPT = [
    _computer("screenshot"),
    _computer("left_click", coordinate=list(NAME)),
    _computer("type", text="Ada Lovelace"),
    _computer("left_click", coordinate=list(SAVE)),
    text_reply("Saved."),
]


@pytest.fixture(scope="module")
def desktop() -> Iterator[tuple[str, AccessibilitySession]]:
    with (
        VirtualDisplay(1024, 768) as display,
        AccessibilitySession(display.display) as session,
    ):
        yield display.display, session


@contextmanager
def _form(
    desktop: tuple[str, AccessibilitySession], save: str = "Save", **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    """The form, started with the pointer away from it: with no window manager, X gives the
    keyboard focus to the window under the pointer, and the form would open with its Name
    field focused (the click's effect is that it gains the focus)."""
    display, session = desktop
    backend = DesktopBackend(display)
    try:
        backend.move(AWAY)
    finally:
        backend.close()
    with session.launch(
        *_command(save), env=env, ready=lambda frames: ("frame", "Contact") in frames
    ) as form:
        yield form


def _command(save: str) -> tuple[str, ...]:
    return (
        "yad",
        "--form",
        "--title",
        "Contact",
        "--field=Name",
        "--field=Email",
        f"--button={save}:0",
        "--button=Cancel:1",
    )


def _act(
    desktop: tuple[str, AccessibilitySession],
    cache: Path,
    strategy: str,
    script: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    **writing: Any,
) -> ActResult:
    display, session = desktop
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", session.address)  # the backend's tree
    backend = DesktopBackend(display)
    try:
        with MessagesApiStandIn(script) as api:
            agent = Agent(api.client(), [ComputerTool(backend)], model="claude-test")
            settings = CachingSettings(
                strategy=strategy,  # type: ignore[arg-type]
                cache_dir=cache,
                writing_settings=CacheWritingSettings(filename="form.json", **writing),
            )
            return agent.act(GOAL, settings)
    finally:
        backend.close()


def _said(session: AccessibilitySession) -> str:
    """What the last form printed (yad writes the fields on Save: ``Name|Email|``)."""
    assert session.folder is not None
    logs = sorted(session.folder.glob("yad-*.log"), key=lambda p: p.stat().st_mtime_ns)
    return logs[-1].read_text(errors="replace")


def _record(
    desktop: tuple[str, AccessibilitySession],
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    **writing: Any,
) -> None:
    _, session = desktop
    with _form(desktop) as form:
        result = _act(desktop, cache, "record", SCRIPT, monkeypatch, **writing)
        assert result.status == "done"
        assert form.wait(timeout=30) == 0  # Save
    assert "Ada Lovelace|" in _said(session)
    assert (cache / "form.json").exists()


def test_the_dark_theme_replays_with_the_fields_focus_as_the_clicks_effect(
    desktop: tuple[str, AccessibilitySession], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(desktop, tmp_path, monkeypatch)
    _, session = desktop
    stop = [text_reply("The form does not look as expected; I stop here.")]
    with _form(desktop, GTK_THEME="Adwaita:dark") as form:
        result = _act(desktop, tmp_path, "execute", stop, monkeypatch)
        assert result.replay is not None
        assert result.model_calls == 0, result.replay.reason
        # its end screen is drawn otherwise too: "completed_unverified" when it cannot be
        # compared with the recording's
        assert result.replay.status in {"completed", "completed_unverified"}
        assert form.wait(timeout=30) == 0
    assert "Ada Lovelace|" in _said(session)
    records = {r.step_index: r for r in result.replay.steps}
    assert records[CLICK_NAME].effect == "element"
    assert records[CLICK_NAME].decided_by is not None


def test_a_save_button_relabelled_send_is_not_clicked(
    desktop: tuple[str, AccessibilitySession], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # recorded without the detail hash (a documented setting): the harder case for the pixels
    _record(desktop, tmp_path, monkeypatch, visual_validation_detail_region_size=None)
    stop = [text_reply("The form does not look as expected; I stop here.")]
    with _form(desktop, "Send") as form:
        result = _act(desktop, tmp_path, "execute", stop, monkeypatch)
        assert result.replay is not None
        assert result.model_calls == 1
        assert result.replay.status == "handed_back"
        assert result.replay.handback_steps == [CLICK_SAVE]
        assert form.poll() is None  # still open: Send was never clicked
