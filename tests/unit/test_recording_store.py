"""A recording kept in the outbox (its storage failed at the end of the run) is sent as the
recording would have been stored, once: as a version when the name was recorded meanwhile,
and not again when it is sent twice (a crash between sending and forgetting it)."""

from __future__ import annotations

from pathlib import Path

from askcache.agent.outbox_sync import sync_outbox
from askcache.cachefile.format import dump_cache_file
from askcache.foundation.settings import CacheWritingSettings
from askcache.record.recording import CacheManager
from askcache.record.store import RECORDING_KIND, PendingRecording
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.outbox import Outbox
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import SimulatedFormApp
from tests.helpers import form_calls, record_form, run_history


def _kept(outbox: Outbox, data: bytes) -> None:
    pending = PendingRecording(name="form.json", data=data.decode(), keep_versions=10)
    outbox.put(RECORDING_KIND, pending, summary="recording of form.json", reason="disk full")


def test_a_kept_recording_of_a_name_recorded_meanwhile_becomes_its_version_once(
    tmp_path: Path,
) -> None:
    storage = LocalCacheStorage(tmp_path / "cache")
    app = SimulatedFormApp()
    manager = CacheManager(storage, CacheWritingSettings(filename="form.json"))
    manager.start_recording("Fill in the form on the machine whose disk filled")
    data = dump_cache_file(manager.build_cache_file(run_history(app, form_calls(app, "Grace"))))
    record_form(storage)  # another machine records the name while this one's disk is full
    first = storage.read("form.json")
    outbox = Outbox(tmp_path / "outbox", storage.destination())
    _kept(outbox, data)
    report = sync_outbox(storage, outbox)
    assert [(s.how, s.version) for s in report.recordings] == [("version", 2)]
    versions = TrajectoryVersions(storage, "form.json")
    assert versions.numbers() == [1, 2]
    assert storage.read(versions.version_name(1)) == first
    assert storage.read("form.json") == storage.read(versions.version_name(2)) == data
    assert outbox.pending() == []
    _kept(outbox, data)  # sent again: nothing more is stored
    again = sync_outbox(storage, outbox)
    assert [(s.how, s.where) for s in again.recordings] == [("already", "form.json")]
    assert versions.numbers() == [1, 2]
    assert versions.proposals() == []
    record_form(storage)  # replaced since: the kept one is still a version, not re-sent
    _kept(outbox, data)
    assert [s.how for s in sync_outbox(storage, outbox).recordings] == ["already"]
    assert storage.read("form.json") != data
    assert versions.numbers() == [1, 2, 3]
