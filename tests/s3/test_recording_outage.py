"""A recording on S3 whose server goes away while the model works: the recording is kept in
the local outbox (the one-line error says where, and the command that sends it), and the
next run of the same storage sends it before it looks for the trajectory, then replays it
with no model call.

The server is moto's on 127.0.0.1 behind a TCP proxy that closes every connection and
refuses new ones when it goes down (tests/s3/server.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from s3fs import S3FileSystem

from askcache import (
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.foundation.errors import RecordingNotStoredError
from askcache.storage.outbox import Outbox
from askcache.storage.remote import FsspecCacheStorage
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from tests.s3.server import OutageProxy, S3Server, s3_environment

BUCKET = "recording-outage"
_prefixes = itertools.count()
_FAST = {"config_kwargs": {"retries": {"max_attempts": 1}}}
"""A server gone fails a request at once instead of after botocore's retries."""


class _Outage:
    """moto behind the proxy: :meth:`down` takes both away (the proxy's connections closed,
    the server stopped), :meth:`up` brings them back on the same ports."""

    def __init__(self) -> None:
        self.server = S3Server(bucket=BUCKET)
        self.proxy = OutageProxy(self.server.port)

    def down(self) -> None:
        self.proxy.down()
        self.server.stop()

    def up(self) -> None:
        self.server.start()
        self.proxy.up()


@pytest.fixture(scope="module")
def outage() -> Iterator[_Outage]:
    """One server for the module; s3fs keeps one filesystem per set of options, whatever
    the environment says, so those made here are forgotten before and after."""
    S3FileSystem.clear_instance_cache()
    made = _Outage()
    yield made
    made.down()
    S3FileSystem.clear_instance_cache()


@pytest.fixture
def url(outage: _Outage, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    outage.up()
    for key, value in s3_environment(outage.proxy.endpoint):
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ASKCACHE_LOCAL_COPY_DIR", str(tmp_path / "local-copy"))
    return f"s3://{BUCKET}/recording-{next(_prefixes)}-{tmp_path.name}"


class _GoesDown(FsspecCacheStorage):
    """The recording's storage: the server goes away just before the trajectory is written
    (after the preflight, once the model has done the task)."""

    def __init__(self, url: str, outage: _Outage) -> None:
        super().__init__(url, storage_options=dict(_FAST), local_copy_dir=None)
        self._outage = outage

    def create(self, name: str, data: bytes) -> None:
        if name == "login.json":
            self._outage.down()
        super().create(name, data)

    def write(self, name: str, data: bytes) -> None:
        if name == "login.json":
            self._outage.down()
        super().write(name, data)


def _settings(url: str, user: str, **caching: Any) -> CachingSettings:
    return CachingSettings(
        cache_dir=url,
        writing_settings=CacheWritingSettings(filename="login.json", parameters={"user": user}),
        execution_settings=CacheExecutionSettings(
            parameter_values={"user": user}, settle_quiet_period=0.2, settle_timeout=1
        ),
        **caching,
    )


def test_a_recording_the_server_does_not_take_is_sent_by_the_next_run(
    url: str, outage: _Outage, outbox_dir: Path
) -> None:
    app = SimulatedFormApp()
    with (
        MessagesApiStandIn(FormFillingScript(app, "alice")) as api,
        pytest.raises(RecordingNotStoredError) as info,
    ):
        Agent(api.client(), [ComputerTool(app)], storage=_GoesDown(url, outage)).act(
            "Log in as alice", _settings(url, "alice", strategy="record")
        )
    assert app.saved == [{"name": "alice", "email": ""}]
    error = info.value
    message = str(error)
    assert "\n" not in message
    assert message.startswith(f"the recording 'login.json' could not be written to {url}/")
    kept = Outbox(None, url).pending()
    assert [k.item.kind for k in kept] == ["recording"]
    assert kept[0].path.is_relative_to(outbox_dir)
    assert f"kept in the outbox at {kept[0].path}: `askcache sync --cache-dir {url}`" in message

    outage.up()
    shared = FsspecCacheStorage(url, local_copy_dir=None)
    assert not shared.exists("login.json")
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, "carol")) as api:
        run = Agent(api.client(), [ComputerTool(app)]).act(
            "Log in as carol", _settings(url, "carol")
        )
        assert api.requests == []  # sent first, then replayed: no model call
    assert [k.item.kind for k in run.synced] == ["recording"]
    assert run.replay is not None
    assert run.replay.status == "completed"
    assert app.saved == [{"name": "carol", "email": ""}]
    assert shared.read("login.json") == error.recording
    assert Outbox(None, url).pending() == []
