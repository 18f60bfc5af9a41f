"""The README's offline Quick start runs as pasted, and every example is named in the docs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
MARKER = "<!-- quickstart-offline -->"


def offline_quick_start() -> str:
    readme = (ROOT / "README.md").read_text()
    assert MARKER in readme, "the README lost its offline Quick start marker"
    block = re.search(r"```python\n(.*?)```", readme[readme.index(MARKER) :], re.DOTALL)
    assert block is not None
    return block.group(1)


def test_the_offline_quick_start_runs_as_pasted(tmp_path: Path) -> None:
    code = offline_quick_start()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "DISPLAY")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "recorded: 5 model calls" in done.stdout
    assert "replayed: 0 model calls, completed" in done.stdout
    assert "saved: [{'name': 'Grace Hopper', 'email': ''}]" in done.stdout
    cache_file = load_cache_file(LocalCacheStorage(tmp_path / ".askcache"), "contact.json")
    assert cache_file.metadata.goal == "Save the contact {{person}}"


def test_every_example_is_named_in_the_docs() -> None:
    docs = (ROOT / "README.md").read_text() + "".join(
        page.read_text() for page in (ROOT / "docs").glob("*.md")
    )
    for example in sorted((ROOT / "examples").glob("*.py")):
        assert f"examples/{example.name}" in docs, f"{example.name} is named nowhere in the docs"


CLI_MARKER = "<!-- cli-as-pasted -->"


def readme_cli_commands() -> list[str]:
    """The commands of the README's CLI section, as a user pastes them (comments dropped)."""
    readme = (ROOT / "README.md").read_text()
    assert CLI_MARKER in readme, "the README lost its CLI commands marker"
    block = re.search(r"```bash\n(.*?)```", readme[readme.index(CLI_MARKER) :], re.DOTALL)
    assert block is not None
    lines = [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def test_after_the_set_up_the_readme_cli_commands_run_as_pasted(tmp_path: Path) -> None:
    venv = Path(sys.prefix)
    if not (venv / "bin" / "askcache").exists():
        pytest.skip("not run from the set-up's virtualenv (no bin/askcache beside python)")
    # a fresh clone after the set-up: its .venv/ (this one), no cache folder, no key, no X
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / ".venv").symlink_to(venv)
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "DISPLAY")}
    env.pop("ASKCACHE_CACHE_DIR", None)
    quick = subprocess.run(
        [".venv/bin/python", "-c", offline_quick_start()],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=env,
    )
    assert quick.returncode == 0, quick.stderr
    commands = readme_cli_commands()
    assert len(commands) >= 8
    assert all(command.startswith(".venv/bin/askcache ") for command in commands)
    for command in commands:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=clone,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env=env,
        )
        assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stderr}"
        assert "Traceback" not in done.stderr, command
    assert (clone / "askcache-report-contact.html").exists()
    assert (clone / "askcache-demo-output" / "contact-form.json").exists()
