"""The storage's bulk reads and the cache-file index on S3 (moto's real S3 API server)."""

from __future__ import annotations

import json

import pytest

from askcache.cli.app import main
from askcache.storage.cache_storage import load_cache_file
from askcache.storage.index import INDEX_FOLDER, SNAPSHOT_NAME, CacheFileIndex, write_cache_file
from askcache.storage.ledger import RunRecord, open_ledger
from askcache.storage.remote import FsspecCacheStorage, storage_for
from tests.helpers import record_form


def _with_goal(data: bytes, goal: str) -> bytes:
    content = json.loads(data)
    content["metadata"]["goal"] = goal
    return json.dumps(content).encode()


def test_bulk_reads_listing_and_deletes(s3_url: str) -> None:
    storage = storage_for(s3_url)
    assert isinstance(storage, FsspecCacheStorage)
    for n in range(5):
        storage.write(f"team/f{n}.json", b"%d" % n)
    storage.create(".ledger/f0.json/a.json", b"entry")
    storage.write("notes.txt", b"not a cache file")
    wanted = [f"team/f{n}.json" for n in range(5)] + ["team/missing.json", ".ledger/f0.json/a.json"]
    found = storage.read_many(wanted)
    assert found == {
        **{f"team/f{n}.json": b"%d" % n for n in range(5)},
        ".ledger/f0.json/a.json": b"entry",
    }
    info = storage.list_info()
    assert list(info) == [f"team/f{n}.json" for n in range(5)]  # hidden folders not even listed
    assert info["team/f1.json"].size == 1
    assert info["team/f1.json"].md5 == "c4ca4238a0b923820dcc509a6f75849b"  # md5(b"1")
    storage.delete_many([f"team/f{n}.json" for n in range(3)] + ["team/missing.json"])
    assert storage.list_names() == ["team/f3.json", "team/f4.json"]


def test_the_index_on_s3_follows_every_change(s3_url: str) -> None:
    storage = storage_for(s3_url)
    record_form(storage, "form.json")
    data = storage.read("form.json")
    for n in range(6):
        write_cache_file(storage, f"copies/c{n}.json", _with_goal(data, f"Copy {n}"))
    index = CacheFileIndex(storage)
    records = index.records()
    assert [r.goal for r in records[:6]] == [f"Copy {n}" for n in range(6)]
    assert records[6].goal == load_cache_file(storage, "form.json").metadata.goal
    assert storage.exists(SNAPSHOT_NAME)
    storage.write("copies/c2.json", _with_goal(data, "Changed by another tool"))
    storage.write("copies/new.json", _with_goal(data, "Written by an older release"))
    storage.delete("copies/c5.json")
    goals = {r.name: r.goal for r in index.records()}
    assert goals["copies/c2.json"] == "Changed by another tool"
    assert goals["copies/new.json"] == "Written by an older release"
    assert "copies/c5.json" not in goals
    assert {r.name: r.goal for r in CacheFileIndex(storage_for(s3_url)).records()} == goals
    assert storage.list_prefix(INDEX_FOLDER)
    assert "copies/new.json" in storage.list_names()
    another = storage_for(s3_url)
    assert isinstance(another, FsspecCacheStorage)
    assert {r.name: r.goal for r in CacheFileIndex(another).records()} == goals
    assert another.remote_reads == 1  # the snapshot: no cache file opened


def _old_listing(url: str) -> list[str]:
    """What ``askcache list --all`` printed before the index: every file opened."""
    from askcache.cli.commands.common import describe_profiles
    from askcache.foundation.errors import AskCacheError
    from askcache.replay import describe_cache_file
    from askcache.storage.ledger import open_ledger

    storage = storage_for(url)
    ledger = open_ledger(storage)
    lines = []
    for name in storage.list_names():
        try:
            cache_file = load_cache_file(storage, name)
        except AskCacheError as exc:
            lines.append(f"- {name}: unreadable: {exc}")
            continue
        lines.append(describe_cache_file(name, cache_file, ledger))
        lines.append(f"  {describe_profiles(cache_file)}")
    return "\n".join(lines).splitlines()


def test_list_prints_the_same_with_and_without_the_index(
    s3_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = storage_for(s3_url)
    record_form(storage, "form.json")
    data = storage.read("form.json")
    for n in range(4):
        write_cache_file(storage, f"team/t{n}.json", _with_goal(data, f"Task {n} for {{{{who}}}}"))
    storage.write("older.json", _with_goal(data, "Written by an older release"))
    storage.write("broken.json", b"")
    invalid = json.loads(data)
    invalid["metadata"].update(is_valid=False, invalidation_reason="kept failing")
    write_cache_file(storage, "gone-bad.json", json.dumps(invalid).encode())
    ledger = open_ledger(storage)
    for _ in range(3):
        ledger.append(RunRecord(trajectory="team/t1.json", status="completed"))
    ledger.append(RunRecord(trajectory="form.json", status="handed_back", stopped_at_step=1))
    expected = _old_listing(s3_url)

    def listing(*flags: str) -> str:
        capsys.readouterr()
        assert main(["list", "--cache-dir", s3_url, "--all", *flags]) == 0
        return capsys.readouterr().out

    cold_text, warm_text, warm_json = listing(), listing(), listing("--json")
    for name in storage.list_prefix(INDEX_FOLDER):
        storage.delete(name)
    cold_json = listing("--json")
    assert cold_text.splitlines() == expected
    assert warm_text == cold_text
    assert warm_json == cold_json
    files = {f["name"]: f for f in json.loads(warm_json)["files"]}
    assert files["team/t1.json"]["replays"] == 3
    assert files["broken.json"]["readable"] is False
    assert files["gone-bad.json"]["valid"] is False
