"""The askcache command as a daily tool: exit codes, --json, one-line errors, lint, stats."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from askcache.cachefile.format import (
    CacheFile,
    CacheMetadata,
    CoordinateSpace,
    VisualValidationConfig,
)
from askcache.cli.app import main
from askcache.cli.commands.stats import summarize
from askcache.cli.prices import ModelPrice, parse_price, price_for
from askcache.foundation.messages import Usage
from askcache.storage.cache_storage import LocalCacheStorage, save_cache_file
from askcache.storage.ledger import RunRecord, open_ledger
from tests.helpers import computer_call

ASKCACHE = [sys.executable, "-m", "askcache.cli"]


@pytest.fixture
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo")
    assert main(["demo", "--offline", "--screen", "simulated", "--output", str(folder)]) == 0
    return folder


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ASKCACHE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_list_and_show_as_json_and_without_the_suffix(
    demo_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["list", "--cache-dir", str(demo_dir), "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in listing["files"]] == ["contact-form.json"]
    assert listing["files"][0]["steps"] == 4
    assert main(["show", "contact-form", "--cache-dir", str(demo_dir), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["name"] == "contact-form.json"
    assert len(shown["trajectory"]) == 4
    assert main(["show", "contact-form", "--cache-dir", str(demo_dir)]) == 0
    assert "validation: phash" in capsys.readouterr().out


def test_user_mistakes_are_one_line_errors_with_documented_codes(
    tmp_path: Path, demo_dir: Path
) -> None:
    missing = _run("list", "--cache-dir", str(tmp_path / "nowhere"))
    assert missing.returncode == 3
    assert missing.stderr.strip().count("\n") == 0
    assert "no cache folder" in missing.stderr
    assert "Traceback" not in missing.stderr
    typo = _run("show", "contct", "--cache-dir", str(demo_dir))
    assert typo.returncode == 3
    assert "did you mean contact-form.json?" in typo.stderr
    usage = _run("lst")
    assert usage.returncode == 64
    assert "usage error" in usage.stderr
    assert "invalid choice: 'lst'" in usage.stderr
    bad_price = _run("stats", "--price", "opus=cheap", "--cache-dir", str(demo_dir))
    assert bad_price.returncode == 64
    assert "MODEL=INPUT,OUTPUT" in bad_price.stderr
    no_key = _run("demo", "--online", env={"ANTHROPIC_API_KEY": ""})
    assert no_key.returncode == 3
    assert no_key.stderr.strip() == (
        "askcache: error: askcache demo --online needs ANTHROPIC_API_KEY: "
        "export ANTHROPIC_API_KEY=..., or run offline: askcache demo --offline"
    )
    as_json = _run("show", "nope", "--cache-dir", str(demo_dir), "--json")
    assert as_json.returncode == 3
    assert json.loads(as_json.stdout)["exit_code"] == 3
    debug = _run("--debug", "show", "nope", "--cache-dir", str(demo_dir))
    assert "Traceback" in debug.stderr
    assert "CacheNotFoundError" in debug.stderr
    assert debug.returncode == 3  # the same exit code as without --debug
    usage = _run("show", "--bogus", "--json")
    assert usage.returncode == 64
    assert json.loads(usage.stdout)["exit_code"] == 64
    not_png = demo_dir.parent / "notes.png"
    not_png.write_text("not a picture")
    where = ["--cache-dir", str(demo_dir)]
    broken = _run("replay", "contact-form", "--dry-run", "--screenshot", str(not_png), *where)
    assert broken.returncode == 3
    assert "not a PNG or JPEG image" in broken.stderr
    assert "BytesIO" not in broken.stderr


def test_help_has_no_raw_markup_and_every_option_is_explained() -> None:
    for command in ([], ["list"], ["show"], ["lint"], ["stats"], ["demo"]):
        done = _run(*command, "--help")
        assert done.returncode == 0, done.stderr
        assert "``" not in done.stdout
        assert ":class:" not in done.stdout
    assert "exit codes:" in _run("--help").stdout


def test_a_closed_pipe_ends_quietly(demo_dir: Path) -> None:
    for name in ("a", "b", "c"):
        (demo_dir / f"{name}.json").write_bytes((demo_dir / "contact-form.json").read_bytes())
    reader = subprocess.run(
        f"{sys.executable} -m askcache.cli list --cache-dir {demo_dir} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert reader.stdout.startswith("- a.json")
    assert "Traceback" not in reader.stderr
    assert "BrokenPipe" not in reader.stderr


def test_record_example_without_a_key_says_so_in_one_line() -> None:
    example = Path(__file__).parents[2] / "examples" / "record.py"
    done = subprocess.run(
        [sys.executable, str(example), "Do it", "--filename", "x.json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "ANTHROPIC_API_KEY": ""},
    )
    assert done.returncode == 3
    assert done.stderr.strip().count("\n") == 0
    assert "ANTHROPIC_API_KEY" in done.stderr


def _lintable(storage: LocalCacheStorage) -> None:
    steps = [
        computer_call("left_click", coordinate=[10, 10]),
        computer_call("type", text="{{user}} {{password}}"),
        computer_call("left_click", coordinate=[900, 10]),
    ]
    steps[0].visual_representation = "ffff0000ffff0000"
    steps[1].visual_representation = "xyz"
    cache_file = CacheFile(
        metadata=CacheMetadata(
            goal="Log in as {{user}}",
            coordinate_space=CoordinateSpace(width=640, height=400),
            visual_validation=VisualValidationConfig(
                method="phash", hash_size=8, region_size=100, threshold=64
            ),
        ),
        trajectory=steps,
        cache_parameters={"user": "who logs in", "unused": "nothing"},
    )
    save_cache_file(storage, "login.json", cache_file)
    storage.write("broken.json", b'{"metadata": ')


def test_lint_names_each_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    storage = LocalCacheStorage(tmp_path)
    _lintable(storage)
    assert main(["lint", "--cache-dir", str(tmp_path), "--json"]) == 1
    report = {f["name"]: f["problems"] for f in json.loads(capsys.readouterr().out)["files"]}
    assert [p["check"] for p in report["broken.json"]] == ["schema"]
    found = {(p["level"], p["check"], p["step"]) for p in report["login.json"]}
    assert found == {
        ("error", "schema", None),  # the strict loader refuses it (its first problem) ...
        (
            "error",
            "threshold",
            None,
        ),  # ... and lint lists every problem  # 64 of 64 bits accepts anything
        ("error", "parameters", None),  # {{password}} undeclared
        ("warning", "parameters", None),  # 'unused' unused
        ("error", "hash", 1),  # 'xyz' is not hex
        ("warning", "unchecked", 2),  # a click without a fingerprint
        ("error", "screen", 2),  # (900, 10) is outside 640x400
        ("warning", "unchecked", None),  # no detail hash: a relabelled key is not seen
    }
    assert main(["lint", "login", "--cache-dir", str(tmp_path)]) == 1
    text = capsys.readouterr().out
    assert "error: [screen] step 2: left_click at (900, 10) lies outside" in text
    assert "1 file(s): 5 error(s), 3 warning(s)" in text


def test_lint_passes_a_fresh_recording(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--cache-dir", str(demo_dir), "--strict"]) == 0
    assert "contact-form.json: ok" in capsys.readouterr().out


def test_stats_adds_up_the_ledger_and_prices_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = open_ledger(LocalCacheStorage(tmp_path))
    model = "claude-sonnet-4-5-20250929"
    for _ in range(3):
        ledger.append(
            RunRecord(
                trajectory="login.json",
                status="completed",
                saved_model_calls=5,
                saved_tokens=100_000,
                saved_seconds=20.0,
                model=model,
            )
        )
    ledger.append(
        RunRecord(
            trajectory="login.json",
            status="handed_back",
            model_calls=2,
            usage=Usage(input_tokens=10_000, output_tokens=1_000),
            saved_model_calls=3,
            saved_tokens=50_000,
            saved_seconds=None,
            model=model,
        )
    )
    ledger.append(RunRecord(trajectory="other.json", status="completed", model="mystery-1"))
    assert main(["stats", "--cache-dir", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    login = out["trajectories"][0]
    assert login["trajectory"] == "login.json"
    assert (login["runs"], login["completed"], login["handed_back"]) == (4, 3, 1)
    assert login["hit_rate"] == 0.75
    assert (login["model_calls"], login["tokens"]) == (2, 11_000)
    assert (login["saved_model_calls"], login["saved_tokens"]) == (18, 350_000)
    assert login["saved_seconds"] == 60.0
    assert login["dollars_saved"] == pytest.approx(350_000 * 3 / 1e6)
    assert login["dollars_spent"] == pytest.approx((10_000 * 3 + 1_000 * 15) / 1e6)
    assert out["total"]["runs"] == 5
    assert out["total"]["unpriced_models"] == ["mystery-1"]
    assert main(["stats", "login", "--cache-dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "login.json: 4 replays, hit rate 75%" in text
    assert "($1.05)" in text
    assert main(["stats", "--cache-dir", str(tmp_path), "--price", "mystery-1=1,2"]) == 0
    assert "no price for" not in capsys.readouterr().out
    # a name with neither replays nor a file is a mistake, not "no replays"
    assert main(["stats", "logn", "--cache-dir", str(tmp_path)]) == 3
    assert "cache file 'logn.json' not found" in capsys.readouterr().err


def test_prices_match_the_longest_prefix_and_parse() -> None:
    assert price_for("claude-opus-4-1-20250805") == ModelPrice(input=15, output=75)
    assert price_for("claude-opus-4-5-20251101") == ModelPrice(input=5, output=25)
    assert price_for("unknown") is None
    assert price_for("claude-sonnet-5-5") == ModelPrice(input=2, output=10)  # the default model
    assert price_for("claude-opus-5-5") == ModelPrice(input=4, output=20)
    assert price_for("claude-opus-4-20250514") == ModelPrice(input=15, output=75)
    assert price_for("claude-opus-4-6") == ModelPrice(input=5, output=25)
    assert price_for("claude-opus-4-8") is None  # not listed: no price, not an older one's
    assert parse_price("m=1.5,7") == ("m", ModelPrice(input=1.5, output=7))
    with pytest.raises(ValueError, match="MODEL=INPUT,OUTPUT"):
        parse_price("m=1")
    assert summarize("x", []).hit_rate is None


def test_the_demo_reports_progress_on_stderr_and_json_on_stdout(tmp_path: Path) -> None:
    done = _run("demo", "--offline", "--screen", "simulated", "--json", "--output", str(tmp_path))
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["ok"] is True
    assert [r["model_calls"] for r in summary["runs"]][:2] == [5, 0]
    assert summary["runs"][2]["replay"] == "handed_back"
    progress = done.stderr.splitlines()
    assert progress[0].startswith("askcache demo: 1/4 recording")
    assert summary["runs"][3]["model_calls"] == 0  # the healed file replays on the change
    assert progress[2].startswith("askcache demo: 3/4 replaying on the changed form")


def test_replay_dry_run_checks_without_acting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from askcache.testing import SimulatedFormApp
    from tests.helpers import record_form

    record_form(LocalCacheStorage(tmp_path))
    fresh, changed = SimulatedFormApp(), SimulatedFormApp(layout="banner")
    fresh.screenshot().save(tmp_path / "before.png")
    changed.screenshot().save(tmp_path / "changed.png")
    args = ["replay", "form", "--dry-run", "--cache-dir", str(tmp_path)]
    assert main([*args, "--screenshot", f"1={tmp_path / 'before.png'}"]) == 1
    out = capsys.readouterr().out
    assert "1  left_click   would run (checked on screen 1)" in out  # as recorded
    assert "the replay would stop at step 2" in out  # typing needs the focused field
    assert main([*args, "--screenshot", str(tmp_path / "changed.png"), "--json"]) == 1
    steps = json.loads(capsys.readouterr().out)["steps"]
    assert "no longer matches" in steps[0]["problem"]
    assert changed.events == []
    assert main(["replay", "form", "--cache-dir", str(tmp_path), "--screenshot", "x.png"]) == 64
    assert main([*args]) == 64  # no screens given: a usage error
    assert "one of the arguments --screenshot --display is required" in capsys.readouterr().err
    assert main([*args, "--screenshot", "x=shot.png"]) == 64
    assert "expected STEP=PNG with a step number" in capsys.readouterr().err
    # a step no screen was given for is not checked, and never reported as passing
    assert main([*args, "--screenshot", f"9={tmp_path / 'before.png'}"]) == 1
    out = capsys.readouterr().out
    assert "would run" not in out
    assert "1  left_click   NOT CHECKED: no screen given for this step" in out
    assert (
        "0 of 3 acting steps checked on the screenshots given; not confirmed: step(s) 1, 2, 3 "
        "not checked (no screen for them)" in out
    )
    # a parameter without a value is a usage error, not silently dropped
    assert main([*args, "--screenshot", str(tmp_path / "before.png"), "--param", "name"]) == 64
    assert "expected NAME=VALUE" in capsys.readouterr().err
