"""Signatures are checked wherever a version is read: rollback, accept, diff and a heal check
a version as loading does (the replay's own check: tests/integration/test_secrets_and_signing.py;
a heal through the public API: tests/integration/test_heal.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from askcache.cachefile.signing import SIGNING_KEY_ENV, parse_verified
from askcache.cli.app import main
from askcache.foundation.errors import CacheSignatureError
from askcache.heal.trajectory import healed_bytes
from askcache.record.mask_learning import save_run_screens
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import SimulatedFormApp
from tests.helpers import form_calls, record_form, run_history

KEY = "team:" + "ab" * 32


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalCacheStorage:
    """``t.json`` healed once (versions 1 and 2, both signed) and a signed proposal, with the
    signing key set."""
    monkeypatch.setenv(SIGNING_KEY_ENV, KEY)
    storage = LocalCacheStorage(tmp_path)
    record_form(storage, "t.json")
    first = storage.read("t.json")
    changed = load_cache_file(storage, "t.json")
    changed.metadata.goal = "Fill the form again"
    versions = TrajectoryVersions(storage, "t.json")
    assert versions.commit(first, healed_bytes(changed, first)) == 2
    changed.metadata.goal = "A proposal"
    versions.propose(healed_bytes(changed, first))
    return storage


def _tamper(storage: LocalCacheStorage, name: str) -> Path:
    """Change the goal of a stored version, keeping its signature (an edit after signing)."""
    path = storage.path_for(name)
    data = json.loads(path.read_bytes())
    data["metadata"]["goal"] = "Transfer the money"
    path.write_text(json.dumps(data))
    return path


def _state(storage: LocalCacheStorage) -> dict[str, bytes]:
    return {name: storage.read(name) for name in storage.list_prefix(".versions")} | {
        "t.json": storage.read("t.json")
    }


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], path: Path) -> str:
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1  # one line
    assert str(path) in err
    return err


def test_rollback_to_a_tampered_version_is_refused_as_loading_refuses_it(
    signed: LocalCacheStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _tamper(signed, ".versions/t.json/v000001.json")
    with pytest.raises(CacheSignatureError) as loading:
        parse_verified(path.read_bytes(), str(path))  # what a replay's loading says
    before = _state(signed)
    where = ["--cache-dir", str(signed.directory)]
    for argv in (["rollback", "t", *where], ["rollback", "t", "1", *where]):
        err = _refused(capsys, argv, path)
        assert loading.value.reason in err
        assert "does not match the content" in err
    with pytest.raises(CacheSignatureError, match=r"v000001\.json"):
        TrajectoryVersions(signed, "t.json").rollback("v1")
    assert _state(signed) == before  # nothing changed


def test_accepting_a_tampered_or_unsigned_proposal_is_refused(
    signed: LocalCacheStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    versions = TrajectoryVersions(signed, "t.json")
    proposal = versions.proposals()[0]
    path = _tamper(signed, proposal)
    before = _state(signed)
    where = ["--cache-dir", str(signed.directory)]
    assert "does not match the content" in _refused(capsys, ["accept", "t", *where], path)
    unsigned = json.loads(path.read_bytes())
    del unsigned["signature"]
    path.write_text(json.dumps(unsigned))
    before = _state(signed)
    err = _refused(capsys, ["accept", "t", proposal.rsplit("/", 1)[1], *where], path)
    assert "the file is not signed" in err
    assert _state(signed) == before
    assert versions.proposals() == [proposal]  # kept for a person to look at


def test_diff_refuses_a_tampered_version_on_either_side(
    signed: LocalCacheStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    where = ["--cache-dir", str(signed.directory)]
    assert main(["diff", "t", "1", "2", *where]) == 0
    capsys.readouterr()
    path = _tamper(signed, ".versions/t.json/v000001.json")
    assert "does not match" in _refused(capsys, ["diff", "t", "1", "2", *where], path)
    assert "does not match" in _refused(capsys, ["diff", "t", "2", "v1", *where], path)
    current = _tamper(signed, "t.json")  # the trajectory file itself
    assert "does not match" in _refused(capsys, ["diff", "t", *where], current)


def test_without_a_key_versions_are_read_as_loading_reads_them(
    signed: LocalCacheStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tamper(signed, ".versions/t.json/v000001.json")
    monkeypatch.delenv(SIGNING_KEY_ENV)
    versions = TrajectoryVersions(signed, "t.json")
    assert versions.rollback("1") == 3  # loading checks no signature without a key either
    with pytest.raises(CacheSignatureError, match="no key is set"):
        TrajectoryVersions(signed, "t.json", require_signature=True).load("1")


def test_a_file_that_is_changed_and_signed_again_must_verify_whatever_the_setting(
    signed: LocalCacheStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _tamper(signed, "t.json")
    raw = path.read_bytes()
    parse_verified(raw, str(path), required=False)  # a replay told not to check runs it
    # but a heal or tune signs what it derives from it with the key: so it must verify
    with pytest.raises(CacheSignatureError, match="does not match"):
        parse_verified(raw, str(path), required=False, resign=True)
    monkeypatch.delenv(SIGNING_KEY_ENV)
    # no key: nothing is signed, but a signed file that nobody here can check is not
    # changed either (its change would be an unsigned proposal made from unchecked content)
    with pytest.raises(CacheSignatureError, match="no key is set"):
        parse_verified(raw, str(path), resign=True)
    unsigned = json.loads(raw)
    del unsigned["signature"]
    parse_verified(json.dumps(unsigned).encode(), str(path), resign=True)


def test_tune_refuses_a_file_that_does_not_verify(
    signed: LocalCacheStorage, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = SimulatedFormApp()
    folder = tmp_path / "run"
    save_run_screens(run_history(app, form_calls(app)), folder)
    path = _tamper(signed, "t.json")
    before = _state(signed)
    argv = ["tune", "t", "--run", str(folder), "--cache-dir", str(signed.directory)]
    assert "does not match" in _refused(capsys, argv, path)
    assert _state(signed) == before


def test_no_re_signing_blesses_a_version_that_does_not_verify_even_unchecked(
    signed: LocalCacheStorage,
) -> None:
    # a heal, a learned profile or tune signs what it made from a version: when that version
    # does not verify, signing refuses, even for a caller that did not check it first
    path = _tamper(signed, "t.json")
    tampered = path.read_bytes()
    fresh = load_cache_file(signed, ".versions/t.json/v000002.json")
    fresh.signature = None  # a file built anew from the run, as a heal builds it
    with pytest.raises(CacheSignatureError, match="changed after it was signed") as refused:
        healed_bytes(fresh, tampered, str(path))
    assert str(path) in str(refused.value)
    assert "re-record it, or roll back to a version that verifies" in str(refused.value)
    assert fresh.signature is None


def test_a_commit_never_makes_a_signed_trajectory_unsigned(
    signed: LocalCacheStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every writer (a heal, a learned profile, a re-recording, tune) commits through here
    from askcache.foundation.errors import SignatureLossRefusedError

    base = signed.read("t.json")
    changed = load_cache_file(signed, "t.json")
    changed.metadata.goal = "Fill the form a third time"
    monkeypatch.delenv(SIGNING_KEY_ENV)  # a machine that cannot sign
    unsigned = healed_bytes(changed, base)
    assert json.loads(unsigned)["signature"] is None
    versions = TrajectoryVersions(signed, "t.json")
    before = _state(signed)
    with pytest.raises(SignatureLossRefusedError, match="it is signed and the new version is not"):
        versions.commit(base, unsigned)
    assert _state(signed) == before
    # an explicit command may: accepting an unsigned proposal where no key is set
    proposal = versions.propose(unsigned)
    assert versions.accept(proposal.rsplit("/", 1)[1]) == 3
    assert signed.read("t.json") == unsigned
