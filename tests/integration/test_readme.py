"""The README's offline Quick start runs as pasted, and every example is named in the docs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from askcache.storage import LocalCacheStorage, load_cache_file

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
