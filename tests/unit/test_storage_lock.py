"""The lock of a trajectory's versions and the journal of a commit (the kill -9 matrix over a
real heal: tests/s3/test_heal_crashes.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from askcache.cli.app import main
from askcache.foundation.errors import StorageLockBusyError, StorageLockLostError
from askcache.heal.trajectory import healed_bytes
from askcache.storage import versions as versions_module
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.lock import LockOwner, StorageLock, local_identity, process_start_time
from askcache.storage.versions import CommitJournal, TrajectoryVersions
from tests.helpers import record_form

FOLDER = ".versions/t.json"


def _lock(storage: LocalCacheStorage, **owner: object) -> str:
    """A lock object as another process of this PID namespace would have left it (of
    another machine, with its own boot id, when ``host`` names another one)."""
    now = datetime.now(UTC)
    boot_id, namespace = local_identity()
    if owner.get("host", socket.gethostname()) != socket.gethostname():
        boot_id = f"boot of {owner['host']}"
    fields: dict[str, object] = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": process_start_time(os.getpid()),
        "acquired_at": now,
        "expires_at": now + timedelta(minutes=2),
        "boot_id": boot_id,
        "pid_namespace": namespace,
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


@pytest.mark.parametrize(
    "owner",
    [
        {"pid_namespace": 1},  # a container sharing this host name, in its own PID namespace
        {"boot_id": "another-machine"},  # a cloned VM that kept the image's host name
        {"boot_id": None, "pid_namespace": None},  # an older askcache: no identity written
    ],
    ids=["other-namespace", "other-machine", "no-identity"],
)
def test_a_lock_of_another_namespace_with_this_host_name_is_judged_by_its_lease_only(
    storage: LocalCacheStorage, two: tuple[bytes, bytes], owner: dict[str, object]
) -> None:
    old, new = two
    _lock(storage, pid=2**22 + 1, **owner)  # its process id is free *here*, not there
    versions = TrajectoryVersions(storage, "t.json", lock_wait=0)
    assert versions.commit(old, new) is None
    assert storage.read("t.json") == old
    assert versions.numbers() == []


def _take_over_at(point: str, take_over: Callable[[TrajectoryVersions], None]) -> None:
    """Set the commit seam to call ``take_over`` once, at ``point``."""

    def hook(at: str) -> None:
        if at == point:
            versions_module.commit_point_hook = None
            take_over(TrajectoryVersions(LocalCacheStorage(_ROOT[0]), "t.json"))

    versions_module.commit_point_hook = hook


_ROOT: list[str] = []


@pytest.fixture
def seam(storage: LocalCacheStorage) -> Iterator[None]:
    _ROOT[:] = [str(storage.directory)]
    yield
    versions_module.commit_point_hook = None


def _steal(versions: TrajectoryVersions) -> None:
    """Another process takes the lock over (it judged this one's lease run out) and keeps
    it: this holder's lock object is deleted and the other's is there."""
    for name in versions.lock.owners():
        versions.storage.delete(name)
    _lock(versions.storage, host="other", pid=1, boot_id="other")


@pytest.mark.parametrize("point", ["locked", "archived", "journaled", "created"])
@pytest.mark.usefixtures("seam")
def test_a_holder_that_lost_its_lock_is_refused_before_it_writes(
    storage: LocalCacheStorage, two: tuple[bytes, bytes], point: str
) -> None:
    old, new = two
    versions = TrajectoryVersions(storage, "t.json", lock_wait=0)
    _take_over_at(point, _steal)
    with pytest.raises(StorageLockLostError, match="another process took the lock over"):
        versions.rollback("current") if point == "locked" else versions._append(new)
    assert storage.read("t.json") == old
    _take_over_at(point, _steal)
    assert versions.commit(old, new) is None  # a heal keeps its fix as a proposal


@pytest.mark.usefixtures("seam")
def test_a_version_made_first_by_another_commit_refuses_this_one(
    storage: LocalCacheStorage, two: tuple[bytes, bytes]
) -> None:
    old, new = two

    def other_commit(versions: TrajectoryVersions) -> None:  # without the lock: the fence
        versions.storage.create(versions.version_name(2), b"theirs")
        versions.storage.write("t.json", b"theirs")

    versions = TrajectoryVersions(storage, "t.json", lock_wait=0)
    _take_over_at("journaled", other_commit)
    assert versions.commit(old, new) is None
    assert storage.read("t.json") == b"theirs"
    assert storage.read(versions.version_name(2)) == b"theirs"


def test_a_holder_yields_to_a_lock_taken_after_it_that_stays(
    storage: LocalCacheStorage,
) -> None:
    lock = StorageLock(storage, FOLDER, sleep=lambda _: None)
    assert lock.try_acquire() is None
    lock.check_held()  # alone: held
    _lock(storage, host="other", pid=1, boot_id="other")  # taken after it, and kept
    with pytest.raises(StorageLockLostError, match=r"other pid 1 since .* kept it"):
        lock.check_held()
