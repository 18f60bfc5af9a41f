"""No two modules of the package share a file name (``__init__.py`` aside): a name says which
module it is without its folder (in a traceback, an editor's tab, a search result)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import askcache

PACKAGE = Path(askcache.__file__).parent


def test_no_two_modules_share_a_file_name() -> None:
    by_name: defaultdict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "__init__.py" and "__pycache__" not in path.parts:
            by_name[path.name].append(path.relative_to(PACKAGE).as_posix())
    repeated = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not repeated, f"file names that repeat: {repeated}"
