"""``askcache verify``: the auto-verify loop as a command, with a real fix command (a Python
script run through the shell) rewriting the candidate image between iterations."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from askcache.cli.app import main
from askcache.testing import MessagesApiStandIn, text_reply

# The fix command: records what it was given, then redraws the candidate with a smaller red
# square (SIDES[iteration]); 0 means identical to the source.
FIXER = """
import json, os, sys
from pathlib import Path
from PIL import Image, ImageDraw
here = Path(sys.argv[1])
given = json.loads(sys.stdin.read())
iteration = int(os.environ["ASKCACHE_ITERATION"])
saved = json.loads(Path(os.environ["ASKCACHE_REPORT"]).read_text())
with (here / "calls.jsonl").open("a") as log:
    log.write(json.dumps({"iteration": iteration, "stdin": given, "file": saved,
                          "score": os.environ["ASKCACHE_PARITY_SCORE"]}) + "\\n")
side = json.loads((here / "sides.json").read_text())[iteration]
image = Image.new("RGB", (100, 100), "white")
if side:
    ImageDraw.Draw(image).rectangle((0, 0, side - 1, side - 1), fill="red")
image.save(here / "candidate.png")
"""


def _square(path: Path, side: int) -> None:
    image = Image.new("RGB", (100, 100), "white")
    if side:
        ImageDraw.Draw(image).rectangle((0, 0, side - 1, side - 1), fill="red")
    image.save(path)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    _square(tmp_path / "source.png", 0)
    (tmp_path / "fix.py").write_text(FIXER)
    return tmp_path


def _verify(work: Path, first: int, sides: list[int], *extra: str) -> int:
    """Run ``askcache verify`` with a candidate of side ``first``, fixed to ``sides[n]``."""
    _square(work / "candidate.png", first)
    (work / "sides.json").write_text(json.dumps(sides))
    fixer = f"{shlex.quote(sys.executable)} {shlex.quote(str(work / 'fix.py'))} {work}"
    return main(
        [
            "verify",
            str(work / "source.png"),
            str(work / "candidate.png"),
            "--fix-command",
            fixer,
            "--output",
            str(work / "out"),
            *extra,
        ]
    )


def _calls(work: Path) -> list[dict[str, object]]:
    path = work / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _summary(work: Path) -> dict[str, object]:
    path = work / "out" / "screenshots" / "verify-iterations" / "summary.json"
    data: dict[str, object] = json.loads(path.read_text())
    return data


def test_parity_reached_exits_0_with_the_history_where_the_seed_says(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _verify(work, 30, [0, 20, 0]) == 0  # 30 px square -> 20 px -> none
    history = work / "out" / "screenshots" / "verify-iterations"
    for n in (1, 2, 3):
        assert (history / f"iteration-{n:03d}" / "parity.png").is_file()
        assert (history / f"iteration-{n:03d}" / "report.json").is_file()
    summary = _summary(work)
    assert (summary["exit"], summary["final_score"]) == ("success", 100.0)
    calls = _calls(work)
    assert [c["iteration"] for c in calls] == [1, 2]
    first = calls[0]
    assert first["stdin"]["parityScore"] == 91.0  # type: ignore[index]
    assert first["stdin"]["recommendations"]  # type: ignore[index]
    assert {k: v for k, v in first["file"].items() if k != "verdict"} == first["stdin"]  # type: ignore[attr-defined]
    assert first["score"] == "91"
    out = capsys.readouterr().out
    assert "iteration 1: FAIL, parity 91.00" in out
    assert "parity reached: 100.00 >= 99" in out


def test_no_progress_exits_1_on_diminishing_returns(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _verify(work, 30, [30] * 11) == 1  # the fix changes nothing
    summary = _summary(work)
    assert (summary["exit"], summary["proceed"]) == ("diminishing_returns", False)
    assert len(summary["iterations"]) == 4  # type: ignore[arg-type]
    assert "parity not reached (diminishing_returns)" in capsys.readouterr().out


def test_max_iterations_exits_1_and_the_limits_are_options(work: Path) -> None:
    assert _verify(work, 30, [0, 25, 20, 0], "--max-iterations", "2") == 1
    assert _summary(work)["exit"] == "max_iterations"
    assert _verify(work, 30, [0], "--parity-threshold", "90", "--score-only") == 0  # 91 >= 90
    assert _summary(work)["exit"] == "success"


def test_a_failing_fix_command_exits_2_and_keeps_the_history(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _square(work / "candidate.png", 30)
    code = main(
        [
            "verify",
            str(work / "source.png"),
            str(work / "candidate.png"),
            "--fix-command",
            "exit 3",
            "--output",
            str(work / "out"),
        ]
    )
    assert code == 2
    summary = _summary(work)
    assert summary["exit"] == "error"
    assert "fix command exited 3 at iteration 1" in str(summary["error"])
    assert len(summary["iterations"]) == 1  # type: ignore[arg-type]
    assert "error after 1 iteration(s)" in capsys.readouterr().out


def test_an_unreadable_candidate_exits_2(work: Path) -> None:
    (work / "sides.json").write_text("[0]")
    code = main(
        [
            "verify",
            str(work / "source.png"),
            str(work / "missing.png"),
            "--fix-command",
            "true",
            "--output",
            str(work / "out"),
        ]
    )
    assert code == 2
    assert "missing.png" in str(_summary(work)["error"])


def test_invalid_limits_exit_3_and_usage_errors_64(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _verify(work, 30, [0], "--parity-threshold", "150") == 3
    assert "parity_threshold" in capsys.readouterr().err
    assert main(["verify", str(work / "source.png"), str(work / "candidate.png")]) == 64
    assert "--fix-command" in capsys.readouterr().err


def test_the_vision_judges_recommendations_reach_the_fix_command(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = {
        "parityScore": 87,
        "gaps": [{"area": "Hero section", "issue": "Background image missing", "severity": "high"}],
        "recommendations": ["Add hero background image from src/assets"],
    }
    done = {"verdict": "PASS", "confidence": 97, "parityScore": 100, "gaps": []}
    answers = [text_reply(f"```json\n{json.dumps(a)}\n```") for a in (seed, done)]
    with MessagesApiStandIn(answers) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "stand-in-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        assert _verify(work, 30, [0, 0], "--judge", "vision", "--model", "claude-test") == 0
    assert len(api.requests) == 2
    assert api.requests[0]["model"] == "claude-test"
    calls = _calls(work)
    assert len(calls) == 1
    assert calls[0]["stdin"] == seed
    summary = _summary(work)
    assert [i["parity_score"] for i in summary["iterations"]] == [87, 100]  # type: ignore[attr-defined]
