"""Fixtures shared by the integration tests that ask a real accessibility tree."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from askcache.testing import VirtualDisplay
from askcache.testing.accessibility import AccessibilitySession


@pytest.fixture(scope="module")
def screen() -> Iterator[tuple[str, AccessibilitySession]]:
    """A virtual display (1920x1200) with its own D-Bus session and AT-SPI registry, one per
    test module: the display's name and the session."""
    with (
        VirtualDisplay(1920, 1200) as display,
        AccessibilitySession(display.display) as session,
    ):
        yield display.display, session
