"""The demo's acts and the ``askcache`` command."""

from __future__ import annotations

from pathlib import Path

import pytest

from askcache.cli.app import main
from askcache.cli.demo import format_summary, run_demo
from askcache.foundation.settings import (
    DEFAULT_DETAIL_BLUR,
    DEFAULT_DETAIL_NOISE_FLOOR,
    DEFAULT_DETAIL_THRESHOLD,
    DEFAULT_NOISE_FLOOR,
    DEFAULT_OTHER_DENSITY_BLUR,
    DEFAULT_OTHER_DENSITY_NOISE_FLOOR,
    DEFAULT_OTHER_DENSITY_REGION_SIZE,
    DEFAULT_OTHER_DENSITY_THRESHOLD,
    DEFAULT_TARGET_THRESHOLD,
    DEFAULT_TONE_CONTRAST_TOLERANCE,
    DEFAULT_TONE_MEAN_TOLERANCE,
)

pytestmark = pytest.mark.integration


def test_demo_on_a_real_tk_app_under_xvfb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    outcome = run_demo(tmp_path)
    assert "offline" in outcome.mode
    assert "Tk contact form on a virtual display (Xvfb" in outcome.where
    assert outcome.record.model_calls == 5
    assert outcome.replay.model_calls == 0
    assert outcome.changed.replay is not None
    assert outcome.changed.replay.stopped_at_step == 1
    assert outcome.changed.status == "done"
    assert all(saved == [{"name": "Ada Lovelace", "email": ""}] for saved in outcome.saved)
    assert outcome.changed.heal is not None
    assert outcome.changed.heal.event == "healed"
    assert outcome.healed is not None
    assert outcome.healed.model_calls == 0
    assert outcome.healed_saved == [{"name": "Ada Lovelace", "email": ""}]
    summary = format_summary(outcome)
    for fragment in (
        "1. Record: 5 model calls",
        "2. Replay on the unchanged app: 0 model calls",
        "MISMATCH -> handed back",
        "vs threshold 2, detail ",
        f"vs {DEFAULT_DETAIL_THRESHOLD}: ok",
        "The replay saved 5 model calls and ",
        "   healed (",
        "4. Replay after the heal, on the changed app: 0 model calls",
    ):
        assert fragment in summary
    # the demo's folder holds cache files only (the form's state is hidden): lint is clean
    assert main(["lint", "--cache-dir", str(tmp_path)]) == 0


def test_cli_demo_list_and_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--offline", "--screen", "simulated", "--output", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "The replay saved 5 model calls" in out
    assert "4. Replay after the heal, on the changed app: 0 model calls" in out
    assert main(["diff", "contact-form.json", "--cache-dir", str(tmp_path)]) == 0
    assert "v1 -> v2 (current)" in capsys.readouterr().out
    assert main(["list", "--cache-dir", str(tmp_path)]) == 0
    assert "contact-form.json" in capsys.readouterr().out
    assert main(["show", "contact-form.json", "--cache-dir", str(tmp_path)]) == 0
    shown = capsys.readouterr().out
    assert (
        "validation: phash, 8x8 hash, 100 px region ±1 px, threshold 2, "
        f"noise floor {DEFAULT_NOISE_FLOOR:g}; "
        "detail 16x16 hash, 48 px region"
        + (f", blur {DEFAULT_DETAIL_BLUR:g}" if DEFAULT_DETAIL_BLUR else "")
        + f", threshold {DEFAULT_DETAIL_THRESHOLD}, "
        f"noise floor {DEFAULT_DETAIL_NOISE_FLOOR:g}; "
        f"for other pixel densities 16x16 hash, {DEFAULT_OTHER_DENSITY_REGION_SIZE} px region, "
        f"blur {DEFAULT_OTHER_DENSITY_BLUR:g}, threshold {DEFAULT_OTHER_DENSITY_THRESHOLD}, "
        f"noise floor {DEFAULT_OTHER_DENSITY_NOISE_FLOOR:g}; "
        f"tone: brightness {DEFAULT_TONE_MEAN_TOLERANCE:.0%}, "
        f"contrast {DEFAULT_TONE_CONTRAST_TOLERANCE:.0%}; "
        f"whole target: 16 columns, threshold {DEFAULT_TARGET_THRESHOLD}"
    ) in shown
    assert shown.count(" + ") >= 3  # each validated step shows the start of its detail hash
    assert "handed_back at step 1" in shown


def test_cli_reports_bad_files_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.json").write_text('{"version": 99}')
    assert main(["show", "bad.json", "--cache-dir", str(tmp_path)]) == 3
    assert "format version 99" in capsys.readouterr().err
    assert main(["show", "../escape.json", "--cache-dir", str(tmp_path)]) == 3
    assert "rejected" in capsys.readouterr().err
    assert main(["list", "--cache-dir", str(tmp_path)]) == 0
    assert "bad.json: unreadable" in capsys.readouterr().out


def test_offline_example_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    example = Path(__file__).parents[2] / "examples" / "offline_record_replay.py"
    done = subprocess.run(
        [sys.executable, str(example), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "replayed with 0 model calls: completed" in done.stdout
    assert "'name': 'Grace Hopper'" in done.stdout
