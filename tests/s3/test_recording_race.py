"""Two first recordings of one name finishing at once on S3 (moto's server over HTTP): the
trajectory is created with a conditional ``PutObject`` (``If-None-Match: *``), so the second
becomes a version and neither is lost (tests/recording_race.py makes both reach the write
before either writes)."""

from __future__ import annotations

import threading
from pathlib import Path

from askcache.storage.remote import FsspecCacheStorage
from askcache.storage.versions import TrajectoryVersions
from tests.recording_race import GOALS, NAME, goals_kept, meeting, race


def test_two_first_recordings_of_one_name_on_s3_both_survive(s3_url: str, tmp_path: Path) -> None:
    barrier = threading.Barrier(len(GOALS))
    kind = meeting(FsspecCacheStorage, barrier)
    machines = tuple(kind(s3_url, local_copy_dir=tmp_path / f"copy-{i}") for i in range(2))
    stored = race((machines[0], machines[1]), barrier)
    storage = FsspecCacheStorage(s3_url, local_copy_dir=None)
    kept = goals_kept(storage)
    assert set(kept) == set(GOALS), kept  # neither recording is lost
    assert sorted(s.how for s in stored) == ["created", "version"]
    versions = TrajectoryVersions(storage, NAME)
    assert versions.numbers() == [1, 2]
    assert storage.read(NAME) == storage.read(versions.version_name(2))
    assert versions.proposals() == []
