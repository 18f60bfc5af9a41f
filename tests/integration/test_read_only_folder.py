"""A local cache folder that cannot be written: the preflight refuses a run that would heal
into it before any model call; a folder that turns read-only during a run keeps the heal and
the ledger entry in the outbox, and ``askcache sync`` sends them once it is writable again;
so does a full disk (a 2 MiB tmpfs filled to the last byte) once there is room. A recording
whose disk fills while the model works is kept in the outbox (on another disk) or, with the
outbox on the same full disk, comes back on the error: never lost in silence.

The folder is made read-only for real: a read-only bind mount when the tests run as root
(root writes through permissions), its permissions otherwise.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from askcache import (
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
    open_ledger,
)
from askcache.agent.act import ActResult
from askcache.cli.app import main
from askcache.foundation.errors import RecordingNotStoredError, StorageUnwritableError
from askcache.loop import LoopReplay
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.outbox import Outbox
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from tests.integration.test_own_loop import sampling_loop

pytestmark = pytest.mark.integration


class _ReadOnly:
    """Turns a folder read-only and back (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.mounted = False

    def on(self) -> None:
        if os.geteuid() != 0:
            for path in [self.folder, *self.folder.rglob("*")]:
                if path.is_dir():
                    path.chmod(0o555)
            return
        for command in (
            ["mount", "--bind", str(self.folder), str(self.folder)],
            ["mount", "-o", "remount,bind,ro", str(self.folder)],
        ):
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                self.off()
                pytest.skip(f"cannot make a read-only folder: {done.stderr.strip()}")
            self.mounted = True

    def off(self) -> None:
        if self.mounted:
            subprocess.run(["umount", str(self.folder)], check=True)
            self.mounted = False
        elif os.geteuid() != 0:
            for path in [self.folder, *self.folder.rglob("*")]:
                if path.is_dir():
                    path.chmod(0o755)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[_ReadOnly]:
    switch = _ReadOnly(tmp_path / "cache")
    yield switch
    with contextlib.suppress(subprocess.CalledProcessError):
        switch.off()


def _settings(cache: Path, user: str, **caching: Any) -> CachingSettings:
    return CachingSettings(
        cache_dir=cache,
        writing_settings=CacheWritingSettings(filename="login.json", parameters={"user": user}),
        execution_settings=CacheExecutionSettings(
            parameter_values={"user": user}, settle_quiet_period=0.2, settle_timeout=1
        ),
        **caching,
    )


def _record(cache: Path) -> None:
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, "alice")) as api:
        Agent(api.client(), [ComputerTool(app)]).act(
            "Log in as alice", _settings(cache, "alice", strategy="record")
        )


def test_a_run_that_may_heal_into_a_read_only_folder_is_refused_before_any_model_call(
    tmp_path: Path, read_only: _ReadOnly
) -> None:
    cache = tmp_path / "cache"
    _record(cache)
    read_only.on()
    app = SimulatedFormApp(layout="banner")
    with MessagesApiStandIn(FormFillingScript(app, "bob")) as api:
        with pytest.raises(StorageUnwritableError, match=str(cache)) as info:
            Agent(api.client(), [ComputerTool(app)]).act("Log in as bob", _settings(cache, "bob"))
        assert api.requests == []
    assert "\n" not in str(info.value)
    assert app.saved == []


def test_a_folder_that_turns_read_only_during_a_run_loses_nothing(
    tmp_path: Path, read_only: _ReadOnly, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    _record(cache)
    storage = LocalCacheStorage(cache)
    recorded = storage.read("login.json")
    app = SimulatedFormApp(layout="banner")
    script = FormFillingScript(app, "bob")
    calls: list[int] = []

    def model(body: dict[str, Any]) -> Any:
        if not calls:
            read_only.on()  # at the first model call: after the preflight, before any write
        calls.append(1)
        return script(body)

    with MessagesApiStandIn(model) as api:
        run = Agent(api.client(), [ComputerTool(app)]).act("Log in as bob", _settings(cache, "bob"))
    assert run.status == "done"
    assert app.saved == [{"name": "bob", "email": ""}]
    assert (run.heal, run.ledger_entries, run.shared) == (None, [], False)
    assert sorted(k.item.kind for k in run.kept_locally) == ["heal", "ledger_entry"]
    assert storage.read("login.json") == recorded
    read_only.off()
    assert main(["sync", "--cache-dir", str(cache), "--list"]) == 0
    assert "2 writes kept locally" in capsys.readouterr().out
    assert main(["sync", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "healed: .versions/login.json/v000002.json" in out
    assert Outbox(None, storage.destination()).pending() == []
    versions = TrajectoryVersions(storage, "login.json")
    assert versions.numbers() == [1, 2]
    assert storage.read("login.json") == storage.read(versions.version_name(2)) != recorded
    events = sorted(r.event for r in open_ledger(storage).records("login.json"))
    assert events == ["healed", "replay"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB file system of its own (tmpfs; needs root)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system: {done.stderr.strip()}")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def _fill(folder: Path) -> Path:
    """Fill the file system up to the last byte."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_keeps_the_heal_and_the_entry_until_there_is_room(
    small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = small_disk / "cache"
    _record(cache)
    storage = LocalCacheStorage(cache)
    recorded = storage.read("login.json")
    filler = _fill(small_disk)
    app = SimulatedFormApp(layout="banner")
    with MessagesApiStandIn(FormFillingScript(app, "bob")) as api:
        run = Agent(api.client(), [ComputerTool(app)]).act("Log in as bob", _settings(cache, "bob"))
    assert app.saved == [{"name": "bob", "email": ""}]
    assert (run.heal, run.ledger_entries, run.shared) == (None, [], False)
    assert sorted(k.item.kind for k in run.kept_locally) == ["heal", "ledger_entry"]
    full = ("No space left on device", "database or disk is full")  # the storage's, SQLite's
    assert all(any(says in k.item.reason for says in full) for k in run.kept_locally), [
        k.item.reason for k in run.kept_locally
    ]
    lines = run.not_shared_lines()  # what a printed summary says
    assert len(lines) == 2
    assert lines[0].startswith("kept locally, not yet shared: heal of login.json (steps ")
    assert all("askcache sync" in line for line in lines)
    assert storage.read("login.json") == recorded
    filler.unlink()
    assert main(["sync", "--cache-dir", str(cache)]) == 0
    assert "2 sent" in capsys.readouterr().out
    versions = TrajectoryVersions(storage, "login.json")
    assert versions.numbers() == [1, 2]
    assert storage.read("login.json") == storage.read(versions.version_name(2)) != recorded
    events = sorted(r.event for r in open_ledger(storage).records("login.json"))
    assert events == ["healed", "replay"]


def _record_onto_a_disk_that_fills(
    disk: Path, cache: Path, **caching: Any
) -> tuple[RecordingNotStoredError, SimulatedFormApp]:
    """Record the login on the stand-in model; the disk fills at the model's first call (the
    preflight has passed, no write has been made). Returns the error the recording raised."""
    app = SimulatedFormApp()
    script = FormFillingScript(app, "alice")
    filled: list[Path] = []

    def model(body: dict[str, Any]) -> Any:
        if not filled:
            filled.append(_fill(disk))
        return script(body)

    with MessagesApiStandIn(model) as api, pytest.raises(RecordingNotStoredError) as info:
        Agent(api.client(), [ComputerTool(app)]).act(
            "Log in as alice", _settings(cache, "alice", strategy="record", **caching)
        )
    assert app.saved == [{"name": "alice", "email": ""}]  # the model did the whole task
    return info.value, app


def test_a_recording_on_a_full_disk_is_kept_in_the_outbox_until_there_is_room(
    small_disk: Path, outbox_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = small_disk / "cache"
    storage = LocalCacheStorage(cache)
    error, _ = _record_onto_a_disk_that_fills(small_disk, cache)  # the outbox: another disk
    message = str(error)
    assert "\n" not in message
    assert message.startswith(f"the recording 'login.json' could not be written to {cache}")
    assert "No space left on device" in message
    kept = Outbox(None, storage.destination()).pending()
    assert [k.item.kind for k in kept] == ["recording"]
    assert error.kept_at == kept[0].path
    assert kept[0].path.is_relative_to(outbox_dir)
    assert f"kept in the outbox at {kept[0].path}" in message
    assert f"`askcache sync --cache-dir {storage.destination()}` sends it" in message
    assert isinstance(error.result, ActResult)
    assert error.result.status == "done"
    assert error.result.conversation.recorded_file is None  # nothing claims it was written
    assert error.result.shared is False
    assert error.result.kept_locally == [error.kept]
    assert error.result.not_shared_lines()[0].startswith(
        "kept locally, not yet shared: recording of login.json"
    )
    assert not storage.exists("login.json")
    (small_disk / "filler").unlink()
    assert main(["sync", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "sent: recording of login.json" in out
    assert "recorded (created): login.json" in out
    assert storage.read("login.json") == error.recording
    calls = sum(len(m.tool_uses) for m in error.result.conversation.messages)
    assert len(load_cache_file(storage, "login.json").trajectory) == calls
    assert Outbox(None, storage.destination()).pending() == []
    assert main(["sync", "--cache-dir", str(cache)]) == 0  # sending again adds nothing
    assert "0 sent" in capsys.readouterr().out
    assert TrajectoryVersions(storage, "login.json").numbers() == []
    # the kept recording replays: no model call
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, "carol")) as api:
        run = Agent(api.client(), [ComputerTool(app)]).act(
            "Log in as carol", _settings(cache, "carol", strategy="execute")
        )
        assert api.requests == []
    assert run.replay is not None
    assert run.replay.status == "completed"
    assert app.saved == [{"name": "carol", "email": ""}]


def test_a_recording_on_a_full_disk_with_the_outbox_on_it_comes_back_on_the_error(
    small_disk: Path,
) -> None:
    cache = small_disk / "cache"
    outbox = small_disk / "outbox"
    error, _ = _record_onto_a_disk_that_fills(small_disk, cache, outbox_dir=outbox)
    message = str(error)
    assert "\n" not in message
    assert "No space left on device" in message
    assert "nothing could be kept" in message
    assert f"outbox {outbox}" in message
    assert "is only on this error" in message
    assert error.kept_at is None
    assert Outbox(outbox, LocalCacheStorage(cache).destination()).pending() == []
    assert not LocalCacheStorage(cache).exists("login.json")
    # the caller has the recording: it is the whole cache file, ready to be stored elsewhere
    elsewhere = LocalCacheStorage(small_disk.parent / "elsewhere")
    elsewhere.write("login.json", error.recording)
    assert len(load_cache_file(elsewhere, "login.json").trajectory) >= 4
    assert isinstance(error.result, ActResult)
    assert error.result.status == "done"
    assert error.result.shared is False
    assert len(error.result.not_written) == 1
    assert error.result.not_written[0].startswith("recording of login.json: No space left")


def test_a_recording_of_the_users_own_loop_on_a_full_disk_is_kept_too(small_disk: Path) -> None:
    cache = small_disk / "cache"
    storage = LocalCacheStorage(cache)
    app = SimulatedFormApp()
    script = FormFillingScript(app, "alice")
    filled: list[Path] = []

    def model(body: dict[str, Any]) -> Any:
        if not filled:
            filled.append(_fill(small_disk))
        return script(body)

    messages: list[dict[str, Any]] = [{"role": "user", "content": "Log in as alice"}]
    replay = LoopReplay("login.json", messages, settings=_settings(cache, "alice"))
    with MessagesApiStandIn(model) as api:
        sampling_loop(api.client(), app, messages, replay)
    with pytest.raises(RecordingNotStoredError) as info:
        replay.done(messages)
    assert "\n" not in str(info.value)
    assert "No space left on device" in str(info.value)
    assert info.value.kept_at is not None
    assert replay.done(messages) is info.value.result  # nothing is written twice
    assert [k.item.kind for k in Outbox(None, storage.destination()).pending()] == ["recording"]
    filled[0].unlink()
    assert main(["sync", "--cache-dir", str(cache)]) == 0
    assert storage.read("login.json") == info.value.recording
