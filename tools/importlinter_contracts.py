"""import-linter contract types of askcache's own (registered in pyproject.toml under
``[tool.importlinter] contract_types``; ``lint-imports`` finds this package because it puts the
directory it runs in, the repository's root, on ``sys.path``).

:class:`NoAncestorImportsContract` (``no_ancestor_imports``): no module imports a package it is
part of. ``acyclic_siblings`` finds every cycle between the children of a package, but it cannot
see one between a module and its own package's ``__init__`` (``storage/ledger/engine.py``
importing ``askcache.storage.ledger``, whose ``__init__`` imports ``engine``); together the two
leave no cycle of any kind. Every import counts, those inside a function or under
``TYPE_CHECKING`` included (grimp reads them all).
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

__all__ = ["AncestorImport", "NoAncestorImportsContract", "ancestor_imports"]

AncestorImport = tuple[str, str, list[tuple[int, str]]]
"""(importer, the package of its own it imports, [(line number, line)])."""


def ancestor_imports(graph: ImportGraph, containers: set[str]) -> list[AncestorImport]:
    """Every import, in the modules of ``containers`` (and the containers themselves), of a
    package the importing module is inside of, sorted."""
    found: list[AncestorImport] = []
    modules = set(containers)
    for container in containers:
        modules |= graph.find_descendants(container)
    for importer in sorted(modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if importer.startswith(imported + "."):
                lines = [
                    (detail["line_number"], detail["line_contents"])
                    for detail in graph.get_import_details(importer=importer, imported=imported)
                ]
                found.append((importer, imported, lines))
    return found


class NoAncestorImportsContract(Contract):
    """No module in ``containers`` imports one of its ancestor packages.

    Configuration: ``containers``, the packages whose modules are checked (the packages
    themselves included)."""

    type_name = "no_ancestor_imports"

    containers = fields.SetField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        containers: set[str] = self.containers  # type: ignore[assignment]
        missing = sorted(c for c in containers if c not in graph.modules)
        if missing:
            raise ValueError(f"no such package: {', '.join(missing)}")
        found = ancestor_imports(graph, containers)
        return ContractCheck(kept=not found, metadata={"imports": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported, lines in check.metadata["imports"]:
            output.print_error(f"{importer} imports its own package {imported}:", bold=True)
            for number, text in lines:
                output.indent_cursor()
                output.print_error(f"line {number}: {text}", bold=False)
            output.new_line()
