"""The import contracts see every import (a function's too) and, together, every kind of cycle:
a small package is built with a planted import, and the contracts are checked on its graph."""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path

import grimp
import pytest
from importlinter import configuration
from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
from tools.importlinter_contracts import NoAncestorImportsContract

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _importlinter_configured() -> None:
    configuration.configure()  # what lint-imports does first (the contracts read its timer)


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> grimp.ImportGraph:
    _package(tmp_path, files)
    monkeypatch.syspath_prepend(str(tmp_path))
    return grimp.build_graph("planted", cache_dir=None)


# planted/store/__init__.py imports planted.store.engine, as askcache.storage.ledger does
_CLEAN = {
    "planted/__init__.py": "",
    "planted/store/__init__.py": "from planted.store.engine import Engine\n",
    "planted/store/engine.py": "from planted.store import records\n\nclass Engine: ...\n",
    "planted/store/records.py": "",
}


def _no_ancestor_imports() -> NoAncestorImportsContract:
    return NoAncestorImportsContract(
        name="no ancestor imports", session_options={}, contract_options={"containers": ["planted"]}
    )


def test_a_package_whose_modules_import_downwards_keeps_the_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = _graph(tmp_path, monkeypatch, _CLEAN)
    assert _no_ancestor_imports().check(graph, verbose=False).kept


def test_a_module_importing_its_own_package_inside_a_function_breaks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = """\
        from planted.store import records

        class Engine:
            def open(self) -> object:
                from planted import store

                return store
        """
    graph = _graph(tmp_path, monkeypatch, {**_CLEAN, "planted/store/engine.py": engine})
    check = _no_ancestor_imports().check(graph, verbose=False)
    assert not check.kept
    assert check.metadata["imports"] == [
        ("planted.store.engine", "planted.store", [(5, "from planted import store")])
    ]


def test_a_module_importing_the_root_package_breaks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = "import typing\n\nif typing.TYPE_CHECKING:\n    import planted\n"
    graph = _graph(tmp_path, monkeypatch, {**_CLEAN, "planted/store/records.py": records})
    check = _no_ancestor_imports().check(graph, verbose=False)
    assert [(importer, imported) for importer, imported, _ in check.metadata["imports"]] == [
        ("planted.store.records", "planted")
    ]


def test_a_cycle_closed_inside_a_function_breaks_the_siblings_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = "def late() -> object:\n    from planted.store import engine\n\n    return engine\n"
    graph = _graph(tmp_path, monkeypatch, {**_CLEAN, "planted/store/records.py": records})
    siblings = AcyclicSiblingsContract(
        name="no cycles", session_options={}, contract_options={"ancestors": ["planted"]}
    )
    assert not siblings.check(graph, verbose=False).kept
    assert _no_ancestor_imports().check(graph, verbose=False).kept


def test_askcache_is_held_to_both_contracts() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    registered = dict(entry.split(": ") for entry in config["contract_types"])
    assert registered["no_ancestor_imports"] == (
        "tools.importlinter_contracts.NoAncestorImportsContract"
    )
    kinds = {
        (c["type"], tuple(c.get("ancestors", c.get("containers", ())))) for c in config["contracts"]
    }
    assert ("acyclic_siblings", ("askcache",)) in kinds
    assert ("no_ancestor_imports", ("askcache",)) in kinds
