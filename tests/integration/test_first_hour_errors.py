"""The first hour has no tracebacks: every mistake a new user makes is one line naming the
cause and the fix, with an exit code; ``--debug`` adds the traceback. In the library, the
exception's message is that one line (tracebacks end with it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anthropic
import pytest

from askcache import Agent, CacheWritingSettings, CachingSettings, ComputerTool
from askcache.foundation.errors import InvalidSettingsError, MissingApiKeyError, RemoteStorageError
from askcache.testing import SimulatedFormApp

pytestmark = pytest.mark.integration

ASKCACHE = [sys.executable, "-m", "askcache.cli"]
NO_KEY = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "DISPLAY")}


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ASKCACHE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env=NO_KEY,
    )


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_a_mistyped_command_or_option_names_the_closest_valid_one_first(tmp_path: Path) -> None:
    line = _one_line(_run("lsit"), 64)
    assert line.startswith(
        "askcache: usage error: argument COMMAND: invalid choice: 'lsit'; did you mean 'list'? "
        "(choose from 'demo', 'list'"
    )
    line = _one_line(_run("list", "--cache-dri", str(tmp_path)), 64)
    assert line.startswith(
        "askcache: usage error: unknown option '--cache-dri'; did you mean '--cache-dir'?"
    )
    line = _one_line(_run("demo", "--screen", "simulatd"), 64)
    assert "invalid choice: 'simulatd'; did you mean 'simulated'?" in line
    line = _one_line(_run("show", "x", "--jsno"), 64)
    assert "did you mean '--json'?" in line


def test_missing_files_folders_and_keys_are_one_line_errors(tmp_path: Path) -> None:
    line = _one_line(_run("list", "--cache-dir", str(tmp_path / "nowhere")), 3)
    assert "no cache folder" in line
    assert "give --cache-dir, or set ASKCACHE_CACHE_DIR" in line
    line = _one_line(_run("show", "login", cwd=tmp_path), 3)
    assert "no cache folder '.askcache'" in line
    judge = _one_line(_run("parity", "a.png", "b.png", "--judge", "vision"), 3)
    assert "--judge vision needs ANTHROPIC_API_KEY" in judge
    assert "--judge deterministic" in judge
    line = _one_line(_run("demo", "--online"), 3)
    assert "needs ANTHROPIC_API_KEY: export ANTHROPIC_API_KEY=..., or run offline" in line
    # --debug: the traceback, then the same line and exit code
    debug = _run("--debug", "demo", "--online")
    assert debug.returncode == 3
    assert "Traceback" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1] == line


def test_a_library_call_without_a_key_fails_before_anything_runs_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    app = SimulatedFormApp()
    settings = CachingSettings(
        strategy="record",
        cache_dir=tmp_path,
        writing_settings=CacheWritingSettings(filename="x.json"),
    )
    with pytest.raises(MissingApiKeyError) as info:
        Agent(anthropic.Anthropic(), [ComputerTool(app)]).act("Save a contact", settings)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("calling Claude needs ANTHROPIC_API_KEY: export ANTHROPIC_API_KEY")
    assert "Quick start" in message
    assert app.events == []
    assert list(tmp_path.iterdir()) == []


def test_a_mistyped_or_wrong_typed_setting_is_one_line_closest_name_first() -> None:
    with pytest.raises(InvalidSettingsError) as info:
        CacheWritingSettings(filenme="login.json")  # type: ignore[call-arg]
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(
        "invalid CacheWritingSettings: filenme: unknown field; did you mean 'filename'? "
        "(valid fields of CacheWritingSettings: "
    )
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__
    with pytest.raises(InvalidSettingsError) as info:
        CachingSettings(keep_versions="ten")  # type: ignore[arg-type]
    assert str(info.value) == (
        "invalid CachingSettings: keep_versions: Input should be a valid integer, unable to "
        "parse string as an integer (got 'ten')"
    )


def test_a_script_with_a_mistyped_setting_ends_its_traceback_with_the_line_naming_it(
    tmp_path: Path,
) -> None:
    script = tmp_path / "typo.py"
    script.write_text(
        "from askcache import CacheWritingSettings\nCacheWritingSettings(filenme='x.json')\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith(
        "askcache.foundation.errors.InvalidSettingsError: invalid CacheWritingSettings: filenme: unknown "
        "field; did you mean 'filename'?"
    )
    assert "ValidationError" not in done.stderr  # pydantic's report is not printed first
    assert len(lines) <= 10


def test_unreachable_storage_says_what_to_check() -> None:
    error = RemoteStorageError("s3://bucket/x", "list", "", "Unable to locate credentials")
    assert str(error) == (
        "could not list s3://bucket/x: Unable to locate credentials (check the URL, the "
        "network and the credentials: docs/fleet.md)"
    )


def test_replaying_a_file_that_is_not_there_says_to_record_it_first(tmp_path: Path) -> None:
    from askcache import CacheExecutionSettings
    from askcache.foundation.errors import CacheNotFoundError

    app = SimulatedFormApp()
    settings = CachingSettings(
        strategy="execute",
        cache_dir=tmp_path,
        writing_settings=CacheWritingSettings(filename="login.json"),
        execution_settings=CacheExecutionSettings(),
    )
    client = anthropic.Anthropic(api_key="never-called", base_url="http://127.0.0.1:9")
    with pytest.raises(CacheNotFoundError) as info:
        Agent(client, [ComputerTool(app)]).act("Log in", settings)
    assert str(info.value) == (
        f"cache file 'login.json' not found in {tmp_path}: record it first "
        "(strategy='record', or 'auto' to record it when it is missing)"
    )
    assert app.events == []


def test_the_troubleshooting_page_shows_the_messages_as_printed(tmp_path: Path) -> None:
    page = (Path(__file__).parents[2] / "docs" / "troubleshooting.md").read_text()
    printed = [
        _one_line(_run("demo", "--online"), 3),
        _one_line(_run("list", cwd=tmp_path), 3),
        _one_line(_run("parity", "a.png", "b.png", "--judge", "vision"), 3),
    ]
    with pytest.raises(InvalidSettingsError) as info:
        CachingSettings(keep_versions="ten")  # type: ignore[arg-type]
    printed.append(f"InvalidSettingsError: {info.value}")
    for line in printed:
        assert line in page, line
    typo = _one_line(_run("lsit"), 64)
    assert typo.split(" (choose from")[0] in page
