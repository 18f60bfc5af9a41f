"""Cache files on S3 (moto's real S3 API server on 127.0.0.1): the storage contract, the
read-through copy, a fleet of processes, a server gone mid-write, thousands of keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from askcache import (
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.foundation.errors import (
    CacheExistsError,
    CacheNotFoundError,
    CachePathError,
    RemoteStorageError,
)
from askcache.storage.cache_storage import load_cache_file
from askcache.storage.ledger import RunRecord, open_ledger
from askcache.storage.remote import FsspecCacheStorage, storage_for
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from tests.s3.server import BUCKET, CuttingProxy, S3Server

ROOT = Path(__file__).parents[2]


def test_the_storage_contract_on_s3(s3_url: str) -> None:
    storage = storage_for(s3_url)
    assert isinstance(storage, FsspecCacheStorage)
    storage.write("team/login.json", b'{"v": 1}')
    storage.write("team/login.json", b'{"v": 2}')
    assert storage.read("team/login.json") == b'{"v": 2}'
    assert storage.exists("team/login.json")
    assert not storage.exists("team/other.json")
    storage.create(".ledger/login.json/a.json", b"1")
    with pytest.raises(CacheExistsError, match=r"already exists in s3://"):
        storage.create(".ledger/login.json/a.json", b"2")  # If-None-Match: * -> 412
    assert storage.read(".ledger/login.json/a.json") == b"1"
    storage.write("notes.txt", b"not a cache file")
    assert storage.list_names() == ["team/login.json"]
    assert storage.list_prefix(".ledger") == [".ledger/login.json/a.json"]
    assert storage.list_prefix("nothing-here") == []
    assert storage.describe("team/login.json") == f"{s3_url}/team/login.json"
    with pytest.raises(CacheNotFoundError, match=r"'nope\.json' not found in s3://") as info:
        storage.read("nope.json")
    assert isinstance(info.value, FileNotFoundError)
    for bad in ("../escape.json", "/abs.json", "", "a\x00b", "./x.json"):
        with pytest.raises(CachePathError):
            storage.read(bad)


def test_a_replay_fetches_each_file_once(s3_url: str, tmp_path: Path) -> None:
    copies = tmp_path / "copies"
    writer = storage_for(s3_url, local_copy_dir=tmp_path / "writer-copy")
    writer.write("login.json", b'{"v": 1}')
    first = FsspecCacheStorage(s3_url, local_copy_dir=copies)
    assert [first.read("login.json") for _ in range(3)] == [b'{"v": 1}'] * 3
    assert first.remote_reads == 1
    second = FsspecCacheStorage(s3_url, local_copy_dir=copies)  # another process, same machine
    assert second.read("login.json") == b'{"v": 1}'
    assert second.remote_reads == 0
    writer.write("login.json", b'{"v": 2}')  # re-recorded elsewhere: the copy is stale
    assert second.read("login.json") == b'{"v": 2}'
    assert second.remote_reads == 1
    assert second.list_names() == ["login.json"]  # a listing caches ETags in s3fs...
    writer.write("login.json", b'{"v": 3}')
    assert second.read("login.json") == b'{"v": 3}'  # ...which a read does not trust
    no_copy = FsspecCacheStorage(s3_url, local_copy_dir=None)
    no_copy.read("login.json")
    no_copy.read("login.json")
    assert no_copy.remote_reads == 2


def test_record_and_replay_through_settings_with_an_s3_cache_dir(s3_url: str) -> None:
    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace")
    with MessagesApiStandIn(script) as api:
        recorded = Agent(api.client(), [ComputerTool(app)], sleep=lambda _: None).act(
            "Save the contact Ada Lovelace",
            CachingSettings(
                strategy="record",
                cache_dir=s3_url,
                writing_settings=CacheWritingSettings(
                    filename="save", parameters={"person": "Ada Lovelace"}
                ),
            ),
        )
        assert recorded.status == "done"
        other = SimulatedFormApp()
        script.app = other
        replayed = Agent(api.client(), [ComputerTool(other)], sleep=lambda _: None).act(
            "Save the contact Grace Hopper",
            CachingSettings(
                strategy="execute",
                cache_dir=s3_url,
                writing_settings=CacheWritingSettings(filename="save"),
                execution_settings=CacheExecutionSettings(
                    parameter_values={"person": "Grace Hopper"}
                ),
            ),
        )
    assert replayed.model_calls == 0
    assert replayed.replay is not None
    assert replayed.replay.status == "completed"
    assert other.saved == [{"name": "Grace Hopper", "email": ""}]
    assert storage_for(s3_url).list_names() == ["save.json"]


def _record_shared(s3_url: str) -> None:
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, "Ada Lovelace")) as api:
        result = Agent(api.client(), [ComputerTool(app)], sleep=lambda _: None).act(
            "Save the contact Ada Lovelace",
            CachingSettings(
                strategy="record",
                cache_dir=s3_url,
                writing_settings=CacheWritingSettings(
                    filename="shared.json", parameters={"person": "Ada Lovelace"}
                ),
            ),
        )
    assert result.status == "done"


def test_a_fleet_of_processes_records_replays_and_appends_without_losing_anything(
    s3_url: str,
) -> None:
    _record_shared(s3_url)
    workers, entries = 3, 20
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.s3.worker", s3_url, str(index), str(entries)],
            cwd=ROOT,
            env=os.environ.copy(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(workers)
    ]
    summaries = []
    for process in processes:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err[-3000:]
        summaries.append(json.loads(out.strip().splitlines()[-1]))
    for summary in summaries:
        index = summary["index"]
        assert summary["recorded"] == "done"
        assert summary["replay"] == "completed"
        assert summary["replay_calls"] == 0
        assert summary["saved"] == [{"name": f"Replayed {index}", "email": ""}]
    storage = storage_for(s3_url)
    assert storage.list_names() == sorted(
        ["common.json", "shared.json", *(f"contact-{i}.json" for i in range(workers))]
    )
    for index in range(workers):
        assert load_cache_file(storage, f"contact-{index}.json").metadata.goal == (
            f"Save the contact Person {index}"
        )
    everything = open_ledger(storage).records("shared.json")
    # the workers' own entries carry pid = their index; the agents' replays, their real pid
    replays = [r for r in everything if r.pid >= workers]
    assert [r.status for r in replays] == ["completed"] * workers
    records = [r for r in everything if r.pid < workers]
    assert len(records) == workers * entries  # one object per run: no lost update
    assert sorted((r.pid, r.steps_run) for r in records) == sorted(
        (i, run) for i in range(workers) for run in range(entries)
    )
    common = json.loads(storage.read("common.json"))  # last writer wins, whole
    assert common["writer"] in range(workers)
    assert len(common["pad"]) == 50_000


def _files(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and "unsent" not in p.parts}


def test_the_server_going_away_mid_write_loses_nothing(
    s3_url: str, s3_server: S3Server, tmp_path: Path
) -> None:
    copies = tmp_path / "copies"
    direct = FsspecCacheStorage(s3_url, local_copy_dir=copies)
    old = json.dumps({"version": "old"}).encode()
    direct.write("big.json", old)
    assert direct.read("big.json") == old  # now in the read-through copy
    copy_files = _files(copies)
    proxy = CuttingProxy(s3_server.port, cut_after=256 * 1024)
    through_proxy = FsspecCacheStorage(
        s3_url,
        storage_options={"endpoint_url": proxy.endpoint},
        local_copy_dir=copies,
    )
    new = json.dumps({"version": "new", "pad": "y" * 4_000_000}).encode()
    with pytest.raises(RemoteStorageError) as info:
        through_proxy.write("big.json", new)
    assert proxy.cut.is_set()
    assert 0 < proxy.forwarded < len(new)  # the server saw part of the body, then nothing
    error = info.value
    assert str(error).startswith(f"could not write {s3_url}/big.json: ")
    assert error.kept_at is not None
    assert Path(error.kept_at).read_bytes() == new  # the unsent recording is kept locally
    assert "the data was kept at" in str(error)
    fresh = FsspecCacheStorage(s3_url, local_copy_dir=None)
    assert fresh.read("big.json") == old  # nothing half-written
    assert _files(copies) == copy_files  # the read-through copy is intact
    with pytest.raises(RemoteStorageError, match="could not create"):
        through_proxy.create(".ledger/big.json/x.json", b"{}")  # the endpoint stays down
    assert fresh.list_prefix(".ledger") == []


def test_listing_a_prefix_with_thousands_of_files(s3_url: str, s3_server: S3Server) -> None:
    storage = storage_for(s3_url)
    assert isinstance(storage, FsspecCacheStorage)
    prefix = storage.root.removeprefix(f"{BUCKET}/")
    keys = [f"{prefix}/team-{i // 100:02}/task-{i:04}.json" for i in range(2500)]
    keys += [f"{prefix}/.ledger/task/{i:04}.json" for i in range(600)]
    keys.append(f"{prefix}/README.txt")
    s3_server.put_objects(keys, b"{}")  # set-up straight into the server's store
    names = storage.list_names()  # over HTTP: several pages of 1,000 keys
    assert len(names) == 2500
    assert names[0] == "team-00/task-0000.json"
    assert names[-1] == "team-24/task-2499.json"
    assert names == sorted(names)
    assert len(storage.list_prefix(".ledger")) == 600


def test_the_command_reads_a_shared_cache(s3_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from askcache.cli.app import main

    _record_shared(s3_url)
    open_ledger(storage_for(s3_url)).append(
        RunRecord(trajectory="shared.json", status="completed", saved_model_calls=5)
    )
    assert main(["list", "--cache-dir", s3_url, "--json"]) == 0
    assert [f["name"] for f in json.loads(capsys.readouterr().out)["files"]] == ["shared.json"]
    assert main(["show", "shared", "--cache-dir", s3_url]) == 0
    assert "shared.json: 'Save the contact {{person}}'" in capsys.readouterr().out
    assert main(["lint", "--cache-dir", s3_url, "--strict"]) == 0
    assert "shared.json: ok" in capsys.readouterr().out
    assert main(["stats", "--cache-dir", s3_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"]["saved_model_calls"] == 5
    assert main(["list", "--cache-dir", "s3://no-such-bucket-here/x"]) == 3
    assert "askcache: error: could not list s3://no-such-bucket-here/x" in capsys.readouterr().err


def test_recording_again_on_s3_keeps_the_earlier_recording(
    s3_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from askcache.cli.app import main
    from askcache.foundation.errors import CacheOverwriteRefusedError
    from askcache.storage.versions import TrajectoryVersions

    _record_shared(s3_url)
    storage = storage_for(s3_url)
    first = storage.read("shared.json")
    _record_shared(s3_url)  # the same task recorded again under the same name
    second = storage.read("shared.json")
    assert second != first  # (its recording time differs)
    versions = TrajectoryVersions(storage, "shared.json")
    assert versions.numbers() == [1, 2]
    assert storage.read(versions.version_name(1)) == first
    assert main(["diff", "shared", "--cache-dir", s3_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["a"] == "v1"
    assert main(["rollback", "shared", "--cache-dir", s3_url]) == 0
    assert storage_for(s3_url).read("shared.json") == first
    app = SimulatedFormApp()
    with (
        MessagesApiStandIn(FormFillingScript(app, "Ada Lovelace")) as api,
        pytest.raises(
            CacheOverwriteRefusedError,
            match=r"^s3://.*/shared\.json already exists and versions are off",
        ),
    ):
        Agent(api.client(), [ComputerTool(app)]).act(
            "Save the contact Ada Lovelace",
            CachingSettings(
                strategy="record",
                cache_dir=s3_url,
                keep_versions=0,
                writing_settings=CacheWritingSettings(filename="shared.json"),
            ),
        )
    assert storage_for(s3_url).read("shared.json") == first
