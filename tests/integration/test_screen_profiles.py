"""Screen profiles, learned once: a run on a screen the file was not recorded on learns it,
the next run there makes no model call, and the other screens are unaffected.

The first tests use the simulated form (drawn with Pillow at any size) through the real
``anthropic`` client and the local stand-in; the last ones run Debian's xcalc under Xvfb on a
2x display and on a smaller screen (``bench/screens.py``, which writes the same runs into
docs/benchmarks.md), judging every click against the key boxes xwininfo gives.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bench.faults import CALC_KEYS, record_xcalc
from bench.screens import ALL_CLEAR, CHANGES, SCREENS, Screen, run_on

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
from askcache.heal.trajectory import PreparedHeal, apply_heal
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.testing.simulated import Layout

pytestmark = pytest.mark.integration


def _act(cache_dir: Path, app: SimulatedFormApp, user: str, strategy: str) -> ActResult:
    tool = ComputerTool(app)
    script = FormFillingScript(app, user, to_model=tool.from_screen)
    with MessagesApiStandIn(script) as api:
        return Agent(api.client(), [tool]).act(
            f"Log in as {user}",
            CachingSettings(
                strategy=strategy,  # type: ignore[arg-type]
                cache_dir=cache_dir,
                writing_settings=CacheWritingSettings(
                    filename="login.json", parameters={"user": user}
                ),
                execution_settings=CacheExecutionSettings(
                    parameter_values={"user": user}, settle_quiet_period=0.2, settle_timeout=1
                ),
            ),
        )


def _on(size: tuple[int, int], layout: Layout, user: str, cache_dir: Path) -> ActResult:
    app = SimulatedFormApp(width=size[0], height=size[1], layout=layout)
    result = _act(cache_dir, app, user, "auto")
    assert app.saved == [{"name": user, "email": ""}]
    return result


def test_a_new_screen_is_learned_once_and_the_others_keep_their_trajectory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = _act(tmp_path, SimulatedFormApp(), "alice", "record")  # 640x400
    assert recorded.conversation.recorded_file == "login.json"
    storage = LocalCacheStorage(tmp_path)
    before = load_cache_file(storage, "login.json")
    assert str(before.profile) == "640x400@1x"

    # A 1280x800 screen, the form drawn at 2x and laid out otherwise (a banner): the
    # recorded steps are tried scaled, the first click's check fails, the model completes
    # the task, and the run is kept as the profile's trajectory.
    learning = _on((1280, 800), "banner", "bob", tmp_path)
    assert learning.replay is not None
    assert learning.replay.handback_steps == [1]
    assert (learning.replay.profile, learning.replay.learning) == ("1280x800@1x", True)
    assert learning.model_calls > 0
    assert learning.heal is not None
    assert (learning.heal.event, learning.heal.profile) == ("healed", "1280x800@1x")
    learned = load_cache_file(storage, "login.json")
    assert list(learned.profiles) == ["1280x800@1x"]
    assert learned.trajectory == before.trajectory  # the recorded screen's: untouched
    assert learned.variants == before.variants
    profile = learned.profiles["1280x800@1x"]
    assert str(profile.coordinate_space) == "1280x800"
    assert str(profile.display_size) == "1280x800"
    assert "bob" not in storage.read("login.json").decode()  # parameters stay parameters
    assert TrajectoryVersions(storage, "login.json").numbers() == [1, 2]  # one new version
    entries = [r for r in open_ledger(storage).records("login.json") if r.event == "healed"]
    assert [e.profile for e in entries] == ["1280x800@1x"]

    # The next runs on that profile replay its trajectory: no model call.
    for user in ("carol", "dave"):
        again = _on((1280, 800), "banner", user, tmp_path)
        assert (again.model_calls, again.heal) == (0, None)
        assert again.replay is not None
        assert (again.replay.profile, again.replay.learning) == ("1280x800@1x", False)
        assert again.replay is not None
        assert again.replay.status == "completed"
    # The recorded screen replays its own trajectory, as before.
    home = _on((640, 400), "original", "erin", tmp_path)
    assert home.model_calls == 0
    assert home.replay is not None
    assert home.replay.status == "completed"
    # and the banner there is still unknown to it: learning 1280x800 healed nothing else.
    other = _on((640, 400), "banner", "frank", tmp_path)
    assert other.replay is not None
    assert other.replay.handback_steps == [1]
    assert other.heal is not None
    assert other.heal.profile is None
    healed = load_cache_file(storage, "login.json")
    assert healed.profiles == learned.profiles  # and the learned profile kept as it was
    replays = [r for r in open_ledger(storage).records("login.json") if r.event == "replay"]
    assert {r.profile for r in replays} == {"1280x800@1x", "640x400@1x"}

    # show, list and report name each profile.
    assert main(["show", "login", "--cache-dir", str(tmp_path)]) == 0
    shown = capsys.readouterr().out
    assert "screen profiles: 640x400@1x (recorded, " in shown
    assert "1280x800@1x (learned " in shown
    assert "screen profile 1280x800@1x, learned" in shown
    assert main(["list", "--cache-dir", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["files"][0]["profiles"] == ["640x400@1x", "1280x800@1x"]
    assert main(["diff", "login", "1", "2", "--cache-dir", str(tmp_path)]) == 0
    diffed = capsys.readouterr().out
    assert "+ screen profile 1280x800@1x, learned:" in diffed
    report = tmp_path / "report.html"
    assert main(["report", "login", "--cache-dir", str(tmp_path), "--output", str(report)]) == 0
    page = report.read_text()
    assert "Screen profiles: 640x400@1x (recorded" in page
    assert "screen profile 1280x800@1x&#x27;s trajectory" in page


def test_a_learned_profile_heals_on_its_own_screen_and_keeps_the_old_way(
    tmp_path: Path,
) -> None:
    # The application changes on the learned screen (its buttons swapped): that profile's
    # trajectory heals, its old way kept as its variant; the recorded trajectory is untouched.
    _act(tmp_path, SimulatedFormApp(), "alice", "record")
    storage = LocalCacheStorage(tmp_path)
    recorded = load_cache_file(storage, "login.json")
    _on((1280, 800), "banner", "bob", tmp_path)
    learned = load_cache_file(storage, "login.json").profiles["1280x800@1x"]
    changed = _on((1280, 800), "swapped", "carol", tmp_path)
    assert changed.replay is not None
    assert (changed.replay.profile, changed.replay.learning) == ("1280x800@1x", False)
    assert changed.replay.handback_steps == [1]
    assert changed.heal is not None
    assert changed.heal.profile == "1280x800@1x"
    healed = load_cache_file(storage, "login.json")
    assert healed.trajectory == recorded.trajectory
    assert healed.profiles["1280x800@1x"].trajectory != learned.trajectory
    assert healed.profiles["1280x800@1x"].variants  # the banner way, kept
    for layout, user in (("swapped", "dave"), ("banner", "erin")):
        again = _on((1280, 800), layout, user, tmp_path)
        assert again.model_calls == 0
        assert again.replay is not None
        assert again.replay.status == "completed"


def test_a_learned_profile_is_rolled_back_with_its_version(tmp_path: Path) -> None:
    _act(tmp_path, SimulatedFormApp(), "alice", "record")
    storage = LocalCacheStorage(tmp_path)
    recorded = storage.read("login.json")
    _on((1280, 800), "banner", "bob", tmp_path)
    assert load_cache_file(storage, "login.json").profiles
    assert main(["rollback", "login", "--cache-dir", str(tmp_path)]) == 0
    assert storage.read("login.json") == recorded
    again = _on((1280, 800), "banner", "carol", tmp_path)  # learned again
    assert again.heal is not None
    assert again.heal.profile == "1280x800@1x"


def test_two_screens_learned_at_the_same_time_are_both_kept(tmp_path: Path) -> None:
    # Two machines replay the same recorded file and each learns its own screen; the later
    # commit finds the file changed (the other profile learned) and makes its heal again
    # on it, instead of leaving a proposal. The same profile learned twice stays a proposal.
    first, second = tmp_path / "a", tmp_path / "b"
    _act(first, SimulatedFormApp(), "alice", "record")
    second.mkdir()
    shutil.copy(first / "login.json", second / "login.json")
    recorded = (first / "login.json").read_bytes()
    _on((1280, 800), "banner", "bob", first)
    _on((960, 600), "banner", "carol", second)
    theirs = LocalCacheStorage(second)
    storage = LocalCacheStorage(first)
    late = PreparedHeal(
        name="login.json",
        base=recorded,
        new=theirs.read("login.json"),
        mode="auto",
        keep=10,
        healed_steps=[1, 2, 3],
        verified_by="model_completion",
        proposal=TrajectoryVersions(storage, "login.json").proposal_name(),
        profile="960x600@1x",
    )
    outcome = apply_heal(storage, late)
    assert outcome.event == "healed"
    both = load_cache_file(storage, "login.json")
    assert sorted(both.profiles) == ["1280x800@1x", "960x600@1x"]
    assert (
        both.profiles["960x600@1x"] == load_cache_file(theirs, "login.json").profiles["960x600@1x"]
    )
    for size, user in (((1280, 800), "dave"), ((960, 600), "erin")):
        assert _on(size, "banner", user, first).model_calls == 0
    twice = late.model_copy(
        update={"proposal": TrajectoryVersions(storage, "login.json").proposal_name()}
    )
    assert apply_heal(storage, twice).event == "proposed"


# xcalc under Xvfb: a 2x display and a smaller screen ------------------------------------


@pytest.fixture(scope="module")
def xcalc_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12+30= recorded once on xcalc on a 1280x800 screen."""
    folder = tmp_path_factory.mktemp("xcalc")
    record_xcalc(folder)
    return folder / "xcalc.json"


@pytest.mark.parametrize("screen", SCREENS, ids=[s.profile for s in SCREENS])
def test_xcalc_on_another_screen_is_learned_once_without_a_wrong_click(
    screen: Screen, xcalc_recording: Path, tmp_path: Path
) -> None:
    shutil.copy(xcalc_recording, tmp_path / "xcalc.json")
    # The learning run: the recorded steps tried scaled; the first click does not pass its
    # check, so nothing is clicked before the hand-back; the model presses AC and 1 2 + 3 0 =
    # where the keys are; the verified run becomes the profile's trajectory.
    learning = run_on(screen, tmp_path, "learn")
    assert learning.wrong == [], learning.clicked
    assert learning.handbacks == 1
    assert learning.clicked == [ALL_CLEAR, *CALC_KEYS]  # every click on the key it meant
    assert learning.presses == len(learning.clicked)  # and nothing else reached X
    assert not any(learning.replayed)
    assert learning.profile == screen.profile
    # The next run on that screen: the learned trajectory, no model call, every click on
    # the key the task needs there.
    again = run_on(screen, tmp_path, "replay")
    assert (again.status, again.model_calls, again.handbacks) == ("completed", 0, 0)
    assert again.wrong == []
    assert again.clicked == [ALL_CLEAR, *CALC_KEYS]
    assert again.presses == len(again.clicked)
    assert all(again.replayed)
    # Key 3 relabelled 7 on the learned screen: handed back before it is clicked.
    relabelled = next(c for c in CHANGES if c.name == "xcalc: key 3 relabelled 7")
    changed = run_on(screen, tmp_path, relabelled.name, relabelled)
    assert changed.status == "handed_back"
    assert changed.wrong == []
    assert changed.clicked == [ALL_CLEAR, 47, 48, 50]  # AC 1 2 +, and not the 3
    assert changed.presses == 4  # what reached X: those four, nothing more
    assert changed.handed_back_at == 5
