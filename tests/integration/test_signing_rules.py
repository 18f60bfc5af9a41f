"""The two rules of signed files in a fleet, through the real parts (the ``askcache`` command in
its own process, a replay with the real anthropic client over HTTP to the local stand-in):

- a signature is never put on content whose present signature fails (``askcache sign``, and
  every re-signing, go through :func:`~askcache.cachefile.signing.sign_cache_file`);
- a signed trajectory never becomes unsigned by a heal, a learned profile or a re-recording
  made where no signing key is set: it is kept as a proposal
  (:meth:`~askcache.storage.versions.TrajectoryVersions.commit`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from askcache import (
    ActResult,
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
    open_ledger,
)
from askcache.cachefile.parse import parse_cache_file
from askcache.cachefile.signing import SIGNING_KEY_ENV, VERIFY_KEYS_ENV, parse_verified
from askcache.foundation.errors import CacheSignatureError
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.testing.simulated import Layout

pytestmark = pytest.mark.integration

ASKCACHE = [sys.executable, "-m", "askcache.cli"]
OLD = "team-2026q3:" + "ab" * 32
NEW = "team-2026q4:" + "cd" * 32
GONE = "team-2025:" + "ef" * 32


def _askcache(
    cache_dir: Path, *args: str, signing: str | None = None, verify: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The ``askcache`` command in its own process, with exactly these keys set."""
    env = {k: v for k, v in os.environ.items() if k not in (SIGNING_KEY_ENV, VERIFY_KEYS_ENV)}
    if signing is not None:
        env[SIGNING_KEY_ENV] = signing
    if verify is not None:
        env[VERIFY_KEYS_ENV] = verify
    return subprocess.run(
        [*ASKCACHE, *args, "--cache-dir", str(cache_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


def _keys(monkeypatch: pytest.MonkeyPatch, signing: str | None, verify: str | None) -> None:
    """This process's keys: the machine the next run is on."""
    for variable, value in ((SIGNING_KEY_ENV, signing), (VERIFY_KEYS_ENV, verify)):
        if value is None:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, value)


def _settings(cache_dir: Path, user: str, strategy: str, **caching: Any) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(filename="login.json", parameters={"user": user}),
        execution_settings=CacheExecutionSettings(
            parameter_values={"user": user}, settle_quiet_period=0.2, settle_timeout=1
        ),
        **caching,
    )


def _record(cache_dir: Path, user: str = "alice") -> bytes:
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, user)) as api:
        Agent(api.client(), [ComputerTool(app)]).act(
            f"Log in as {user}", _settings(cache_dir, user, "record")
        )
    return LocalCacheStorage(cache_dir).read("login.json")


def _fill(
    cache_dir: Path, user: str, layout: Layout = "original"
) -> tuple[ActResult, SimulatedFormApp]:
    app = SimulatedFormApp(layout=layout)
    with MessagesApiStandIn(FormFillingScript(app, user)) as api:
        result = Agent(api.client(), [ComputerTool(app)], max_turns=100).act(
            f"Log in as {user}", _settings(cache_dir, user, "auto")
        )
    return result, app


def _typed_step(data: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in data["trajectory"] if s["input"].get("action") == "type")


def _edit_typed_text(path: Path) -> bytes:
    """Change the text a signed file types, keeping its signature (an edit after signing)."""
    data = json.loads(path.read_bytes())
    _typed_step(data)["input"]["text"] = "mallory"
    path.write_text(json.dumps(data, indent=2))
    return path.read_bytes()


def _edit_proposal(storage: LocalCacheStorage, proposal: str) -> bytes:
    """The proposal ``proposal`` of login.json with its typed text changed."""
    data = json.loads(
        storage.read(f"{TrajectoryVersions(storage, 'login.json').folder}/{proposal}")
    )
    _typed_step(data)["input"]["text"] = "mallory"
    return json.dumps(data).encode()


def _one_line_refusal(done: subprocess.CompletedProcess[str], path: Path) -> str:
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr  # one line
    assert str(path) in done.stderr
    assert "re-record it, or roll back to a version that verifies" in done.stderr
    return done.stderr


def test_sign_refuses_a_file_edited_after_it_was_signed_during_a_key_rotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _keys(monkeypatch, OLD, None)
    _record(tmp_path)
    path = LocalCacheStorage(tmp_path).path_for("login.json")
    tampered = _edit_typed_text(path)
    # the documented rotation: the new key signs, the old one only verifies
    rotation = {"signing": NEW, "verify": OLD}
    checked = _askcache(tmp_path, "check-signature", "login", **rotation)
    assert checked.returncode == 3
    assert "does not match the content" in checked.stderr
    err = _one_line_refusal(_askcache(tmp_path, "sign", "login", **rotation), path)
    assert "changed after it was signed" in err
    assert path.read_bytes() == tampered  # not signed, not rewritten
    json_out = _askcache(tmp_path, "sign", "login", "--json", **rotation)
    assert json_out.returncode == 3
    assert "changed after it was signed" in json.loads(json_out.stdout)["error"]["message"]
    assert path.read_bytes() == tampered
    # so the next replay still refuses it, and never types the edited text
    _keys(monkeypatch, NEW, OLD)
    with pytest.raises(CacheSignatureError, match="does not match the content"):
        _fill(tmp_path, "bob")
    assert path.read_bytes() == tampered


def test_sign_refuses_a_file_signed_with_a_key_no_longer_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _keys(monkeypatch, GONE, None)
    recorded = _record(tmp_path)
    path = LocalCacheStorage(tmp_path).path_for("login.json")
    for keys in ({"signing": NEW}, {"signing": NEW, "verify": OLD}):
        err = _one_line_refusal(_askcache(tmp_path, "sign", "login", **keys), path)
        assert "'team-2025'" in err
        assert "cannot be verified" in err
        assert path.read_bytes() == recorded
    # with the old key known again it verifies, so it is signed with the new one
    done = _askcache(tmp_path, "sign", "login", signing=NEW, verify=GONE)
    assert done.returncode == 0, done.stderr
    assert "key 'team-2026q4'" in done.stdout
    assert _askcache(tmp_path, "check-signature", "login", signing=NEW).returncode == 0


def test_sign_signs_an_unsigned_file_and_re_signs_a_verified_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _keys(monkeypatch, None, None)
    _record(tmp_path)  # unsigned: the explicit command signs it the first time
    done = _askcache(tmp_path, "sign", "login", signing=OLD)
    assert done.returncode == 0, done.stderr
    assert _askcache(tmp_path, "check-signature", "login", signing=OLD).returncode == 0
    rotated = _askcache(tmp_path, "sign", "login", signing=NEW, verify=OLD)
    assert rotated.returncode == 0, rotated.stderr
    checked = _askcache(tmp_path, "check-signature", "login", "--json", signing=NEW)
    assert json.loads(checked.stdout)["key_id"] == "team-2026q4"


def test_a_heal_on_a_verify_only_node_is_a_proposal_and_the_fleet_keeps_replaying(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _keys(monkeypatch, OLD, None)
    recorded = _record(tmp_path)
    storage = LocalCacheStorage(tmp_path)
    # a node that can only verify replays on a changed screen, hands back, the model completes
    _keys(monkeypatch, None, OLD)
    first, app = _fill(tmp_path, "bob", "banner")
    assert app.saved == [{"name": "bob", "email": ""}]
    assert first.model_calls > 0
    assert first.heal is not None
    assert first.heal.event == "proposed"
    assert first.heal.reason is not None
    assert "it is signed and the new version is not" in first.heal.reason
    assert SIGNING_KEY_ENV in first.heal.reason
    assert storage.read("login.json") == recorded  # still the signed trajectory
    versions = TrajectoryVersions(storage, "login.json")
    assert versions.numbers() == []
    assert versions.proposals() == [first.heal.version]
    entries = [r for r in open_ledger(storage).records("login.json") if r.event == "proposed"]
    assert [(e.version, e.reason) for e in entries] == [(first.heal.version, first.heal.reason)]
    # every machine of the fleet still replays it, verifying it
    for keys in ((OLD, None), (None, OLD)):
        _keys(monkeypatch, *keys)
        again, _ = _fill(tmp_path, "carol")
        assert again.model_calls == 0
        assert again.replay is not None
        assert again.replay.status == "completed"
    # where the key is, the proposal is reviewed, signed and accepted; then it replays
    proposal = first.heal.version.rsplit("/", 1)[1]
    # the commands the reason gives name this proposal: another proposal made (or planted)
    # since is never the one signed and accepted after this one was reviewed
    assert f"askcache diff login.json current {proposal}" in first.heal.reason
    assert f"askcache sign login.json --proposal {proposal}" in first.heal.reason
    assert f"askcache accept login.json {proposal}" in first.heal.reason
    later = TrajectoryVersions(storage, "login.json").propose(_edit_proposal(storage, proposal))
    assert versions.proposals()[-1] == later  # the newest is now another one
    done = _askcache(tmp_path, "sign", "login", "--proposal", proposal, signing=OLD)
    assert done.returncode == 0, done.stderr
    assert proposal in done.stdout
    accepted = _askcache(tmp_path, "accept", "login", proposal, signing=OLD)
    assert accepted.returncode == 0, accepted.stderr
    parse_verified(storage.read("login.json"), "login.json", required=True)
    healed, _ = _fill(tmp_path, "dave", "banner")
    assert healed.model_calls == 0
    assert healed.replay is not None
    assert healed.replay.status == "completed"


def test_a_screen_profile_learned_on_a_verify_only_node_is_a_proposal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _keys(monkeypatch, OLD, None)
    recorded = _record(tmp_path)
    storage = LocalCacheStorage(tmp_path)
    _keys(monkeypatch, None, OLD)
    app = SimulatedFormApp(layout="banner", width=960, height=600)  # another screen profile
    with MessagesApiStandIn(FormFillingScript(app, "bob")) as api:
        result = Agent(api.client(), [ComputerTool(app)], max_turns=100).act(
            "Log in as bob", _settings(tmp_path, "bob", "auto")
        )
    assert app.saved == [{"name": "bob", "email": ""}]
    assert result.heal is not None
    assert (result.heal.event, result.heal.profile) == ("proposed", "960x600@1x")
    assert result.heal.reason is not None
    assert "it is signed and the new version is not" in result.heal.reason
    assert storage.read("login.json") == recorded
    proposal = parse_cache_file(storage.read(result.heal.version), "proposal")
    assert list(proposal.profiles) == ["960x600@1x"]
    assert proposal.signature is None


def test_a_node_without_keys_never_makes_a_signed_trajectory_unsigned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _keys(monkeypatch, OLD, None)
    recorded = _record(tmp_path)
    storage = LocalCacheStorage(tmp_path)
    # it replays the file without checking it (no key is set) and the model completes; it
    # cannot check the file it would heal, so it writes nothing, not even a proposal
    _keys(monkeypatch, None, None)
    first, app = _fill(tmp_path, "bob", "banner")
    assert app.saved == [{"name": "bob", "email": ""}]
    assert first.model_calls > 0
    assert first.heal is None
    assert storage.read("login.json") == recorded
    assert storage.list_prefix(".versions") == []
    said = [r.getMessage() for r in caplog.records if "could not heal" in r.getMessage()]
    assert len(said) == 1
    assert "no key is set" in said[0]
    _keys(monkeypatch, None, OLD)
    again, _ = _fill(tmp_path, "carol")
    assert again.model_calls == 0


def test_a_recording_over_a_signed_trajectory_where_no_signing_key_is_set_is_a_proposal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _keys(monkeypatch, OLD, None)
    recorded = _record(tmp_path)
    _keys(monkeypatch, None, OLD)
    _record(tmp_path, "grace")
    storage = LocalCacheStorage(tmp_path)
    assert storage.read("login.json") == recorded
    versions = TrajectoryVersions(storage, "login.json")
    assert len(versions.proposals()) == 1
    said = [r.getMessage() for r in caplog.records if "kept unsigned" in r.getMessage()]
    assert len(said) == 1
    assert versions.proposals()[0] in said[0]


def test_sign_refuses_a_proposal_edited_after_it_was_signed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _keys(monkeypatch, OLD, None)
    _record(tmp_path)
    _record(tmp_path, "grace")  # over it, then back: versions 1 and 2
    storage = LocalCacheStorage(tmp_path)
    versions = TrajectoryVersions(storage, "login.json")
    versions.propose(storage.read(versions.version_name(1)))
    where = storage.path_for(versions.proposals()[0])
    tampered = _edit_typed_text(where)
    done = _askcache(tmp_path, "sign", "login", "--proposal", signing=NEW, verify=OLD)
    _one_line_refusal(done, where)
    assert where.read_bytes() == tampered
    refused = _askcache(tmp_path, "accept", "login", signing=NEW, verify=OLD)
    assert refused.returncode == 3


def _as_older_format(path: Path, text: str | None = None) -> bytes:
    """The signed file marked as an older format version (a file made by an older askcache,
    or an edit that also says so), its typed text changed to ``text`` when given."""
    data = json.loads(path.read_bytes())
    data["version"] = 2
    if text is not None:
        _typed_step(data)["input"]["text"] = text
    path.write_text(json.dumps(data, indent=2))
    return path.read_bytes()


def test_upgrade_never_strips_a_signature_that_fails_so_sign_cannot_bless_the_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _keys(monkeypatch, OLD, None)
    _record(tmp_path)
    path = LocalCacheStorage(tmp_path).path_for("login.json")
    tampered = _as_older_format(path, "mallory")
    # upgrading drops the signature (the signed content changes): it must not drop one that
    # fails, on any machine, or the next sign (a key rotation) blesses the edit
    for keys in ({}, {"verify": OLD}, {"signing": NEW, "verify": OLD}):
        done = _askcache(tmp_path, "upgrade", "login", **keys)
        assert done.returncode == 3, (keys, done.stdout, done.stderr)
        assert str(path) in done.stderr or "login.json" in done.stderr
        assert path.read_bytes() == tampered
    refused = _askcache(tmp_path, "sign", "login", signing=NEW, verify=OLD)
    assert refused.returncode == 3
    assert path.read_bytes() == tampered
    _keys(monkeypatch, NEW, OLD)
    with pytest.raises(CacheSignatureError):
        _fill(tmp_path, "bob")


def test_upgrade_of_a_signed_file_that_verifies_signs_it_again_where_a_key_signs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _keys(monkeypatch, OLD, None)
    _record(tmp_path)
    path = LocalCacheStorage(tmp_path).path_for("login.json")
    data = json.loads(path.read_bytes())
    data["signature"] = None
    path.write_text(json.dumps(data))
    _as_older_format(path)
    _keys(monkeypatch, None, None)
    resigned = _askcache(tmp_path, "sign", "login", signing=OLD)  # an older file, signed
    assert resigned.returncode == 0, resigned.stderr
    done = _askcache(tmp_path, "upgrade", "login", signing=NEW, verify=OLD)
    assert done.returncode == 0, done.stderr
    assert json.loads(path.read_bytes())["version"] == 3
    checked = _askcache(tmp_path, "check-signature", "login", "--json", signing=NEW)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["key_id"] == "team-2026q4"


def _with_profile(raw: bytes, scale: int, text: str, keys: str | None) -> bytes:
    """``raw`` with a screen profile learned at ``scale`` (the recorded steps, typing
    ``text``), signed with ``keys`` when given (else carrying ``raw``'s stale signature)."""
    from askcache.cachefile.format import CoordinateSpace, ProfileTrajectory, dump_cache_file
    from askcache.cachefile.signing import SigningKeys, signature_for

    cache_file = parse_cache_file(raw, "login.json")
    space = cache_file.metadata.coordinate_space
    assert space is not None
    steps = [step.model_copy(deep=True) for step in cache_file.trajectory]
    next(s for s in steps if s.input.get("action") == "type").input["text"] = text
    learned = ProfileTrajectory(
        coordinate_space=space,
        display_size=CoordinateSpace(width=space.width * scale, height=space.height * scale),
        trajectory=steps,
    )
    cache_file.profiles = {**cache_file.profiles, learned.profile.id: learned}
    if keys is not None:
        parsed = SigningKeys.from_env({SIGNING_KEY_ENV: keys})
        assert parsed.signing_id is not None
        cache_file.signature = signature_for(
            cache_file, parsed.signing_id, parsed.keys[parsed.signing_id]
        )
    return dump_cache_file(cache_file)


def test_a_profile_heal_made_again_on_a_changed_file_never_signs_content_that_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from askcache.heal.trajectory import PreparedHeal, apply_heal

    _keys(monkeypatch, OLD, None)
    base = _record(tmp_path)
    storage = LocalCacheStorage(tmp_path)
    # another machine learned the 3x profile meanwhile: the file changed in another profile
    storage.write("login.json", _with_profile(base, 3, "alice", OLD))
    # the heal of the 2x profile kept in this machine's outbox, its typed text edited there
    # after it was signed (it still carries the signature it was made with)
    tampered = _with_profile(base, 2, "mallory", None)
    assert json.loads(tampered)["signature"] is not None
    profile = parse_cache_file(tampered, "login.json")
    key = next(k for k in profile.profiles if k.endswith("@2x"))
    heal = PreparedHeal(
        name="login.json",
        base=base,
        new=tampered,
        mode="auto",
        keep=5,
        healed_steps=[0],
        verified_by="model_completion",
        proposal=TrajectoryVersions(storage, "login.json").proposal_name(),
        profile=key,
    )
    apply_heal(storage, heal)
    current = storage.read("login.json")
    assert b"mallory" not in current
    checked = _askcache(tmp_path, "check-signature", "login", signing=OLD)
    assert checked.returncode == 0, checked.stderr
