"""The AT-SPI element source asks ahead what its last query asked: a field's text figures (its
number of characters, its caret) and what labels it come with the frames, in one round trip
where the tree is as it was; a walk of a window asks the last walk's nodes and labels in its
first round trip; and every answer is the one a source that asks nothing ahead gives, also
after the field changed and at another point.

One Xvfb and one private accessibility session (the ``screen`` fixture of conftest.py,
:class:`askcache.testing.accessibility.AccessibilitySession`), Debian's ``yad`` (a GTK 3 form).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from typing import Any

import pytest

from askcache.foundation.screen.elements import Element, element_center
from askcache.testing.accessibility import AccessibilitySession
from askcache.tools.atspi import AtspiElements
from askcache.tools.atspi_bus import AtspiBus, AtspiError, Call
from askcache.tools.desktop import DesktopBackend

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("yad") is None, reason="yad is not installed (Debian: yad)"),
]

FORM = ("yad", "--form", "--title", "Contact", "--field=Name", "--field=Email")


class _CountingBus(AtspiBus):
    """The real bus, counting its exchanges (round trips) and calls."""

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.trips = 0
        self.calls = 0

    def exchange(
        self, calls: Sequence[Call], deadline: float
    ) -> list[tuple[Any, ...] | AtspiError]:
        self.trips += 1
        self.calls += len(calls)
        return super().exchange(calls, deadline)


def _source(display: str, session: AccessibilitySession) -> AtspiElements:
    return AtspiElements(display, session_address=session.address, timeout=10, search_timeout=20)


def _fresh(display: str, session: AccessibilitySession, point: tuple[int, int]) -> Element | None:
    """What a source that asks nothing ahead (its first query) says at ``point``."""
    source = _source(display, session)
    try:
        return source.element_at(point)
    finally:
        source.close()


def test_a_fields_text_and_labels_are_asked_ahead_and_answer_as_asked_afresh(
    screen: tuple[str, AccessibilitySession],
) -> None:
    display, session = screen
    with session.launch(*FORM, ready=lambda frames: ("frame", "Contact") in frames):
        source = _source(display, session)
        backend = DesktopBackend(display)
        try:
            fields = session.wait_for(lambda: _fields(source), what="the form's two fields")
            name = next(f for f in fields if f.labelled_by == "Name")
            email = next(f for f in fields if f.labelled_by == "Email")
            point, other = element_center(name), element_center(email)
            backend.click(point, "left", 1, None)
            backend.type_text("Ada")
            typed = session.wait_for(
                lambda: _with_count(source, point, 3), what="three characters in the field"
            )
            assert typed.caret_offset == 3
            assert typed.labelled_by == "Name"

            counting = _CountingBus(session.address)
            replaced, source._bus.bus = source._bus.bus, counting  # the same bus, counted
            replaced.close()  # its sockets (the bus's and the applications') closed here
            again = source.element_at(point)
            assert again == typed
            assert counting.trips == 1  # frames, descent, text figures and label together
            assert again == _fresh(display, session, point)

            backend.type_text("m")  # the field changed since the last query
            changed = session.wait_for(
                lambda: _with_count(source, point, 4), what="four characters in the field"
            )
            assert changed.caret_offset == 4
            assert changed == _fresh(display, session, point)

            counting.trips = 0
            walked = _fields(source)  # the window walked again, its last walk asked ahead
            assert counting.trips == 2  # the window, then the walk and the fields' labels
            fresh = _source(display, session)
            try:
                assert walked == _fields(fresh)
            finally:
                fresh.close()

            there = source.element_at(other)  # another path than the one asked ahead
            assert there is not None
            assert there.labelled_by == "Email"
            assert there.caret_offset is None  # not focused
            assert there == _fresh(display, session, other)
            back = source.element_at(point)
            assert back == changed
        finally:
            source.close()
            backend.close()


def _fields(source: AtspiElements) -> list[Element] | None:
    """The form's text fields once it shows both (no window manager: its window is at the
    screen's corner)."""
    found = source.elements_like(Element(role="text", box=(0, 0, 1, 1)), (5, 5))
    return list(found) if found is not None and len(found) == 2 else None


def _with_count(source: AtspiElements, point: tuple[int, int], count: int) -> Element | None:
    found = source.element_at(point)
    return found if found is not None and found.character_count == count else None
