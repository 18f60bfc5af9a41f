"""The outage matrix: the S3 server goes away before, during or after each write of a run
that heals (its heal's writes and its two run-ledger entries); once it is back, the next run
or ``askcache sync`` sends what was kept, and nothing is lost or written twice. Also the
preflight: recording into a bucket that does not exist fails before any model call.

The server is moto's on 127.0.0.1 behind a TCP proxy: stopping it stops the HTTP server and
closes every connection (new ones are refused); cutting a write forwards half of the
request, then the server is gone.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from s3fs import S3FileSystem

from askcache import (
    ActResult,
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.cli.app import main
from askcache.foundation.errors import StorageUnwritableError
from askcache.storage.ledger import open_ledger
from askcache.storage.outbox import Outbox
from askcache.storage.remote import FsspecCacheStorage
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from tests.s3.server import OutageProxy, S3Server, s3_environment

BUCKET = "outage-tests"
_prefixes = itertools.count()
_FAST = {"config_kwargs": {"retries": {"max_attempts": 1}}}
"""A stopped server fails a request at once instead of after botocore's retries."""


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    running = S3Server(bucket=BUCKET)
    yield running
    running.start()
    running.stop()


@pytest.fixture(scope="module")
def proxy(server: S3Server) -> Iterator[OutageProxy]:
    """One endpoint for the module. s3fs keeps one filesystem per set of options, whatever
    the environment says, so those made here are forgotten before and after."""
    S3FileSystem.clear_instance_cache()
    front = OutageProxy(server.port)
    yield front
    front.down()
    S3FileSystem.clear_instance_cache()


@pytest.fixture(autouse=True)
def _running(server: S3Server, proxy: OutageProxy) -> None:
    """Each case starts with the server up."""
    _back(server, proxy)


@pytest.fixture
def url(proxy: OutageProxy, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    for key, value in s3_environment(proxy.endpoint):
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ASKCACHE_LOCAL_COPY_DIR", str(tmp_path / "local-copy"))
    return f"s3://{BUCKET}/outage-{next(_prefixes)}-{tmp_path.name}"


class _StopsTheServer(FsspecCacheStorage):
    """The run's storage: it stops the server just before its ``at``-th write (``create``,
    ``write`` or ``delete``); ``at`` past the run's writes stops nothing."""

    def __init__(self, url: str, stop: Any, at: int) -> None:
        super().__init__(url, storage_options=dict(_FAST), local_copy_dir=None)
        self._stop, self._at, self.writes = stop, at, 0

    def _count(self) -> None:
        self.writes += 1
        if self.writes == self._at:
            self._stop()

    def create(self, name: str, data: bytes) -> None:
        self._count()
        super().create(name, data)

    def write(self, name: str, data: bytes) -> None:
        self._count()
        super().write(name, data)

    def delete(self, name: str) -> None:
        self._count()
        super().delete(name)


def _settings(url: str, user: str, **caching: Any) -> CachingSettings:
    return CachingSettings(
        cache_dir=url,
        writing_settings=CacheWritingSettings(filename="login.json", parameters={"user": user}),
        execution_settings=CacheExecutionSettings(
            parameter_values={"user": user}, settle_quiet_period=0.2, settle_timeout=1
        ),
        **caching,
    )


def _act(
    user: str, url: str, *, layout: str = "default", storage: Any = None, **kw: Any
) -> tuple[ActResult, SimulatedFormApp, int]:
    app = SimulatedFormApp(layout=layout)  # type: ignore[arg-type]
    with MessagesApiStandIn(FormFillingScript(app, user)) as api:
        result = Agent(api.client(), [ComputerTool(app)], storage=storage).act(
            f"Log in as {user}", _settings(url, user, **kw)
        )
        calls = len(api.requests)
    return result, app, calls


def _stop(server: S3Server, proxy: OutageProxy) -> None:
    proxy.down()
    server.stop()


def _back(server: S3Server, proxy: OutageProxy) -> None:
    server.start()
    proxy.up()


Case = tuple[Literal["stopped", "cut"], Any, Literal["sync", "next run"]]
WRITES = 10
"""The writes of the run that heals, in order: 1 the lock of the trajectory's versions, 2 the
recording archived as version 1, 3 the commit journal, 4 version 2, 5 the trajectory,
6 removing the journal, 7 the trajectory's entry in the cache-file index (``list``),
8 releasing the lock, 9 the "healed" ledger entry, 10 the "replay" ledger entry."""
CASES: list[Case] = [
    *(("stopped", at, "sync" if at % 2 else "next run") for at in range(1, WRITES + 2)),
    ("cut", b"/v000001.json", "next run"),  # during the archive
    ("cut", b"/v000002.json", "sync"),  # during the new version
    ("cut", b"/login.json HTTP", "next run"),  # during the trajectory's write
    ("cut", b"/.ledger/", "sync"),  # during the first ledger entry
]
"""Stopped before each write (``WRITES + 1``: after the last one), or cut in the middle of
one."""


@pytest.mark.parametrize(
    ("how", "where", "then"), CASES, ids=[f"{c[0]}-{c[1]!r}-{c[2]}" for c in CASES]
)
def test_an_outage_at_any_write_loses_no_heal_and_no_ledger_entry(
    *, how: str, where: Any, then: str, url: str, server: S3Server, proxy: OutageProxy
) -> None:
    recorded, _, _ = _act("alice", url, strategy="record")
    assert recorded.conversation.recorded_file == "login.json"
    shared = FsspecCacheStorage(url, local_copy_dir=None)
    original = shared.read("login.json")
    if how == "stopped":
        storage = _StopsTheServer(url, lambda: _stop(server, proxy), at=where)
    else:
        storage = FsspecCacheStorage(url, storage_options=dict(_FAST), local_copy_dir=None)
        proxy.cut_put(where)
    run, app, calls = _act("bob", url, layout="banner", storage=storage)
    assert run.status == "done"
    assert app.saved == [{"name": "bob", "email": ""}]
    assert run.replay is not None
    assert run.replay.status == "handed_back"
    assert calls > 0
    if how == "cut":
        assert proxy.cut.is_set()
        server.stop()
    outage = not (how == "stopped" and where == WRITES + 1)
    if not outage:
        assert isinstance(storage, _StopsTheServer)
        assert storage.writes == WRITES  # the matrix covers every write of the run
    kinds = sorted(kept.item.kind for kept in run.kept_locally)
    assert (run.shared, bool(kinds)) == (not outage, outage)
    # what the result says was written, and what it says was kept, add up to every write
    assert int(run.heal is not None) + kinds.count("heal") == 1  # written or kept, once
    assert len(run.ledger_entries) <= 1  # the replay's entry, when it was written

    _back(server, proxy)
    # no result reports a write that did not happen
    for name in run.ledger_entries:
        assert shared.exists(name)
    if run.heal is not None:
        assert shared.exists(run.heal.version)
    if then == "sync":
        assert main(["sync", "--cache-dir", url]) == 0
    else:
        again, other, again_calls = _act("carol", url, layout="banner")
        assert [kept.path.name for kept in again.synced] == sorted(
            kept.path.name for kept in run.kept_locally
        )
        assert again.shared
        assert other.saved == [{"name": "carol", "email": ""}]
        assert (again_calls, again.replay and again.replay.status) == (0, "completed")
    assert Outbox(None, url).pending() == []

    versions = TrajectoryVersions(shared, "login.json")
    assert versions.numbers() == [1, 2]
    assert versions.proposals() == []
    assert shared.read(versions.version_name(1)) == original
    assert shared.read("login.json") == shared.read(versions.version_name(2)) != original
    records = open_ledger(shared).records("login.json")
    healed = [r for r in records if r.event == "healed"]
    assert [(r.version, r.model_calls) for r in healed] == [
        (versions.version_name(2), run.model_calls)
    ]
    handed_back = [r for r in records if r.event == "replay" and r.status == "handed_back"]
    assert len(handed_back) == 1
    assert len(records) == (2 if then == "sync" else 3)
    assert main(["sync", "--cache-dir", url]) == 0  # sending again sends nothing twice
    assert len(open_ledger(shared).records("login.json")) == len(records)


def test_recording_into_a_missing_bucket_fails_before_any_model_call(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = "s3://no-such-bucket-askcache/prefix"
    with pytest.raises(StorageUnwritableError, match="no-such-bucket-askcache") as info:
        _act("alice", missing, strategy="record")
    assert "does not exist" in str(info.value)
    assert "\n" not in str(info.value)
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, "alice")) as api:
        with pytest.raises(StorageUnwritableError):
            Agent(api.client(), [ComputerTool(app)]).act(
                "Log in as alice", _settings(missing, "alice", strategy="record")
            )
        assert api.requests == []  # no token spent
    assert app.saved == []
