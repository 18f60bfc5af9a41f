"""The AT-SPI element source on what a GTK 3 form and menu show: a form's unnamed fields told
apart by the labels the toolkit relates to them (``LABELLED_BY``), an empty field's only
character place, and the items of an open menu, whose popup is a window no frame is.

One Xvfb and one private accessibility session
(:class:`askcache.testing.accessibility.AccessibilitySession`); Debian's ``yad`` (a GTK 3 form
dialog) and ``mousepad`` (its File menu opened by a real click), at scale 1 and 2.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from askcache.foundation.screen.elements import Element, element_center
from askcache.foundation.screen.xserver import connect
from askcache.testing.accessibility import AccessibilitySession
from askcache.tools.atspi import AtspiElements
from askcache.tools.desktop import DesktopBackend
from askcache.tools.xlib_windows import StackedWindow, window_at

pytestmark = pytest.mark.integration

FORM = ("yad", "--form", "--title", "Contact", "--field=Name", "--field=Email")


def _source(display: str, session: AccessibilitySession) -> AtspiElements:
    return AtspiElements(display, session_address=session.address, timeout=10, search_timeout=20)


def _top(display: str, point: tuple[int, int]) -> StackedWindow:
    connection = connect(display)
    try:
        top = window_at(connection, point)
    finally:
        connection.close()
    assert top is not None
    return top


@pytest.mark.skipif(shutil.which("yad") is None, reason="yad is not installed (Debian: yad)")
@pytest.mark.parametrize("scale", [1, 2])
def test_a_forms_unnamed_fields_are_told_apart_by_their_labels(
    screen: tuple[str, AccessibilitySession], scale: int
) -> None:
    display, session = screen
    env = {"GDK_SCALE": str(scale)}
    with session.launch(*FORM, env=env, ready=lambda frames: ("frame", "Contact") in frames):
        source = _source(display, session)
        try:
            fields = session.wait_for(lambda: _fields(source), what="the form's two fields")
            assert sorted(f.labelled_by or "" for f in fields) == ["Email", "Name"]
            assert all(f.identity() == fields[0].identity() for f in fields)  # twins by identity
            name = next(f for f in fields if f.labelled_by == "Name")
            email = next(f for f in fields if f.labelled_by == "Email")
            assert [f.labelled_by for f in fields if name.same_element(f)] == ["Name"]
            assert name.other_labels(email)
            assert "labelled 'Name'" in name.describe()

            found = source.element_at(element_center(name))
            assert found is not None
            assert found.labelled_by == "Name"
            assert name.same_element(found)
            assert found.text_offset == 0  # empty: its only place is its start
            unlabelled = found.model_copy(update={"labelled_by": None})
            assert unlabelled.same_element(found)  # recorded before labels were: as before
            assert not found.same_element(unlabelled)  # labels unknown now: not counted
        finally:
            source.close()


def _fields(source: AtspiElements) -> list[Element] | None:
    """The form's text fields once it shows both (no window manager: its window is at the
    screen's corner)."""
    found = source.elements_like(Element(role="text", box=(0, 0, 1, 1)), (5, 5))
    return list(found) if found is not None and len(found) == 2 else None


@pytest.mark.parametrize("scale", [1, 2])
def test_an_open_menus_items_are_described_in_its_popup(
    screen: tuple[str, AccessibilitySession], scale: int, tmp_path: Path
) -> None:
    display, session = screen
    text = tmp_path / "list.txt"
    text.write_text("milk\neggs\n")
    env = {"GDK_SCALE": str(scale)}
    with session.launch(
        "mousepad",
        str(text),
        env=env,
        ready=lambda frames: any(name.endswith("list.txt - Mousepad") for _, name in frames),
    ):
        source = _source(display, session)
        backend = DesktopBackend(display)
        try:
            bar = source.elements_like(Element(role="menu", name="File", box=(0, 0, 1, 1)), (5, 5))
            assert bar is not None
            assert len(bar) == 1
            assert source.element_at(element_center(bar[0])) is not None
            backend.click(element_center(bar[0]), "left", 1, None)
            probe = Element(role="menu item", name="Quit", box=(0, 0, 1, 1))
            below = (bar[0].box[0] + 5, bar[0].box[1] + bar[0].box[3] + 10 * scale)
            session.wait_for(lambda: _top(display, below).popup, what="the menu's popup")
            quit_ = session.wait_for(
                lambda: source.elements_like(probe, below), what="the open File menu"
            )
            assert len(quit_) == 1
            item = quit_[0]
            popup = _top(display, element_center(item))
            assert popup.popup
            assert item.window_box == popup.box
            found = source.element_at(element_center(item))
            assert found is not None
            assert (found.role, found.name) == ("menu item", "Quit")
            assert [(a.role, a.name) for a in found.ancestors[:2]] == [
                ("menu", "File"),
                ("menu bar", None),
            ]
            assert found.ancestors[-1].role == "frame"
            assert found.box == item.box
            assert found.same_element(item)
            x, y, width, height = found.box
            assert popup.box[0] <= x
            assert x + width <= popup.box[0] + popup.box[2] + 2
            assert popup.box[1] <= y
            assert y + height <= popup.box[1] + popup.box[3] + 2
        finally:
            backend.key("Escape", 1)
            backend.close()
            source.close()
