"""kill -9 at every point of a heal's commit, in a local folder and on S3 (moto): the
trajectory is always the old or the new one, and the next heal commits.

A child process heals ``login.json`` and stops at one point of the commit
(``askcache.storage.versions.commit_point_hook``); the test waits for it to say so, kills it with
SIGKILL and looks at what it left."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from askcache.cachefile.parse import parse_cache_file
from askcache.storage.remote import storage_for
from askcache.storage.versions import COMMIT_POINTS, CommitPoint, TrajectoryVersions
from tests.s3.heal_runs import heal_run

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["local", "s3"])
def cache_dir(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "s3":
        return str(request.getfixturevalue("s3_url"))
    return str(tmp_path / "cache")


def _kill_at(cache_dir: str, point: CommitPoint) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.s3.heal_worker", cache_dir, point],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()  # the child's signal: it is blocked at the point
    if line != f"paused at {point}\n":
        child.kill()
        _, err = child.communicate()
        pytest.fail(f"the child did not stop at {point}: {line!r}\n{err}")
    child.kill()  # SIGKILL
    child.communicate()
    assert child.returncode == -9


@pytest.mark.parametrize("point", COMMIT_POINTS)
def test_kill_9_at_each_point_of_a_heals_commit_leaves_the_old_or_new_trajectory(
    cache_dir: str, point: CommitPoint
) -> None:
    heal_run(cache_dir, "original", "alice", strategy="record")
    storage = storage_for(cache_dir)
    recorded = storage.read("login.json")
    _kill_at(cache_dir, point)

    left = storage.read("login.json")
    parse_cache_file(left, "login.json")  # whole and loadable
    versions = TrajectoryVersions(storage, "login.json")
    took_effect = COMMIT_POINTS.index(point) >= COMMIT_POINTS.index("replaced")
    if took_effect:
        assert left != recorded
        assert left == storage.read(versions.version_name(2))  # the new one, whole
    else:
        assert left == recorded  # the old one

    # the next heal commits (the Save and Clear buttons swapped: a hand-back either way; with
    # no search, which would find Save where it moved and leave nothing to heal)
    later = heal_run(cache_dir, "swapped", "carol", search_radius=0)
    assert later.heal is not None
    assert later.heal.event == "healed"
    numbers = versions.numbers()
    assert numbers == ([1, 2, 3] if took_effect else [1, 2])
    assert storage.read(versions.version_name(1)) == recorded
    assert storage.read("login.json") == storage.read(versions.version_name(numbers[-1]))
    assert later.heal.version == versions.version_name(numbers[-1])
    assert versions.proposals() == []
    assert not storage.exists(versions.journal)
    assert versions.lock.owners() == {}  # the killed process's lock was taken over
