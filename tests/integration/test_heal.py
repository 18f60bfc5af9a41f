"""Healing through the public API: the real anthropic client over HTTP to the local stand-in,
the simulated form as the screen (the real Tk form under Xvfb: tests/integration/test_desktop.py).
"""

from __future__ import annotations

import json
import threading
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
from askcache.cli.app import main
from askcache.foundation.messages import ToolUseBlockParam
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    SimulatedFormApp,
    text_reply,
    tool_use_reply,
)
from askcache.testing.simulated import Layout
from askcache.tools.tool import Tool, ToolOutput

pytestmark = pytest.mark.integration


def _record(cache_dir: Path, name: str = "alice") -> bytes:
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, name)) as api:
        result = Agent(api.client(), [ComputerTool(app)]).act(
            f"Log in as {name}",
            CachingSettings(
                strategy="record",
                cache_dir=cache_dir,
                writing_settings=CacheWritingSettings(
                    filename="login.json", parameters={"user": name}
                ),
            ),
        )
    assert result.conversation.recorded_file == "login.json"
    return LocalCacheStorage(cache_dir).read("login.json")


def _run(
    cache_dir: Path,
    app: SimulatedFormApp,
    script: Any,
    *,
    user: str = "bob",
    strategy: str = "auto",
    max_turns: int = 100,
    require_signature: bool | None = None,
    search_radius: int = 320,
    **caching: Any,
) -> ActResult:
    with MessagesApiStandIn(script) as api:
        return Agent(api.client(), [ComputerTool(app)], max_turns=max_turns).act(
            f"Log in as {user}",
            CachingSettings(
                strategy=strategy,  # type: ignore[arg-type]
                cache_dir=cache_dir,
                writing_settings=CacheWritingSettings(
                    filename="login.json", parameters={"user": user}
                ),
                execution_settings=CacheExecutionSettings(
                    parameter_values={"user": user},
                    settle_quiet_period=0.2,
                    settle_timeout=1,
                    require_signature=require_signature,
                    search_radius=search_radius,
                ),
                **caching,
            ),
        )


def _fill(layout: Layout, user: str, cache_dir: Path, **caching: Any) -> ActResult:
    app = SimulatedFormApp(layout=layout)
    result = _run(cache_dir, app, FormFillingScript(app, user), user=user, **caching)
    assert app.saved == [{"name": user, "email": ""}]
    return result


def test_auto_heals_after_a_verified_hand_back_and_later_runs_make_no_model_call(
    tmp_path: Path,
) -> None:
    recorded = _record(tmp_path)
    first = _fill("banner", "bob", tmp_path)
    assert first.replay is not None
    assert (first.replay.status, first.replay.stopped_at_step) == ("handed_back", 1)
    assert first.model_calls > 0
    assert first.heal is not None
    assert (first.heal.event, first.heal.verified_by) == ("healed", "model_completion")
    storage = LocalCacheStorage(tmp_path)
    healed = load_cache_file(storage, "login.json")
    text = storage.read("login.json").decode()
    assert "bob" not in text  # the run's value is stored as the parameter again
    assert "{{user}}" in text
    assert healed.metadata.goal == "Log in as {{user}}"
    versions = TrajectoryVersions(storage, "login.json")
    assert versions.numbers() == [1, 2]
    assert storage.read(versions.version_name(1)) == recorded
    entries = [r for r in open_ledger(storage).records("login.json") if r.event == "healed"]
    assert len(entries) == 1
    assert entries[0].healed_steps == first.heal.healed_steps
    assert entries[0].model_calls == first.model_calls
    assert entries[0].version == versions.version_name(2)
    for user in ("carol", "dave", "erin"):
        again = _fill("banner", user, tmp_path)
        assert again.model_calls == 0
        assert again.replay is not None
        assert again.replay.status == "completed"
        assert again.heal is None
    assert TrajectoryVersions(storage, "login.json").numbers() == [1, 2]


def _stop(request: dict[str, Any]) -> dict[str, Any]:
    return text_reply("I stop here.")


class _BadCall:
    """Makes a call the tool rejects, then says it is done."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 1:
            return tool_use_reply("computer", {"action": "nonsense_action"})
        return text_reply("Something went wrong; done.")


class _Loops:
    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        return tool_use_reply("computer", {"action": "left_click", "coordinate": [600, 380]})


@pytest.mark.parametrize(
    ("script", "max_turns"),
    [
        (lambda: _stop, 100),  # the model gives up without acting: nothing to verify
        (_BadCall, 100),  # its call fails: not verified
        (_Loops, 6),  # cut off by the turn limit
        (lambda: lambda request: {"content": [], "stop_reason": "max_tokens"}, 100),  # fails
    ],
    ids=["gives-up", "tool-error", "turn-limit", "model-fails"],
)
@pytest.mark.parametrize("heal", ["auto", "propose"])
def test_a_failed_or_unverified_run_leaves_the_file_byte_for_byte_unchanged(
    tmp_path: Path, script: Any, max_turns: int, heal: str
) -> None:
    recorded = _record(tmp_path)
    result = _run(
        tmp_path, SimulatedFormApp(layout="banner"), script(), max_turns=max_turns, heal=heal
    )
    assert result.replay is not None
    assert result.replay.status == "handed_back"
    assert result.heal is None
    storage = LocalCacheStorage(tmp_path)
    assert storage.read("login.json") == recorded
    assert storage.list_prefix(".versions") == []
    assert all(r.event == "replay" for r in open_ledger(storage).records("login.json"))


@pytest.mark.parametrize("strategy", ["record", "execute", "auto", "off"])
def test_with_heal_off_no_run_ever_writes_the_trajectory(tmp_path: Path, strategy: str) -> None:
    recorded = _record(tmp_path)
    storage = LocalCacheStorage(tmp_path)
    for layout in ("banner", "swapped", "banner", "original"):
        app = SimulatedFormApp(layout=layout)
        _run(tmp_path, app, FormFillingScript(app, "bob"), strategy=strategy, heal="off")
        assert storage.read("login.json") == recorded
    assert storage.list_prefix(".versions") == []
    assert storage.list_names() == ["login.json"]
    if strategy == "execute":
        return  # a missing file is an error there
    # read-only also means a missing trajectory is not recorded
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, "bob")) as api:
        Agent(api.client(), [ComputerTool(app)]).act(
            "Log in as bob",
            CachingSettings(
                strategy=strategy,  # type: ignore[arg-type]
                cache_dir=tmp_path,
                heal="off",
                writing_settings=CacheWritingSettings(filename="other.json"),
            ),
        )
    assert storage.list_names() == ["login.json"]


def test_execute_is_read_only_by_default(tmp_path: Path) -> None:
    recorded = _record(tmp_path)
    result = _fill("banner", "bob", tmp_path, strategy="execute")
    assert result.model_calls > 0
    assert result.heal is None
    assert LocalCacheStorage(tmp_path).read("login.json") == recorded


def test_propose_keeps_the_fix_for_review_then_accept_diff_and_rollback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = _record(tmp_path)
    storage = LocalCacheStorage(tmp_path)
    first = _fill("banner", "bob", tmp_path, heal="propose")
    assert first.heal is not None
    assert first.heal.event == "proposed"
    assert storage.read("login.json") == recorded
    # nothing is replayed from a proposal: the next run hands back again
    second = _fill("banner", "carol", tmp_path, heal="propose")
    assert second.model_calls > 0
    versions = TrajectoryVersions(storage, "login.json")
    assert len(versions.proposals()) == 2
    assert main(["diff", "login.json", "--cache-dir", str(tmp_path)]) == 0
    diff = capsys.readouterr().out
    assert "login.json -> proposed-" in diff
    assert "+ " in diff
    assert "- " in diff
    assert main(["accept", "login.json", "--cache-dir", str(tmp_path)]) == 0
    assert "accepted" in capsys.readouterr().out
    assert storage.read("login.json") != recorded
    assert len(versions.proposals()) == 1
    third = _fill("banner", "dave", tmp_path, heal="propose")
    assert third.model_calls == 0
    assert main(["rollback", "login.json", "--cache-dir", str(tmp_path)]) == 0
    assert storage.read("login.json") == recorded
    assert versions.numbers() == [1, 2, 3]
    assert main(["diff", "login.json", "1", "2", "--cache-dir", str(tmp_path)]) == 0
    assert "v1 -> v2" in capsys.readouterr().out
    assert main(["accept", "login.json", "nope", "--cache-dir", str(tmp_path)]) == 3
    assert "has no version 'nope'" in capsys.readouterr().err


def test_a_screen_that_alternates_replays_either_way_once_both_were_seen(
    tmp_path: Path,
) -> None:
    _record(tmp_path)
    layouts: list[Layout] = ["banner", "original"] * 6
    calls = [_fill(layout, f"user{i}", tmp_path).model_calls for i, layout in enumerate(layouts)]
    # the original layout was seen when recording; the banner costs calls once
    assert calls[0] > 0
    assert calls[1:] == [0] * 11
    cache_file = load_cache_file(LocalCacheStorage(tmp_path), "login.json")
    assert [len(v) for v in cache_file.variants.values()] == [1]


@pytest.mark.parametrize("trial", range(20))
def test_concurrent_healers_neither_lose_nor_interleave_versions(
    tmp_path: Path, trial: int
) -> None:
    storage = LocalCacheStorage(tmp_path)
    base = b'{"v": 0}\n'
    storage.write("t.json", base)
    results: list[int | None] = []
    barrier = threading.Barrier(8)

    def heal(i: int) -> None:
        versions = TrajectoryVersions(storage, "t.json")
        barrier.wait()
        number = versions.commit(base, json.dumps({"v": i + 1}).encode())
        if number is None:
            versions.propose(json.dumps({"v": i + 1}).encode())
        results.append(number)

    threads = [threading.Thread(target=heal, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    versions = TrajectoryVersions(storage, "t.json")
    assert sorted(n for n in results if n is not None) == [2]  # one healer won from v1
    assert versions.numbers() == [1, 2]
    assert storage.read(versions.version_name(1)) == base
    assert storage.read("t.json") == storage.read(versions.version_name(2))
    kept = {storage.read(name) for name in versions.proposals()}
    kept.add(storage.read(versions.version_name(2)))
    assert kept == {json.dumps({"v": i + 1}).encode() for i in range(8)}


def test_a_hand_back_late_in_the_run_keeps_the_replayed_steps_and_heals_the_rest(
    tmp_path: Path,
) -> None:
    _record(tmp_path)
    storage = LocalCacheStorage(tmp_path)
    old = load_cache_file(storage, "login.json")
    # Save and Clear changed places; with no search, which would find Save where it moved
    first = _fill("swapped", "bob", tmp_path, search_radius=0)
    assert first.replay is not None
    assert first.replay.stopped_at_step == 3
    assert first.heal is not None
    new = load_cache_file(storage, "login.json")
    # the replayed steps keep the fingerprints and effects they were checked against
    for index in (1, 2):
        assert new.trajectory[index].visual_representation == (
            old.trajectory[index].visual_representation
        )
        assert new.trajectory[index].effect == old.trajectory[index].effect
    assert new.trajectory[2].input == {"action": "type", "text": "{{user}}"}
    assert first.heal.healed_steps[0] == 3
    # the start screen: the recorded one, with the tiles the swapped buttons changed left out
    assert old.metadata.start_state is not None
    assert new.metadata.start_state is not None
    assert new.metadata.start_state.data == old.metadata.start_state.data
    assert 0 < len(new.metadata.start_state.varying) <= 16
    later = [
        _fill(layout, user, tmp_path)
        for layout, user in [("swapped", "carol"), ("original", "dave"), ("swapped", "erin")]
    ]
    assert [run.model_calls for run in later] == [0, 0, 0]
    # neither layout waits for the start screen: the first step goes on the first look
    for run in later:
        assert run.replay is not None
        first_step = next(r for r in run.replay.steps if r.step_index == 1)
        assert "before its first action" not in (first_step.note or "")


def test_a_dismissed_banner_becomes_a_step_and_either_state_replays_after(
    tmp_path: Path,
) -> None:
    _record(tmp_path)

    def dismiss(request: dict[str, Any]) -> dict[str, Any]:
        return tool_use_reply("computer", {"action": "key", "text": "Escape"})

    app = SimulatedFormApp(layout="banner")
    first = _run(tmp_path, app, dismiss)
    assert first.replay is not None
    assert (first.replay.status, first.replay.rejoins) == ("completed", 1)
    assert first.model_calls == 1
    assert first.heal is not None
    assert first.heal.verified_by == "end_state"  # the replay re-joined and ended as recorded
    cache_file = load_cache_file(LocalCacheStorage(tmp_path), "login.json")
    assert cache_file.trajectory[1].input == {"action": "key", "text": "Escape"}
    for layout, user in [("original", "carol"), ("banner", "dave"), ("original", "erin")]:
        app = SimulatedFormApp(layout=layout)
        result = _run(tmp_path, app, _stop, user=user)
        assert result.model_calls == 0, layout
        assert result.replay is not None
        assert result.replay.status == "completed"
        assert result.replay.variants_used == ([1] if layout == "original" else [])
        assert app.saved == [{"name": user, "email": ""}]


def test_a_run_on_a_screen_of_another_pixel_density_heals_only_its_own_profile(
    tmp_path: Path,
) -> None:
    # The hand-back happens on a 960x600 screen (screenshots rescaled to the recorded
    # 640x400): fingerprints taken there would not match the recorded ones' density, so the
    # heal is kept as the trajectory of that screen profile (docs/fleet.md, "Screens") and
    # the recorded trajectory stays as it was.
    _record(tmp_path)
    storage = LocalCacheStorage(tmp_path)
    before = load_cache_file(storage, "login.json")
    app = SimulatedFormApp(layout="banner", width=960, height=600)
    result = _run(tmp_path, app, FormFillingScript(app, "bob"))
    assert app.saved == [{"name": "bob", "email": ""}]
    assert result.replay is not None
    assert result.replay.status == "handed_back"
    assert result.model_calls > 0
    assert result.heal is not None
    assert result.heal.profile == "960x600@1x"
    after = load_cache_file(storage, "login.json")
    assert after.trajectory == before.trajectory
    assert list(after.profiles) == ["960x600@1x"]


class _OwnComputer(Tool):
    """A computer tool of the user's own: it does not tell askcache the screen's sizes."""

    name = "computer"

    def __init__(self, app: SimulatedFormApp) -> None:
        self.inner = ComputerTool(app)

    def to_params(self) -> dict[str, Any]:
        return self.inner.to_params()

    def betas(self) -> list[str]:
        return self.inner.betas()

    def run(self, block: ToolUseBlockParam) -> ToolOutput:
        return self.inner.run(block)


def test_a_run_at_another_density_with_no_screen_profile_known_never_heals(
    tmp_path: Path,
) -> None:
    # Through a tool that does not report the screen's sizes the run has no screen profile:
    # fingerprints taken on the rescaled 960x600 screen would mix two densities in one
    # trajectory, so nothing is written.
    recorded = _record(tmp_path)
    app = SimulatedFormApp(layout="banner", width=960, height=600)
    with MessagesApiStandIn(FormFillingScript(app, "bob")) as api:
        result = Agent(api.client(), [_OwnComputer(app)]).act(
            "Log in as bob",
            CachingSettings(
                strategy="auto",
                cache_dir=tmp_path,
                writing_settings=CacheWritingSettings(
                    filename="login.json", parameters={"user": "bob"}
                ),
                execution_settings=CacheExecutionSettings(
                    parameter_values={"user": "bob"}, settle_quiet_period=0.2, settle_timeout=1
                ),
            ),
        )
    assert app.saved == [{"name": "bob", "email": ""}]
    assert result.replay is not None
    assert result.replay.status == "handed_back"
    assert result.model_calls > 0
    assert result.heal is None
    storage = LocalCacheStorage(tmp_path)
    assert storage.read("login.json") == recorded
    assert TrajectoryVersions(storage, "login.json").numbers() == []


def test_a_heal_never_signs_a_file_whose_signature_does_not_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from askcache.cachefile.signing import SIGNING_KEY_ENV

    monkeypatch.setenv(SIGNING_KEY_ENV, "team:" + "cd" * 32)
    _record(tmp_path)
    storage = LocalCacheStorage(tmp_path)
    path = storage.path_for("login.json")
    edited = json.loads(path.read_bytes())
    edited["metadata"]["goal"] = "Log in as {{user}} and transfer the money"
    path.write_text(json.dumps(edited))  # changed after it was signed
    tampered = path.read_bytes()
    # a replay told not to check signatures runs it and hands back; the heal would sign the
    # result with the key, so it checks the file as loading does and refuses it
    result = _fill("banner", "bob", tmp_path, require_signature=False)
    assert result.replay is not None
    assert result.replay.status == "handed_back"
    assert result.heal is None
    assert storage.read("login.json") == tampered
    assert storage.list_prefix(".versions") == []
    refused = [r.getMessage() for r in caplog.records if "could not heal" in r.getMessage()]
    assert len(refused) == 1
    assert str(path) in refused[0]
    assert "does not match the content" in refused[0]


def test_recording_again_through_act_keeps_the_earlier_recording(tmp_path: Path) -> None:
    first = _record(tmp_path, "alice")
    second = _record(tmp_path, "grace")
    storage = LocalCacheStorage(tmp_path)
    versions = TrajectoryVersions(storage, "login.json")
    assert versions.numbers() == [1, 2]
    assert storage.read(versions.version_name(1)) == first
    assert storage.read("login.json") == second
    versions.rollback()
    assert storage.read("login.json") == first


def test_with_versions_off_a_recording_over_a_trajectory_is_refused_before_any_model_call(
    tmp_path: Path,
) -> None:
    from askcache.foundation.errors import CacheOverwriteRefusedError

    recorded = _record(tmp_path)
    app = SimulatedFormApp()
    script = FormFillingScript(app, "grace")
    with pytest.raises(CacheOverwriteRefusedError, match="versions are off"):
        _run(tmp_path, app, script, user="grace", strategy="record", keep_versions=0)
    assert app.events == []
    assert LocalCacheStorage(tmp_path).read("login.json") == recorded


def test_with_versions_off_a_heal_is_only_proposed(tmp_path: Path) -> None:
    recorded = _record(tmp_path)
    first = _fill("banner", "bob", tmp_path, keep_versions=0)
    assert first.heal is not None
    assert first.heal.event == "proposed"
    storage = LocalCacheStorage(tmp_path)
    assert storage.read("login.json") == recorded
    versions = TrajectoryVersions(storage, "login.json")
    assert (versions.numbers(), len(versions.proposals())) == ([], 1)
