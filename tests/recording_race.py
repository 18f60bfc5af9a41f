"""Two first recordings of one name finishing at once, on any storage (a folder, S3).

Both reach the write of the trajectory before either writes it (the window a slow ``exists``
on S3 or NFS opens, made certain with a barrier): the storages below wait for each other at
their first write or create of the trajectory's name, then write for real.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

from askcache.cachefile.parse import parse_cache_file
from askcache.foundation.settings import CacheWritingSettings
from askcache.record.recording import CacheManager
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import SimulatedFormApp
from tests.helpers import form_calls, run_history

NAME = "form.json"
GOALS = ("Fill in the form for the first team", "Fill in the form for the second team")

_S = TypeVar("_S", bound=CacheStorage)


def meeting(base: type[_S], barrier: threading.Barrier) -> type[_S]:
    """``base`` whose first ``write`` or ``create`` of :data:`NAME` waits at ``barrier``
    until the other recording reaches its own, then writes as ``base`` does."""

    class Meeting(base):  # type: ignore[valid-type,misc]
        met = False

        def _meet(self, name: str) -> None:
            if name == NAME and not self.met:
                self.met = True
                barrier.wait()

        def write(self, name: str, data: bytes) -> None:
            self._meet(name)
            super().write(name, data)

        def create(self, name: str, data: bytes) -> None:
            self._meet(name)
            super().create(name, data)

    return Meeting


def race(storages: tuple[CacheStorage, CacheStorage], barrier: threading.Barrier) -> list[Any]:
    """Record :data:`GOALS` under :data:`NAME` at once, one through each storage; returns
    each recorder's :attr:`~askcache.record.recording.CacheManager.stored` (``None`` where it
    has none). Fails when either recording raised."""
    histories = []
    for _ in GOALS:  # the runs, made before the race
        app = SimulatedFormApp()
        histories.append(run_history(app, form_calls(app)))
    managers = [CacheManager(storage, CacheWritingSettings(filename=NAME)) for storage in storages]
    for manager, goal in zip(managers, GOALS, strict=True):
        manager.start_recording(goal)
    failures: list[BaseException] = []

    def finish(position: int) -> None:
        try:
            managers[position].finish_recording(histories[position])
        except BaseException as exc:
            failures.append(exc)
            barrier.abort()  # the other one must not wait for this one

    threads = [threading.Thread(target=finish, args=(i,)) for i in range(len(GOALS))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    return [getattr(manager, "stored", None) for manager in managers]


def goals_kept(storage: CacheStorage) -> dict[str, list[str]]:
    """Per stored object of :data:`NAME` (the trajectory, its versions, its proposals), the
    goal of the recording it holds."""
    versions = TrajectoryVersions(storage, NAME)
    names = [NAME, *(versions.version_name(n) for n in versions.numbers()), *versions.proposals()]
    kept: dict[str, list[str]] = {}
    for name in names:
        goal = parse_cache_file(storage.read(name), name).metadata.goal
        kept.setdefault(goal, []).append(name)
    return kept
