"""The X server's drawing reports (askcache.foundation.screen.damage) on Xvfb, with real applications:
the Tk form and xterm (Xt) draw in child windows and in top-level windows, and both reach the
root window's reports; boxes are told apart, a still screen is told still, and a server
without the DAMAGE extension gives no reports (the replay then samples the screen).

Every wait here waits for an event (drawing reported, the screen still) with a generous
bound; nothing asserts a duration.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from askcache import ComputerTool
from askcache.foundation.errors import AskCacheError
from askcache.foundation.geometry import Box
from askcache.foundation.screen import damage as damage_module
from askcache.foundation.screen.damage import (
    FRAME_PERIOD,
    DamageSource,
    ScaledDamage,
    ScreenDamage,
    ScreenDamageLostError,
)
from askcache.testing import TkFormApp, VirtualDisplay, run_on_display
from askcache.tools.desktop import DesktopBackend

pytestmark = pytest.mark.integration

PATIENCE = 60.0
"""Seconds before a wait for an event gives up: only a broken server or test takes that long."""


@contextmanager
def _desktop(width: int, height: int, without: tuple[str, ...] = ()) -> Iterator[DesktopBackend]:
    with VirtualDisplay(width, height, without=without) as screen:
        backend = DesktopBackend(screen.display)
        try:
            yield backend
        finally:
            backend.close()


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {PATIENCE} s: {what}")
        time.sleep(0.005)


def _still(source: DamageSource, box: Box | None = None) -> bool:
    """One look at stillness, as a replayed step takes it: nothing drawn (in ``box``) for a
    frame period after a mark."""
    mark = source.mark()
    time.sleep(FRAME_PERIOD)
    return not source.damaged_since(mark, box)


def test_typing_in_the_tk_form_is_reported_in_its_field_and_nowhere_else(tmp_path: Path) -> None:
    with _desktop(1280, 800) as backend, TkFormApp(backend.display, tmp_path / "s.json") as app:
        damage = backend.screen_damage()
        assert isinstance(damage, ScreenDamage)
        assert backend.screen_damage() is damage  # one per backend
        assert damage.size == (1280, 800)
        backend.click(app.center("name"), "left", 1, None)
        assert app.current()["focus"] == "name"
        name, email = app.widget("name").box, app.widget("email").box
        # the caret blinks in the name field; the email field and the empty screen beside
        # the form are still
        _until(lambda: _still(damage, email), "the email field to be still")

        mark = damage.mark()
        backend.type_text("Q")
        assert app.current()["values"]["name"] == "Q"  # handled and drawn
        _until(lambda: damage.damaged_since(mark, name), "the typed letter to be reported")
        assert damage.damaged_since(mark)
        assert not damage.damaged_since(mark, email)
        assert not damage.damaged_since(mark, (700, 450, 1280, 800))  # beside the form
        areas = damage.areas_since(mark)
        assert areas is not None
        assert any(left < name[2] and name[0] < right for left, _, right, _ in areas)

        # drawing again over the same pixels after a later mark is reported again, and an
        # earlier mark sees it too
        again = damage.mark()
        backend.key("BackSpace", 1)
        assert app.current()["values"]["name"] == ""
        _until(lambda: damage.damaged_since(again, name), "the deleted letter to be reported")
        assert not damage.damaged_since(again, email)
        assert damage.damaged_since(mark, name)


def test_xterm_typing_is_reported_in_model_coordinates_and_a_still_screen_is_still() -> None:
    # a 1920x1200 screen: the computer tool shows it to the model at 1280x800
    with (
        _desktop(1920, 1200) as backend,
        run_on_display(backend.display, "xterm", "-geometry", "80x24+0+0", "-e", "cat"),
    ):
        tool = ComputerTool(backend)
        assert tool.api_size == (1280, 800)
        source = tool.screen_damage()
        assert isinstance(source, ScaledDamage)
        [frame] = [w for w in tool.windows() or [] if w.wm_class == "XTerm"]
        terminal = (frame.x, frame.y, frame.x + frame.width, frame.y + frame.height)
        backend.move(tool.to_screen((frame.x + frame.width // 2, frame.y + frame.height // 2)))
        _until(lambda: _still(source), "the screen to be still")

        mark = source.mark()
        backend.type_text("z")  # cat's terminal echoes it
        _until(lambda: source.damaged_since(mark, terminal), "the echoed letter to be reported")
        right = frame.x + frame.width
        assert not source.damaged_since(mark, (right + 1, 0, 1280, 800))
        assert not source.damaged_since(mark, (0, frame.y + frame.height + 1, 1280, 800))
        _until(lambda: _still(source), "the screen to be still again")


def test_a_window_mapped_after_the_mark_is_reported_where_it_appears() -> None:
    with _desktop(800, 600) as backend:
        damage = backend.screen_damage()
        assert damage is not None
        mark = damage.mark()
        with run_on_display(backend.display, "xterm", "-geometry", "20x5+400+300"):
            _until(lambda: damage.damaged_since(mark, (400, 300, 800, 600)), "the new window")
            assert not damage.damaged_since(mark, (0, 0, 400, 300))
            gone = damage.mark()
        # its going draws the root's background there again
        _until(lambda: damage.damaged_since(gone, (400, 300, 800, 600)), "the window's going")


def test_a_mark_older_than_the_reports_kept_is_answered_damaged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(damage_module, "KEPT_REPORTS", 1)
    with _desktop(800, 600) as backend:
        damage = backend.screen_damage()
        assert damage is not None
        old = damage.mark()
        with run_on_display(backend.display, "xterm", "-geometry", "20x5+400+300"):
            _until(lambda: damage.mark().index > old.index + 1, "two reports after the mark")
            # nothing was drawn far from the window, but the reports after ``old`` are gone
            assert damage.damaged_since(old, (0, 0, 100, 100))
            assert damage.areas_since(old) is None


def test_a_server_without_damage_gives_no_reports_and_the_desktop_still_works() -> None:
    with _desktop(640, 480, without=("DAMAGE",)) as backend:
        assert backend.screenshot().size == (640, 480)
        assert ScreenDamage.open(backend.display) is None
        assert backend.screen_damage() is None
        assert ComputerTool(backend).screen_damage() is None


def test_no_display_gives_no_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    assert ScreenDamage.open() is None
    assert ScreenDamage.open(":987") is None  # no server answers there


def test_reports_from_a_server_that_exited_are_an_error_not_an_answer() -> None:
    screen = VirtualDisplay(640, 480)
    screen.start()
    try:
        damage = ScreenDamage.open(screen.display)
        assert damage is not None
        mark = damage.mark()
    finally:
        screen.stop()
    with pytest.raises(ScreenDamageLostError) as caught:
        damage.damaged_since(mark)
    assert isinstance(caught.value, AskCacheError)
    assert isinstance(caught.value, ConnectionError)
    damage.close()
    damage.close()  # again: nothing
    with pytest.raises(ScreenDamageLostError):
        damage.mark()
