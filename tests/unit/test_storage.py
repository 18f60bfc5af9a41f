"""Local storage: atomic writes, names kept inside the cache folder, clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from askcache.cachefile.format import CacheFile, CacheMetadata
from askcache.foundation.errors import (
    CacheExistsError,
    CacheFileCorruptError,
    CacheNotFoundError,
    CachePathError,
)
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file, save_cache_file


def _file(goal: str = "g") -> CacheFile:
    return CacheFile(metadata=CacheMetadata(goal=goal), trajectory=[])


def test_save_and_load(storage: LocalCacheStorage) -> None:
    save_cache_file(storage, "team/login.json", _file("log in"))
    assert load_cache_file(storage, "team/login.json").metadata.goal == "log in"
    assert storage.list_names() == ["team/login.json"]
    assert storage.exists("team/login.json")


def test_missing_file_is_a_cache_not_found_and_a_file_not_found(storage: LocalCacheStorage) -> None:
    with pytest.raises(CacheNotFoundError, match=r"'nope\.json' not found") as info:
        load_cache_file(storage, "nope.json")
    assert isinstance(info.value, FileNotFoundError)


@pytest.mark.parametrize(
    "name", ["../escape.json", "a/../../escape.json", "/etc/passwd", "", "a\x00b"]
)
def test_names_outside_the_folder_are_refused(storage: LocalCacheStorage, name: str) -> None:
    with pytest.raises(CachePathError):
        storage.write(name, b"{}")


def test_symlink_out_of_the_folder_is_refused(storage: LocalCacheStorage, tmp_path: Path) -> None:
    storage.directory.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (storage.directory / "link").symlink_to(outside)
    with pytest.raises(CachePathError, match="resolves outside"):
        storage.write("link/x.json", b"{}")
    assert not (outside / "x.json").exists()


def test_failed_write_leaves_the_old_file_and_no_temp_file(
    storage: LocalCacheStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_cache_file(storage, "keep.json", _file("original"))

    def crash(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        save_cache_file(storage, "keep.json", _file("replacement"))
    monkeypatch.undo()
    assert load_cache_file(storage, "keep.json").metadata.goal == "original"
    assert sorted(p.name for p in storage.directory.iterdir()) == ["keep.json"]


def test_empty_and_truncated_files_name_the_path(storage: LocalCacheStorage) -> None:
    storage.directory.mkdir(parents=True)
    (storage.directory / "empty.json").write_text("  ")
    with pytest.raises(CacheFileCorruptError, match=r"empty\.json.*empty"):
        load_cache_file(storage, "empty.json")
    save_cache_file(storage, "cut.json", _file())
    path = storage.directory / "cut.json"
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(CacheFileCorruptError, match=r"cut\.json.*truncated"):
        load_cache_file(storage, "cut.json")


def test_listing_ignores_temp_files_and_other_extensions(storage: LocalCacheStorage) -> None:
    storage.directory.mkdir(parents=True)
    (storage.directory / ".a.json.123.tmp").write_text("x")
    (storage.directory / "notes.txt").write_text("x")
    save_cache_file(storage, "b.json", _file())
    assert storage.list_names() == ["b.json"]
    assert LocalCacheStorage(storage.directory / "missing").list_names() == []


def test_create_never_overwrites_and_lists_under_a_prefix(tmp_path: Path) -> None:
    storage = LocalCacheStorage(tmp_path)
    storage.create(".ledger/a.json/1.json", b"one")
    with pytest.raises(CacheExistsError):
        storage.create(".ledger/a.json/1.json", b"two")
    assert storage.read(".ledger/a.json/1.json") == b"one"
    storage.write("a.json", b"{}")
    assert storage.list_names() == ["a.json"]  # hidden folders hold no cache files
    assert storage.list_prefix(".ledger/a.json") == [".ledger/a.json/1.json"]
    assert storage.list_prefix(".ledger/missing") == []
    assert not list(tmp_path.rglob("*.tmp"))
