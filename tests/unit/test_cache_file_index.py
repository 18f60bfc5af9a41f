"""The cache-file index (askcache.storage.index) on a local folder: records match the files,
a file changed behind askcache's back is re-read, the index is never needed to be right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from askcache.storage import versions
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.index import INDEX_FOLDER, CacheFileIndex, record_of, write_cache_file
from tests.helpers import record_form


def _with_goal(data: bytes, goal: str) -> bytes:
    content = json.loads(data)
    content["metadata"]["goal"] = goal
    return json.dumps(content).encode()


@pytest.fixture
def storage(tmp_path: Path) -> LocalCacheStorage:
    storage = LocalCacheStorage(tmp_path / "cache")
    record_form(storage, "form.json")
    return storage


def test_records_describe_the_files_and_stay_hidden(storage: LocalCacheStorage) -> None:
    data = storage.read("form.json")
    write_cache_file(storage, "team/other.json", _with_goal(data, "Fill {{who}} in"))
    storage.write("broken.json", b"{not json")
    records = CacheFileIndex(storage).records()
    assert [r.name for r in records] == ["broken.json", "form.json", "team/other.json"]
    broken, form, other = records
    assert not broken.readable
    assert broken.error is not None
    assert "broken.json" in broken.error
    loaded = load_cache_file(storage, "form.json")
    assert (form.goal, form.steps) == (loaded.metadata.goal, len(loaded.trajectory))
    assert form.valid
    assert form.signature_key is None
    assert other.goal == "Fill {{who}} in"
    assert other.placeholders == ["who"]
    assert storage.list_names() == ["broken.json", "form.json", "team/other.json"]
    assert storage.list_prefix(INDEX_FOLDER)  # the records and the snapshot


def test_a_file_changed_behind_the_index_is_read_again(storage: LocalCacheStorage) -> None:
    index = CacheFileIndex(storage)
    assert [r.goal for r in index.records()] == [
        load_cache_file(storage, "form.json").metadata.goal
    ]
    changed = _with_goal(storage.read("form.json"), "Edited by hand, a longer goal")
    storage.write("form.json", changed)  # no index update: by hand, or an older askcache
    (record,) = index.records()
    assert record.goal == "Edited by hand, a longer goal"
    assert record == record_of(
        "form.json", changed, where="x", tag=storage.list_info()["form.json"].tag
    ).model_copy(update={"error": None})
    assert CacheFileIndex(storage).records() == [record]  # and written back


def test_a_damaged_or_missing_index_changes_nothing(storage: LocalCacheStorage) -> None:
    first = CacheFileIndex(storage).records()
    for name in storage.list_prefix(INDEX_FOLDER):
        storage.write(name, b"{damaged")
    assert CacheFileIndex(storage).records() == first
    for name in storage.list_prefix(INDEX_FOLDER):
        storage.delete(name)
    assert CacheFileIndex(storage).records() == first


def test_versions_are_counted(storage: LocalCacheStorage) -> None:
    assert versions.VERSIONS_FOLDER == ".versions"  # the index counts under that folder
    data = storage.read("form.json")
    kept = versions.TrajectoryVersions(storage, "form.json")
    kept.commit(data, _with_goal(data, "Healed"))
    (record,) = CacheFileIndex(storage).records()
    assert (record.goal, record.versions) == ("Healed", 2)
