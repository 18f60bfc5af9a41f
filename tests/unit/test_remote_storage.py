"""storage_for and CachingSettings.cache_dir: folders stay local, URLs go through fsspec."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from askcache.foundation.errors import (
    CacheExistsError,
    CachePathError,
    InvalidSettingsError,
    MissingDependencyError,
)
from askcache.foundation.settings import CachingSettings
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import RunRecord, open_ledger
from askcache.storage.remote import FsspecCacheStorage, default_local_copy_dir, storage_for


def test_folders_and_file_urls_give_local_storage(tmp_path: Path) -> None:
    assert isinstance(storage_for(tmp_path), LocalCacheStorage)
    assert isinstance(storage_for(str(tmp_path)), LocalCacheStorage)
    local = storage_for(f"file://{tmp_path}")
    assert isinstance(local, LocalCacheStorage)
    assert local.directory == tmp_path


def test_memory_urls_keep_the_storage_contract(tmp_path: Path) -> None:
    url = f"memory://askcache-{uuid.uuid4().hex}"
    storage = storage_for(url, local_copy_dir=tmp_path)
    assert isinstance(storage, FsspecCacheStorage)
    storage.write("a/login.json", b"1")
    storage.write("a/login.json", b"2")
    assert storage.read("a/login.json") == b"2"
    ledger = open_ledger(storage)
    for _ in range(3):
        ledger.append(RunRecord(trajectory="a/login.json", status="completed"))
    storage.create(".ledger/x.json", b"")
    with pytest.raises(CacheExistsError):
        storage.create(".ledger/x.json", b"")
    assert storage.list_names() == ["a/login.json"]
    assert len(ledger.records("a/login.json")) == 3
    with pytest.raises(CachePathError):
        storage.write("../x.json", b"")


def test_a_url_whose_driver_is_missing_says_what_to_install() -> None:
    with pytest.raises(MissingDependencyError, match=r"cache_dir 'gcs://bucket/x' needs") as info:
        storage_for("gcs://bucket/x")
    assert isinstance(info.value, ImportError)
    assert "gcsfs" in str(info.value)


def test_an_unknown_scheme_is_a_path_error() -> None:
    with pytest.raises(CachePathError, match="not a storage URL fsspec knows"):
        storage_for("nosuchscheme://bucket/x")


def test_settings_keep_urls_as_strings_and_folders_as_paths() -> None:
    assert CachingSettings(cache_dir="s3://bucket/app").cache_dir == "s3://bucket/app"
    assert CachingSettings(cache_dir=".askcache").cache_dir == Path(".askcache")
    assert CachingSettings().cache_dir == Path(".askcache")
    with pytest.raises(InvalidSettingsError, match="cache_dir: the URL names no location"):
        CachingSettings(cache_dir="s3://")
    with pytest.raises(InvalidSettingsError, match="cache_dir: must name a folder or a URL"):
        CachingSettings(cache_dir=" ")


def test_the_local_copy_folder_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ASKCACHE_LOCAL_COPY_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_local_copy_dir() == tmp_path / "askcache" / "remote"
    monkeypatch.setenv("ASKCACHE_LOCAL_COPY_DIR", str(tmp_path / "x"))
    assert default_local_copy_dir() == tmp_path / "x"
