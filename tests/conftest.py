"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from askcache.storage import LocalCacheStorage
from askcache.testing import SimulatedFormApp


@pytest.fixture
def app() -> SimulatedFormApp:
    return SimulatedFormApp()


@pytest.fixture
def storage(tmp_path: Path) -> LocalCacheStorage:
    return LocalCacheStorage(tmp_path / "cache")
