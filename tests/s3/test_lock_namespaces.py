"""Two containers that share a host name, each in its own PID namespace (``unshare``), heal
one trajectory at once, in a local folder and on S3 (moto): the second never takes the
first's live lock, and the first, once it lost the lock (its lease ran out and the second
took it over), writes nothing and keeps its heal as a proposal."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from askcache.storage.remote import storage_for
from askcache.storage.versions import TrajectoryVersions
from tests.s3.heal_runs import heal_run

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
LEASE_OVER = 10_000
"""Seconds the second machine's clock runs ahead: far past the first's lease."""


@pytest.fixture(scope="module")
def unshare() -> list[str]:
    """The command that runs a program as the first process of a new PID namespace (with its
    own /proc); skipped where this machine does not permit it."""
    command = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    tried = subprocess.run([*command, "true"], capture_output=True, text=True, check=False)
    if tried.returncode != 0:
        pytest.skip(f"new PID namespaces are not permitted here: {tried.stderr.strip()}")
    return command


@pytest.fixture(params=["local", "s3"])
def cache_dir(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "s3":
        return str(request.getfixturevalue("s3_url"))
    return str(tmp_path / "cache")


@pytest.fixture
def start(unshare: list[str], cache_dir: str) -> Iterator[Callable[..., Machine]]:
    """Starts workers on ``cache_dir``; any still running at the test's end are killed (with
    unshare's ``--kill-child`` their whole namespace goes)."""
    started: list[Machine] = []

    def machine(layout: str, user: str, *, point: str = "-", ahead: int = 0) -> Machine:
        started.append(Machine(unshare, cache_dir, layout, user, point=point, ahead=ahead))
        started[-1].identify()
        return started[-1]

    yield machine
    for each in started:
        each.stop()


class Machine:
    """One worker (tests/s3/lock_worker.py) in its own PID namespace: ``sh`` is its first
    process, the worker its second, as in a container."""

    def __init__(
        self, unshare: list[str], cache_dir: str, layout: str, user: str, *, point: str, ahead: int
    ) -> None:
        worker = [sys.executable, "-m", "tests.s3.lock_worker", cache_dir, layout, user, point]
        self.process = subprocess.Popen(
            [*unshare, "sh", "-c", '"$@"; exit $?', "sh", *worker, str(ahead)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.host = self.pid = self.namespace = ""

    def identify(self) -> None:
        """Read the worker's first line: its host name, process id and PID namespace."""
        _, self.host, self.pid, self.namespace = self._line().split()

    def stop(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            self.process.communicate()

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            pytest.fail(f"the worker ended early: {self.process.communicate()[1]}")
        return line.strip()

    def paused_at(self, point: str) -> None:
        line = self._line()
        if line != f"paused at {point}":
            pytest.fail(f"the worker did not stop at {point}: {line!r}")

    def finish(self, go: str = "") -> tuple[dict[str, object], str]:
        out, err = self.process.communicate(go)
        assert self.process.returncode == 0, err
        return json.loads(out.strip().splitlines()[-1]), err


def test_a_container_with_the_same_host_name_never_takes_a_live_lock(
    start: Callable[..., Machine], cache_dir: str
) -> None:
    heal_run(cache_dir, "original", "alice", strategy="record")
    storage = storage_for(cache_dir)
    recorded = storage.read("login.json")
    first = start("banner", "bob", point="locked")
    first.paused_at("locked")  # it holds the lock
    second = start("swapped", "carol")
    assert (second.host, second.pid) == (first.host, first.pid)  # the same host name and pid
    assert second.namespace != first.namespace
    waited, _ = second.finish()
    assert waited["heal"] == "proposed"  # it waited for the lock, then kept its heal aside
    assert "is locked by" in str(waited["reason"])
    assert storage.read("login.json") == recorded
    done, _ = first.finish("go\n")
    assert done["heal"] == "healed"
    versions = TrajectoryVersions(storage, "login.json")
    assert versions.numbers() == [1, 2]
    assert storage.read("login.json") == storage.read(versions.version_name(2))
    assert versions.proposals() == [waited["version"]]
    assert versions.lock.owners() == {}


@pytest.mark.parametrize("point", ["archived", "created"])
def test_a_holder_that_lost_its_lock_writes_nothing_and_keeps_its_heal_as_a_proposal(
    start: Callable[..., Machine], cache_dir: str, point: str
) -> None:
    heal_run(cache_dir, "original", "alice", strategy="record")
    storage = storage_for(cache_dir)
    first = start("banner", "bob", point=point)
    first.paused_at(point)  # it holds the lock, and stalls past its lease
    second = start("swapped", "carol", ahead=LEASE_OVER)
    took_over, _ = second.finish()
    assert took_over["heal"] == "healed"
    versions = TrajectoryVersions(storage, "login.json")
    theirs = storage.read("login.json")
    assert theirs == storage.read(versions.version_name(2))
    assert took_over["version"] == versions.version_name(2)

    lost, err = first.finish("go\n")  # the first wakes up and comes to write
    assert lost["heal"] == "proposed"
    assert "no longer holds the lock" in str(lost["reason"])
    assert "no longer holds the lock" in err
    assert storage.read("login.json") == theirs  # not overwritten
    assert versions.numbers() == [1, 2]
    assert storage.read(versions.version_name(2)) == theirs
    assert versions.proposals() == [lost["version"]]
    assert storage.read(str(lost["version"])) != theirs
    assert not storage.exists(versions.journal)
