"""Only askcache.telemetry imports OpenTelemetry: every other module of the package runs
without the ``otel`` extra (tests/integration/test_telemetry_export.py runs a replay so)."""

from __future__ import annotations

import ast
from pathlib import Path

import askcache

PACKAGE = Path(askcache.__file__).parent


def _imports_opentelemetry(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(name == "opentelemetry" or name.startswith("opentelemetry.") for name in names):
            return True
    return False


def test_only_the_telemetry_package_imports_opentelemetry() -> None:
    importing = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if _imports_opentelemetry(path)
    }
    assert importing
    assert {path for path in importing if not path.startswith("telemetry/")} == set()
