"""docs/architecture.md against the code: its picture is the import contract's layers, and it
names every module of the package."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import askcache

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()
PACKAGE = Path(askcache.__file__).parent


def _contract(contract_id: str) -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return next(c for c in config["contracts"] if c["id"] == contract_id)


def _drawn(picture: str) -> list[str]:
    return [
        re.split(r"\s{2,}", row.strip("│ "))[0]
        for row in picture.splitlines()
        if row.startswith(" │")
    ]


def test_the_picture_is_the_contracts_layers_top_down() -> None:
    picture = DOC.split("## The layers", 1)[1].split("```", 2)[1]
    assert _drawn(picture) == _contract("layers")["layers"]


def test_every_further_picture_is_the_layers_of_the_contract_it_names() -> None:
    section = DOC.split("## The layers", 1)[1].split("\n## ", 1)[0]
    for picture in section.split("```")[3::2]:  # the pictures after the first
        named = re.search(r'contract "([\w-]+)"', picture.splitlines()[1])
        assert named, f"a picture names no contract: {picture[:80]!r}"
        assert _drawn(picture) == _contract(named.group(1))["layers"]


def test_every_module_has_its_line() -> None:
    rows = re.findall(r"^\| `([a-z0-9_/]+(?:\.py|/))` \|", DOC, re.M)  # the tables' first column
    named = set(rows)
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if "__pycache__" in rel or rel.endswith("__main__.py"):
            continue
        if rel.endswith("__init__.py") and rel != "__init__.py":
            continue  # a package's face: its folder is named
        folders = [rel.rsplit("/", n)[0] + "/" for n in range(1, rel.count("/") + 1)]
        if rel not in named and not any(folder in named for folder in folders):
            missing.append(rel)
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_the_three_questions_are_answered_with_modules_that_exist() -> None:
    where = DOC.split("## Where to look", 1)[1].split("##", 1)[0]
    for module in ("replay/check.py", "heal/trajectory.py", "storage/remote.py"):
        assert f"`{module}`" in where
        assert (PACKAGE / module).exists()
