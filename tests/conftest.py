"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from askcache.foundation import redaction
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.testing import SimulatedFormApp


@pytest.fixture(autouse=True)
def outbox_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Writes kept for later go to the test's folder, never to the user's."""
    folder = tmp_path / "outbox"
    monkeypatch.setenv("ASKCACHE_OUTBOX_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def secrets_of_this_test_only() -> None:
    """Secrets are registered for the life of the process (askcache.foundation.redaction): a secret one
    test registered would redact another test's text. Each test starts with none."""
    with redaction._lock:
        redaction._secrets.clear()
        redaction._changes[0] += 1


@pytest.fixture
def app() -> SimulatedFormApp:
    return SimulatedFormApp()


@pytest.fixture
def storage(tmp_path: Path) -> LocalCacheStorage:
    return LocalCacheStorage(tmp_path / "cache")


@pytest.fixture(autouse=True)
def no_ledger_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's run ledger is the one its cache folder implies, whatever the shell says."""
    monkeypatch.delenv("ASKCACHE_LEDGER", raising=False)
