"""Shared by the benchmarks: machine facts, and writing a section of docs/benchmarks.md."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
HEADER = """# Benchmarks

Each section is written by one command (`bash scripts/bench.sh
accuracy|speed|savings|storage|fuzz|faults|heal|drift|handback|screens|rerender`, which installs what the benchmark needs and runs `bench/NAME.py`) and says when and where it ran.
Numbers are from those runs only; rerun the command to refresh a section.
"""


def machine() -> str:
    """One paragraph: date, CPU, cores, memory, OS, versions, commit."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kib = int(re.findall(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())[0])
        memory = f", {kib / 1024 / 1024:.0f} GiB"
    except (OSError, IndexError):
        pass
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--", "src", "bench"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if commit and changed:
            commit += " with uncommitted changes to src/ or bench/"
    except OSError:
        commit = "?"
    packages = ", ".join(
        f"{name} {version(name)}" for name in ("pillow", "imagehash", "numpy", "anthropic")
    )
    try:
        load = ", load average {:.2f} / {:.2f} / {:.2f} (1/5/15 min)".format(*os.getloadavg())
    except OSError:
        load = ""
    return (
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {cpu}, {os.cpu_count()} cores{memory}{load}, "
        f"{platform.system()} {platform.release()}; Python {platform.python_version()}, {packages}; "
        f"askcache at {commit or '?'}."
    )


def write_section(name: str, body: str) -> None:
    """Replace (or add) the section ``name`` of docs/benchmarks.md."""
    text = DOC.read_text() if DOC.exists() else HEADER
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    block = f"{start}\n{body.strip()}\n{end}"
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    DOC.write_text(text)
