"""The lock of a trajectory's versions and the journal of a commit (the kill -9 matrix over a
real heal: tests/s3/test_heal_crashes.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from askcache.cli.app import main
from askcache.errors import StorageLockBusyError
from askcache.heal.trajectory import healed_bytes
from askcache.storage.base import LocalCacheStorage, load_cache_file
from askcache.storage.lock import LockOwner, StorageLock, process_start_time
from askcache.storage.versions import CommitJournal, TrajectoryVersions
from tests.helpers import record_form

FOLDER = ".versions/t.json"


def _lock(storage: LocalCacheStorage, **owner: object) -> str:
    """A lock object as another process would have left it."""
    now = datetime.now(UTC)
    fields: dict[str, object] = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": process_start_time(os.getpid()),
        "acquired_at": now,
        "expires_at": now + timedelta(minutes=2),
    }
    fields.update(owner)
    name = f"{FOLDER}/lock-{uuid.uuid4().hex}.json"
    storage.create(name, LockOwner.model_validate(fields).model_dump_json().encode())
    return name


def _dead_pid() -> int:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(child.stdout)


@pytest.fixture
def two(storage: LocalCacheStorage) -> tuple[bytes, bytes]:
    """``t.json`` recorded, and a changed version of it."""
    record_form(storage, "t.json")
    changed = load_cache_file(storage, "t.json")
    changed.metadata.goal = "Fill the form again"
    return storage.read("t.json"), healed_bytes(changed)


@pytest.mark.parametrize(
    "owner",
    [
        {"pid": 2**22 + 1},  # no such process (above Linux's highest process id)
        {"started": -1},  # the id now belongs to a process started at another time
        {"host": "elsewhere", "expires_at": datetime.now(UTC) - timedelta(seconds=1)},
        {"released": True},  # released where the storage could not delete
    ],
    ids=["process-gone", "pid-reused", "lease-expired", "released"],
)
def test_a_lock_whose_owner_is_gone_is_taken_over(
    storage: LocalCacheStorage, two: tuple[bytes, bytes], owner: dict[str, object]
) -> None:
    old, new = two
    stale = _lock(storage, **owner)
    versions = TrajectoryVersions(storage, "t.json", lock_wait=0)
    assert versions.commit(old, new) == 2
    assert storage.read("t.json") == new
    assert not storage.exists(stale)
    assert versions.lock.owners() == {}


def test_a_lock_of_a_process_that_was_killed_is_taken_over(
    storage: LocalCacheStorage, two: tuple[bytes, bytes]
) -> None:
    old, new = two
    _lock(storage, pid=_dead_pid())
    assert TrajectoryVersions(storage, "t.json", lock_wait=0).commit(old, new) == 2


@pytest.mark.parametrize(
    "owner", [{}, {"host": "elsewhere", "pid": 1, "started": None}], ids=["here", "elsewhere"]
)
def test_a_live_lock_blocks_changes_and_names_its_owner(
    storage: LocalCacheStorage,
    two: tuple[bytes, bytes],
    owner: dict[str, object],
    capsys: pytest.CaptureFixture[str],
) -> None:
    old, new = two
    held = _lock(storage, **owner)
    versions = TrajectoryVersions(storage, "t.json", lock_wait=0)
    assert versions.commit(old, new) is None  # a heal keeps its fix as a proposal
    assert storage.read("t.json") == old
    assert versions.numbers() == []
    with pytest.raises(StorageLockBusyError) as busy:
        versions.rollback("current")
    host = owner.get("host", socket.gethostname())
    assert f"{host} pid {owner.get('pid', os.getpid())} since" in str(busy.value)
    storage.delete(held)
    assert versions.commit(old, new) == 2


def test_two_holders_never_hold_the_lock_at_once(storage: LocalCacheStorage) -> None:
    first, second = StorageLock(storage, FOLDER), StorageLock(storage, FOLDER)
    assert first.try_acquire() is None
    assert first.held
    other = second.try_acquire()
    assert other is not None
    assert other.pid == os.getpid()
    assert not second.held
    first.release()
    assert second.try_acquire() is None
    assert len(second.owners()) == 1


def test_a_storage_that_cannot_delete_marks_its_lock_released(
    two: tuple[bytes, bytes], storage: LocalCacheStorage
) -> None:
    class NoDelete(LocalCacheStorage):
        def delete(self, name: str) -> None:
            raise NotImplementedError

    kept = NoDelete(storage.directory)
    old, new = two
    versions = TrajectoryVersions(kept, "t.json", lock_wait=0)
    assert versions.commit(old, new) == 2
    owners = list(versions.lock.owners().values())
    assert [owner.released for owner in owners if owner] == [True]
    assert versions.rollback() == 3  # the released lock does not block


def _journal(storage: LocalCacheStorage, version: int, new: bytes, old: bytes) -> None:
    import hashlib

    journal = CommitJournal(
        version=version,
        new_sha256=hashlib.sha256(new).hexdigest(),
        old_sha256=hashlib.sha256(old).hexdigest(),
    )
    storage.write(f"{FOLDER}/commit.json", journal.model_dump_json().encode())


def test_a_journal_is_rolled_back_or_completed_and_never_deletes_a_version_in_use(
    storage: LocalCacheStorage, two: tuple[bytes, bytes]
) -> None:
    old, new = two
    versions = TrajectoryVersions(storage, "t.json")
    storage.create(versions.version_name(1), old)
    # killed after creating version 2, before replacing: version 2 is undone
    storage.create(versions.version_name(2), new)
    _journal(storage, 2, new, old)
    versions.recover()
    assert versions.numbers() == [1]
    assert storage.read("t.json") == old
    assert not storage.exists(versions.journal)
    # killed after replacing: only the journal goes
    storage.create(versions.version_name(2), new)
    storage.write("t.json", new)
    _journal(storage, 2, new, old)
    versions.recover()
    assert versions.numbers() == [1, 2]
    assert storage.read("t.json") == new
    # the trajectory was re-recorded since, without the lock: every version is kept
    _journal(storage, 2, new, old)
    storage.write("t.json", b"re-recorded")
    versions.recover()
    assert versions.numbers() == [1, 2]
    # an unreadable journal is removed
    storage.write(versions.journal, b"{not json")
    versions.recover()
    assert not storage.exists(versions.journal)


def test_the_cli_says_who_holds_the_lock_in_one_line(
    storage: LocalCacheStorage, two: tuple[bytes, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = two
    TrajectoryVersions(storage, "t.json").commit(old, new)
    _lock(storage, host="ci-runner-7", pid=4242)
    before = storage.read("t.json")
    assert main(["rollback", "t", "--wait", "0", "--cache-dir", str(storage.directory)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "locked by ci-runner-7 pid 4242 since" in err
    assert storage.read("t.json") == before
    assert json.loads(before)["metadata"]["goal"] == "Fill the form again"
