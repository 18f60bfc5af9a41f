"""Fixtures of the state tests: the form-filling run, recorded once for the session (no test
changes it: a plan copies the steps it runs)."""

from __future__ import annotations

import pytest

from askcache.cachefile.format import CacheFile
from askcache.storage.cache_storage import LocalCacheStorage
from tests.unit.replay_states._build import recorded


@pytest.fixture(scope="session")
def form_file(tmp_path_factory: pytest.TempPathFactory) -> CacheFile:
    """The form's four steps (0 a screenshot, 1 a click on Name, 2 typing "Ada Lovelace", 3
    a click on Save), recorded for real, with its start and end screens."""
    return recorded(LocalCacheStorage(tmp_path_factory.mktemp("form") / "cache"))
