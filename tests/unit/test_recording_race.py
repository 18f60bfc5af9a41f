"""Two first recordings of one name finishing at once in one folder: the trajectory is
created exclusively, so the second becomes a version and neither is lost
(tests/recording_race.py makes both reach the write before either writes)."""

from __future__ import annotations

import threading
from pathlib import Path

from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.versions import TrajectoryVersions
from tests.recording_race import GOALS, NAME, goals_kept, meeting, race


def test_two_first_recordings_of_one_name_in_a_folder_both_survive(tmp_path: Path) -> None:
    barrier = threading.Barrier(len(GOALS))
    kind = meeting(LocalCacheStorage, barrier)
    stored = race((kind(tmp_path), kind(tmp_path)), barrier)
    storage = LocalCacheStorage(tmp_path)
    kept = goals_kept(storage)
    assert set(kept) == set(GOALS), kept  # neither recording is lost
    assert sorted(s.how for s in stored) == ["created", "version"]
    # the later one is current, the earlier one the version before it
    versions = TrajectoryVersions(storage, NAME)
    assert versions.numbers() == [1, 2]
    assert storage.read(NAME) == storage.read(versions.version_name(2))
    later = next(s for s in stored if s.how == "version")
    assert later.version == 2
    assert versions.proposals() == []
    assert storage.list_names() == [NAME]  # no temporary file left beside it
