"""The outbox (writes kept locally while storage cannot be written) and sending them again:
atomic items, one folder per destination, idempotent sends of ledger entries and heals."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from askcache import CachingSettings
from askcache.agent.outbox_sync import PendingHeal, PendingLedgerEntry, sync_outbox
from askcache.foundation.errors import InvalidSettingsError, OutboxError
from askcache.heal.trajectory import PreparedHeal, apply_heal
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import RunLedger, RunRecord, open_ledger
from askcache.storage.outbox import Outbox, default_outbox_dir
from askcache.storage.versions import CommitJournal, TrajectoryVersions


def _entry(trajectory: str = "t.json") -> PendingLedgerEntry:
    record = RunRecord(trajectory=trajectory, status="completed")
    return PendingLedgerEntry(entry_id=RunLedger.new_entry_id(), record=record)


def _heal(base: bytes, new: bytes, mode: str = "auto") -> PreparedHeal:
    return PreparedHeal(
        name="t.json",
        base=base,
        new=new,
        mode=mode,  # type: ignore[arg-type]
        keep=10,
        healed_steps=[2, 3],
        verified_by="end_state",
        proposal=TrajectoryVersions(LocalCacheStorage("."), "t.json").proposal_name(),
    )


def test_items_are_whole_private_files_in_one_folder_per_destination(tmp_path: Path) -> None:
    one, two = Outbox(tmp_path, "s3://a/x"), Outbox(tmp_path, "s3://b/y")
    kept = one.put("ledger_entry", _entry(), summary="entry", reason="down")
    two.put("ledger_entry", _entry(), summary="other", reason="down")
    assert one.folder != two.folder
    assert stat.S_IMODE(kept.path.stat().st_mode) == 0o600
    assert [k.summary for k in one.pending()] == ["entry"]
    assert [p.name for p in one.folder.iterdir()] == [kept.path.name]  # no temporary left
    (one.folder / "0-damaged.json").write_text("{not json")
    assert [k.path for k in one.pending()] == [kept.path]  # skipped, never in the way
    one.remove(kept)
    one.remove(kept)
    assert one.pending() == []


def test_an_outbox_that_cannot_be_written_is_an_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutboxError, match=str(blocker)):
        Outbox(blocker, "s3://a/x").put("ledger_entry", _entry(), summary="e", reason="r")


def test_the_outbox_folder_is_a_validated_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert CachingSettings(outbox_dir=str(tmp_path)).outbox_dir == tmp_path
    for bad in ("s3://bucket/outbox", " "):
        with pytest.raises(InvalidSettingsError, match="outbox_dir"):
            CachingSettings(outbox_dir=bad)
    monkeypatch.delenv("ASKCACHE_OUTBOX_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_outbox_dir() == tmp_path / "askcache" / "outbox"


def test_a_ledger_entry_sent_twice_is_stored_once(tmp_path: Path) -> None:
    storage = LocalCacheStorage(tmp_path / "cache")
    outbox = Outbox(tmp_path / "outbox", storage.destination())
    kept = outbox.put("ledger_entry", _entry(), summary="entry", reason="down")
    copy = kept.path.read_bytes()
    report = sync_outbox(storage, outbox)
    assert (len(report.sent), report.left) == (1, [])
    kept.path.write_bytes(copy)  # as if the process died before removing it
    assert len(sync_outbox(storage, outbox).sent) == 1
    assert len(open_ledger(storage).records("t.json")) == 1


def test_a_heal_sent_again_writes_no_second_version_or_proposal(tmp_path: Path) -> None:
    storage = LocalCacheStorage(tmp_path)
    storage.write("t.json", b"one\n")
    heal = _heal(b"one\n", b"two\n")
    first = apply_heal(storage, heal)
    assert (first.event, first.version) == ("healed", ".versions/t.json/v000002.json")
    again = apply_heal(storage, heal, again=True)
    assert again == first
    versions = TrajectoryVersions(storage, "t.json")
    assert (versions.numbers(), versions.proposals()) == ([1, 2], [])


def test_a_heal_cut_off_in_its_commit_is_committed_once_when_sent_again(tmp_path: Path) -> None:
    storage = LocalCacheStorage(tmp_path)
    storage.write("t.json", b"one\n")
    versions = TrajectoryVersions(storage, "t.json")
    storage.create(versions.version_name(1), b"one\n")
    journal = CommitJournal(
        version=2,
        new_sha256=hashlib.sha256(b"two\n").hexdigest(),
        old_sha256=hashlib.sha256(b"one\n").hexdigest(),
    )
    storage.write(versions.journal, journal.model_dump_json().encode())
    storage.create(versions.version_name(2), b"two\n")  # the trajectory was never replaced
    outcome = apply_heal(storage, _heal(b"one\n", b"two\n"), again=True)
    assert (outcome.event, outcome.version) == ("healed", versions.version_name(2))
    assert storage.read("t.json") == b"two\n"
    assert (versions.numbers(), versions.proposals()) == ([1, 2], [])
    assert not storage.exists(versions.journal)


def test_a_heal_whose_trajectory_changed_meanwhile_is_proposed_once(tmp_path: Path) -> None:
    storage = LocalCacheStorage(tmp_path)
    storage.write("t.json", b"re-recorded\n")
    outbox = Outbox(tmp_path / "outbox", storage.destination())
    record = RunRecord(trajectory="t.json", event="healed", status="healed")
    pending = PendingHeal(heal=_heal(b"one\n", b"two\n"), entry_id="0123456789ab", record=record)
    kept = outbox.put("heal", pending, summary="heal", reason="down")
    copy = kept.path.read_bytes()
    assert json.loads(copy)["payload"]["heal"]["base"] == "b25lCg=="  # bytes as base64
    report = sync_outbox(storage, outbox)
    assert [(h.event, h.version) for h in report.heals] == [("proposed", pending.heal.proposal)]
    kept.path.write_bytes(copy)
    sync_outbox(storage, outbox)
    assert TrajectoryVersions(storage, "t.json").proposals() == [pending.heal.proposal]
    assert storage.read("t.json") == b"re-recorded\n"
    entries = open_ledger(storage).records("t.json")
    assert [(e.event, e.version) for e in entries] == [("proposed", pending.heal.proposal)]


def test_an_unknown_item_is_left_in_place_and_does_not_stop_the_others(tmp_path: Path) -> None:
    storage = LocalCacheStorage(tmp_path / "cache")
    outbox = Outbox(tmp_path / "outbox", storage.destination())
    odd = outbox.put("from-the-future", _entry(), summary="odd", reason="r")
    outbox.put("ledger_entry", _entry(), summary="entry", reason="r")
    report = sync_outbox(storage, outbox)
    assert [k.summary for k in report.sent] == ["entry"]
    assert [k.path for k in report.left] == [odd.path]
    assert os.path.exists(odd.path)
