"""A Qt menu item that no tree describes, found by its label elsewhere in its popup on a screen
drawn otherwise, clicked on a real FeatherPad (replay/element_check.py's ``label_elsewhere``).

FeatherPad (Qt 5) under Xvfb, on a three-line file: "apples" typed, then the File menu opened.
Its Save item's label, box and look are taken as a recording would in Qt's Fusion style (the
default); the same menu in Qt's Windows style lays its items out taller ("Save" lower, the
recorded point then between a separator and it: the bench's wrong action of the first in-place
rule). The rule must click "Save" itself, which the saved file proves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest
from PIL import Image

from askcache.fingerprint.element_look import element_look
from askcache.fingerprint.label_reader import read_label
from askcache.foundation.screen.elements import StepElement
from askcache.foundation.screen.windows import WindowFrame, find_window, window_at
from askcache.replay.element_check import label_elsewhere
from askcache.testing.accessibility import application_on_file
from askcache.tools.desktop import DesktopBackend

pytestmark = pytest.mark.integration

LIST = "milk\neggs\nbread\n"
SAVE_POINT = (50, 340)
"""Where a recording in Fusion clicks FeatherPad's Save item (bench/rerender.py's task)."""
T = TypeVar("T")


def _until(probe: Callable[[], T | None], what: str, timeout: float = 120.0) -> T:
    """``probe``'s first answer that is not ``None`` (``timeout`` only guards a hang)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found is not None:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never happened: {what}")


@contextmanager
def _featherpad(
    folder: Path, style: str, language: str | None = None
) -> Iterator[tuple[DesktopBackend, Path]]:
    """FeatherPad in Qt's ``style`` (and ``language``: a ``LANG``) on a file of its own, on an
    X server of its own."""
    env = {"QT_QPA_PLATFORM": "xcb", "QT_STYLE_OVERRIDE": style}
    if language is not None:
        env["LANG"] = language
    with application_on_file(["featherpad"], folder, LIST, env) as (display, path):
        backend = DesktopBackend(display)
        try:
            yield backend, path
        finally:
            backend.close()


def _titled(backend: DesktopBackend, title: str) -> WindowFrame | None:
    """The window whose title is ``title``, or the file's path ending in it (FeatherPad's
    main window: the path, a star before it when the text changed)."""
    for window in backend.windows():
        shown = window.title or ""
        if shown == title or (
            title.endswith(".txt") and shown.endswith("/" + title) and not shown.startswith("*")
        ):
            return window
        if title.startswith("*") and shown.startswith("*") and shown.endswith(title[1:]):
            return window
    return None


def _open_menu(backend: DesktopBackend) -> tuple[Image.Image, list[WindowFrame]]:
    """ "apples" typed on a new line, then the File menu opened; the screen once the popup's
    pixels have stopped changing, and the windows then."""
    _until(lambda: _titled(backend, "list.txt"), "FeatherPad's window")
    backend.click((200, 250), "left", 1, None)
    backend.key("Return", 1)
    backend.type_text("apples")
    _until(lambda: _titled(backend, "*list.txt"), "the text changed (the title's star)")
    backend.click((20, 11), "left", 1, None)
    popup = _until(lambda: _titled(backend, "FeatherPad"), "the File menu's popup")
    box = (popup.x, popup.y, popup.x + popup.width, popup.y + popup.height)
    last: list[bytes] = []

    def settled() -> Image.Image | None:
        image = backend.screenshot()
        pixels = image.crop(box).tobytes()
        if last and last[-1] == pixels and pixels.count(0) < len(pixels):
            return image
        last.append(pixels)
        return None

    image = _until(settled, "the popup drawn")
    return image, backend.windows()


def _recorded(folder: Path) -> tuple[StepElement, WindowFrame]:
    """The Save item's element and popup as a recording in Fusion stores them."""
    with _featherpad(folder, "Fusion") as (backend, _):
        image, windows = _open_menu(backend)
    reading = read_label(image, SAVE_POINT)
    assert reading is not None
    assert reading.text == "Save"
    look = element_look(image, reading.box)
    then = window_at(windows, SAVE_POINT)
    assert then is not None
    recorded = StepElement(
        label=reading.text,
        label_box=reading.box,
        label_digest=reading.digest,
        look=look,
        look_box=reading.box,
    )
    return recorded, then


def test_save_found_lower_in_the_windows_style_is_the_item_clicked(tmp_path: Path) -> None:
    recorded, then = _recorded(tmp_path / "fusion")
    with _featherpad(tmp_path / "windows", "Windows") as (backend, path):
        image, windows = _open_menu(backend)
        now = find_window(then, windows)
        assert now is not None
        beside = read_label(image, SAVE_POINT)
        found = label_elsewhere(image, recorded, SAVE_POINT, then, now, threshold=0.35)
        assert not isinstance(found, str), found
        target, _ = found
        assert recorded.label_box is not None
        assert target[1] > SAVE_POINT[1] + recorded.label_box[3] // 2  # lower: not in place
        if beside is not None and beside.text == "Save":
            # the first rule's case: "Save" read beside the point, not under it
            assert target != SAVE_POINT
        backend.click(target, "left", 1, None)
        _until(lambda: _titled(backend, "list.txt"), "the file saved (no star in the title)")
        saved = _until(lambda: path.read_text() if "apples" in path.read_text() else None, "")
        assert saved.startswith(LIST)
        assert saved.rstrip("\n").endswith("apples")  # Save itself ran: the file was written


def test_the_menu_in_german_gives_no_word_and_nothing_is_clicked(tmp_path: Path) -> None:
    recorded, then = _recorded(tmp_path / "fusion")
    with _featherpad(tmp_path / "german", "Windows", "de_DE.UTF-8") as (backend, path):
        image, windows = _open_menu(backend)
        now = find_window(then, windows)
        assert now is not None
        found = label_elsewhere(image, recorded, SAVE_POINT, then, now, threshold=0.35)
        assert found == "0 lines read 'Save' down its window's column"
        assert path.read_text() == LIST
