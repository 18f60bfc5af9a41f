"""Relayout askcache's modules (issue 32, item 5): the foundation in one package, and no two
modules of src sharing a file name.

    python scripts/relayout.py [--dry-run] [--no-ruff]     (from anywhere in the repository)

What it does, in this order:

1. Moves with ``git mv`` (:data:`MOVES`): the root's floor modules (errors, limits, geometry,
   parameters, redaction, messages, actions, scaling, settings) and the ``screen/`` package
   into ``askcache/foundation/`` (``screen/`` must go with them: ``messages`` imports it and
   it imports ``errors``), and renames the modules whose file names repeat elsewhere in src.
   ``askcache/replay/`` and ``askcache/loop/`` are left alone (renamed with the replay's
   rebuild).
2. Rewrites every reference to an old module, in every file git tracks or would track
   (src, tests, bench, scripts, examples, tools, docs, README, CHANGELOG, pyproject):
   dotted names (``askcache.screen.state.StepEffect``), paths (``src/askcache/errors.py``),
   the package-relative names docs/architecture.md writes in backticks (``screen/state.py``,
   ``scaling.ScreenProfile``), the ``:mod:`.report``` references of a package's own modules,
   and ``from askcache import limits`` style imports of a moved module.
3. The import contracts (pyproject.toml): the floors become one ``foundation`` layer of the
   ``layers`` contract, and a ``foundation`` contract keeps their order inside the package;
   docs/architecture.md's picture follows, with a second picture of the foundation's floors.
4. Lists the moves in CHANGELOG.md, sorts the imports and formats the Python files it changed
   (ruff, when found), rewraps the docstring, comment and Markdown lines it made longer than
   100 characters, and writes docs/cache-format.schema.json again (scripts/generate_schema.py).
5. Prints the file names that still repeat.

Every step does only what is left to do: running it again, or on a tree that has moved on (a
branch merged after a first run that still writes the old names), moves nothing twice and
rewrites only what still names an old module. A move whose target exists is skipped with a
warning, and so is the rewriting of an old name that is a module again.
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

FOUNDATION = "foundation"
FLOOR = [
    "actions",
    "errors",
    "geometry",
    "limits",
    "messages",
    "parameters",
    "redaction",
    "scaling",
    "settings",
]
"""The root modules that are floors of the layers contract; with ``screen`` they are the
foundation."""

MOVES: list[tuple[str, str]] = [
    ("screen/", f"{FOUNDATION}/screen/"),
    *[(f"{name}.py", f"{FOUNDATION}/{name}.py") for name in FLOOR],
    # file names that repeat (the other of each pair keeps its name)
    ("screen/state.py", f"{FOUNDATION}/screen/thumbnails.py"),  # replay/state.py
    ("tools/windows.py", "tools/xlib_windows.py"),  # screen/windows.py
    ("storage/base.py", "storage/cache_storage.py"),  # tools/base.py
    ("tools/base.py", "tools/tool.py"),  # storage/base.py
    ("cli/lint.py", "cli/lint_rules.py"),  # cli/commands/lint.py
    ("cli/report.py", "cli/html_report.py"),  # cli/commands/report.py
    ("cli/commands/signing.py", "cli/commands/sign.py"),  # cachefile/signing.py
    ("agent/sync.py", "agent/outbox_sync.py"),  # cli/commands/sync.py
    ("parity/loop.py", "parity/auto_verify.py"),  # conversation/loop.py
    ("conversation/loop.py", "conversation/turns.py"),  # parity/loop.py, the loop/ package
    ("testing/postgres.py", "testing/postgres_server.py"),  # storage/ledger/postgres.py
    ("heal/profile.py", "heal/screen_profile.py"),  # replay/profile.py
]
"""(old, new) paths inside src/askcache, as the old tree named them; a path ending in ``/`` is
a package. A module moved with its package is named by its old path (``screen/state.py``)."""

SKIPPED = ("replay/", "loop/")
"""Packages whose modules this script does not rename (the replay's rebuild does)."""

FOUNDATION_DOC = '''"""The foundation: what every other part of askcache stands on, with nothing of
askcache below it. Its floors, lowest first (the ``foundation`` import contract keeps them so):
:mod:`.limits` and :mod:`.geometry`, :mod:`.parameters`, :mod:`.redaction`, :mod:`.errors`,
:mod:`.screen` (measures of pixels), :mod:`.messages`, :mod:`.actions` and :mod:`.scaling`,
:mod:`.settings`.
"""

__all__: list[str] = []
'''

CHANGELOG_BEGIN = "<!-- relayout: begin -->"
CHANGELOG_END = "<!-- relayout: end -->"
LINE_LIMIT = 100

_warnings: list[str] = []


def warn(text: str) -> None:
    _warnings.append(text)
    print(f"warning: {text}", file=sys.stderr)


# --- the map from old names to new ones -------------------------------------------------


def _package_moves() -> list[tuple[str, str]]:
    return [(old, new) for old, new in MOVES if old.endswith("/")]


def _after_packages(path: str) -> str:
    """Where ``path`` (an old path) is once the packages have moved."""
    for old, new in _package_moves():
        if path.startswith(old):
            return new + path[len(old) :]
    return path


def _dotted(path: str) -> str:
    return "askcache." + path.removesuffix("/").removesuffix(".py").replace("/", ".")


def renames() -> dict[str, str]:
    """Old path -> new path, for every name a reference may use: an old path, and a module's
    path after its package moved (``foundation/screen/state.py``)."""
    out: dict[str, str] = {}
    for old, new in MOVES:
        out[old] = new
        middle = _after_packages(old)
        if middle not in (old, new):
            out[middle] = new
    return out


# --- 1. the moves -------------------------------------------------------------------------


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def move(root: Path, package: Path, dry_run: bool) -> list[tuple[str, str]]:
    done: list[tuple[str, str]] = []
    foundation = package / FOUNDATION
    if not (foundation / "__init__.py").exists():
        print(f"create {foundation.relative_to(root)}/__init__.py")
        if not dry_run:
            foundation.mkdir(exist_ok=True)
            (foundation / "__init__.py").write_text(FOUNDATION_DOC)
            git(root, "add", str(foundation / "__init__.py"))
    for old, new in MOVES:
        if old.startswith(SKIPPED) or new.startswith(SKIPPED):
            raise SystemExit(f"{old} -> {new}: replay/ and loop/ are renamed by the rebuild")
        source = package / (old if old.endswith("/") else _after_packages(old))
        target = package / new
        if not source.exists():
            continue
        if target.exists():
            warn(f"{source.relative_to(root)} not moved: {target.relative_to(root)} exists")
            continue
        print(f"git mv {source.relative_to(root)} {target.relative_to(root)}")
        done.append((old, new))
        if not dry_run:
            target.parent.mkdir(parents=True, exist_ok=True)
            git(root, "mv", str(source), str(target))
    return done


# --- 2. the references --------------------------------------------------------------------


def text_files(root: Path) -> list[Path]:
    names = git(root, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    out = []
    for name in sorted(set(names.split("\0"))):
        path = root / name
        if not name or not path.is_file() or path.resolve() == Path(__file__).resolve():
            continue
        if path.suffix in {".png", ".jpg", ".jpeg", ".gif", ".ico", ".gz", ".zip", ".db"}:
            continue
        out.append(path)
    return out


def _alternation(names: list[str]) -> str:
    if not names:
        return "(?!)"
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


_PATH_RE = re.compile(r"(?<![\w.-])((?:src/)?askcache/)([\w/]*\w(?:\.py)?/?)")
"""A path under askcache/ (``src/askcache/screen/state.py``)."""
_REL_PATH_RE = re.compile(r"(?<=`)()([\w/]*(?:\.py|/))(?=`)")
"""A package-relative path in backticks (``screen/state.py``, ``screen/``)."""


class Rewriter:
    """Rewrites the references to old modules in one file's text."""

    def __init__(self, package: Path, *, planned: bool = False) -> None:
        """``planned``: rewrite as if every move were done (a dry run)."""
        live = []
        for old, new in renames().items():
            if (package / old).exists():
                if planned or not (package / new).exists():
                    if planned:
                        live.append((old, new))
                    continue  # not moved: nothing to rewrite
                warn(f"askcache/{old} exists again: references to it are left as they are")
                continue
            live.append((old, new))
        self.paths = dict(live)
        self.dotted = {_dotted(old): _dotted(new) for old, new in live}
        self.package = package
        dotted = _alternation(list(self.dotted))
        self._dotted_re = re.compile(rf"(?<![\w.])({dotted})(?!\w)")
        relative = _alternation([d.removeprefix("askcache.") for d in self.dotted])
        self._rel_dotted_re = re.compile(rf"(?<=`)({relative})(?=\.(?!py`)[A-Za-z_])")

    def new_path(self, path: str) -> str | None:
        """The new path of an old module or package path (``screen/state.py``,
        ``screen/``, ``screen/seen.py``, ``screen``), or ``None``."""
        if path in self.paths:
            return self.paths[path]
        for old, new in sorted(self.paths.items(), key=lambda item: -len(item[0])):
            if old.endswith("/") and (path == old[:-1] or path.startswith(old)):
                return new[:-1] if path == old[:-1] else new + path[len(old) :]
        return None

    def _path(self, match: re.Match[str]) -> str:
        new = self.new_path(match.group(2))
        return match.group(0) if new is None else match.group(1) + new

    def rewrite(self, path: Path, text: str) -> str:
        if not self.paths:
            return text
        text = self._dotted_re.sub(lambda m: self.dotted[m.group(1)], text)
        text = _PATH_RE.sub(self._path, text)
        if path.suffix == ".md":
            text = _REL_PATH_RE.sub(self._path, text)
            text = self._rel_dotted_re.sub(
                lambda m: self.dotted["askcache." + m.group(1)].removeprefix("askcache."), text
            )
        if path.suffix == ".py":
            text = self._own_package_refs(path, text)
            text = self._module_imports(path, text)
        return text

    def _own_package_refs(self, path: Path, text: str) -> str:
        """``:mod:`.report``` in a module of the package that held ``report.py``."""
        try:
            folder = path.parent.resolve().relative_to(self.package.resolve()).as_posix()
        except ValueError:
            return text
        prefix = "" if folder == "." else folder + "/"
        for old, new in self.paths.items():
            old_folder, _, old_name = old.rpartition("/")
            new_folder, _, new_name = new.rpartition("/")
            if old.endswith("/") or (old_folder + "/" if old_folder else "") != prefix:
                continue
            if old_folder != new_folder:
                continue  # moved to another package: a relative name cannot follow it
            stem, new_stem = old_name.removesuffix(".py"), new_name.removesuffix(".py")
            text = re.sub(rf"(?<=`)(~?)\.{stem}(?=[`.])", rf"\1.{new_stem}", text)
        return text

    def _module_imports(self, path: Path, text: str) -> str:
        """``from askcache import limits`` -> ``from askcache.foundation import limits``."""
        try:
            tree = ast.parse(text)
        except SyntaxError:
            warn(f"{path}: not Python 3 syntax, its module imports are left")
            return text
        lines = text.splitlines(keepends=True)
        edits: list[tuple[int, int, str]] = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            if not node.module.startswith("askcache"):
                continue
            moved = [a for a in node.names if f"{node.module}.{a.name}" in self.dotted]
            if not moved:
                continue
            indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)  # type: ignore[union-attr]
            statements = []
            kept = [a for a in node.names if a not in moved]
            if kept:
                names = ", ".join(_alias(a) for a in kept)
                statements.append(f"{indent}from {node.module} import {names}\n")
            for alias in moved:
                new = self.dotted[f"{node.module}.{alias.name}"]
                new_package, _, new_name = new.rpartition(".")
                local = alias.asname or alias.name
                as_part = "" if local == new_name else f" as {local}"
                if as_part:
                    warn(f"{path}:{node.lineno}: imports {new} as {local} (rename its uses)")
                statements.append(f"{indent}from {new_package} import {new_name}{as_part}\n")
            assert node.end_lineno is not None
            edits.append((node.lineno - 1, node.end_lineno, "".join(statements)))
        for start, end, new_text in sorted(edits, reverse=True):
            lines[start:end] = [new_text]
        return "".join(lines)


def _alias(alias: ast.alias) -> str:
    return alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"


ORIGINAL: dict[Path, str] = {}
"""Each file this script changed, as it was."""


def _write(path: Path, new: str, dry_run: bool) -> None:
    if not dry_run:
        ORIGINAL.setdefault(path, path.read_text())
        path.write_text(new)


def rewrite_references(root: Path, package: Path, dry_run: bool) -> list[Path]:
    rewriter = Rewriter(package, planned=dry_run)
    changed = []
    for path in text_files(root):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        if path.name == "CHANGELOG.md" and CHANGELOG_BEGIN in text:
            head, _, rest = text.partition(CHANGELOG_BEGIN)
            kept, _, tail = rest.partition(CHANGELOG_END)
            new = (
                rewriter.rewrite(path, head)
                + CHANGELOG_BEGIN
                + kept
                + CHANGELOG_END
                + rewriter.rewrite(path, tail)
            )
        else:
            new = rewriter.rewrite(path, text)
        if new != text:
            changed.append(path)
            print(f"rewrite {path.relative_to(root)}")
            _write(path, new, dry_run)
    return changed


# --- 3. the contracts and the picture ------------------------------------------------------

_MOVED_LAYERS = {*FLOOR, "screen"}


def _contract_block(text: str, contract_id: str) -> tuple[int, int] | None:
    match = re.search(
        rf'^\[\[tool\.importlinter\.contracts\]\]\nid = "{contract_id}"\n', text, re.M
    )
    if match is None:
        return None
    following = text.find("\n[[", match.end())
    return match.start(), len(text) if following < 0 else following + 1


def contracts(root: Path, dry_run: bool) -> list[str]:
    """The floors as one layer, and the foundation's own contract; returns the floors (top
    down), or [] when done before."""
    path = root / "pyproject.toml"
    text = path.read_text()
    block = _contract_block(text, "layers")
    if block is None:
        raise SystemExit("pyproject.toml: no import contract with id 'layers'")
    start, end = block
    contract = text[start:end]
    listed = re.search(r"^layers = \[\n(.*?)^\]", contract, re.M | re.S)
    assert listed is not None
    entries = re.findall(r'^\s*"([^"]+)",?$', listed.group(1), re.M)
    floors, kept = [], []
    for entry in entries:
        parts = {p.strip() for p in entry.split("|")}
        if parts <= _MOVED_LAYERS:
            floors.append(entry)
            if FOUNDATION not in kept:
                kept.append(FOUNDATION)
        elif parts & _MOVED_LAYERS:
            raise SystemExit(f"pyproject.toml: layer {entry!r} mixes the foundation and others")
        else:
            kept.append(entry)
    if not floors:
        return []
    layers = "".join(f'    "{entry}",\n' for entry in kept)
    contract = contract[: listed.start(1)] + layers + contract[listed.end(1) :]
    own = "".join(f'    "{entry}",\n' for entry in floors)
    addition = (
        "\n[[tool.importlinter.contracts]]\n"
        'id = "foundation"\n'
        'name = "The foundation: a lower floor never imports a higher one"\n'
        'type = "layers"\n'
        f'containers = ["askcache.{FOUNDATION}"]\n'
        "exhaustive = true\n"
        f"layers = [\n{own}]\n"
    )
    if _contract_block(text, "foundation") is None:
        contract = contract.rstrip("\n") + "\n" + addition + "\n"
    print("rewrite pyproject.toml: the layers contract")
    _write(path, text[:start] + contract + text[end:], dry_run)
    return floors


def picture(root: Path, floors: list[str], dry_run: bool) -> None:
    """docs/architecture.md: the floors' rows become one, and a picture of their own."""
    path = root / "docs" / "architecture.md"
    text = path.read_text()
    head, marker, rest = text.partition("## The layers")
    if not marker:
        warn("docs/architecture.md: no '## The layers' section: draw the picture by hand")
        return
    before, fence, after = rest.partition("```\n")
    body, _, tail = after.partition("```\n")
    rows = body.splitlines(keepends=True)
    names = [re.split(r"\s{2,}", row.strip(" │\n"))[0] if " │" in row else None for row in rows]
    floor_rows = [row for row, name in zip(rows, names, strict=True) if name in floors]
    if not floor_rows:
        return
    first = next(i for i, name in enumerate(names) if name in floors)
    width = len(floor_rows[0].rstrip("\n"))
    line = " │ " + FOUNDATION.ljust(38) + "the ground: the floors drawn below"
    new_row = line.ljust(width - 1) + "│\n"
    kept = [row for row, name in zip(rows, names, strict=True) if name not in floors]
    kept.insert(first, new_row)
    top = next(row for row in rows if "┌" in row)
    bottom = next(row for row in rows if "└" in row)
    caption = (
        f'                 askcache/{FOUNDATION}/ by itself: contract "{FOUNDATION}", same rules\n'
    )
    second = (
        f"\n`{FOUNDATION}/` has floors of its own, kept by a contract of their own:\n\n"
        + "```\n"
        + caption
        + top
        + "".join(floor_rows)
        + bottom
        + "```\n"
    )
    tail = second + tail
    new = head + marker + before + fence + "".join(kept) + "```\n" + tail
    new = _prose(new)
    print("rewrite docs/architecture.md: the pictures")
    _write(path, new, dry_run)


_PROSE = [
    (
        "Each layer is a subpackage or a module at the package root, with",
        f"Each layer is a subpackage (the lowest, `{FOUNDATION}/`, has floors of its own), with",
    ),
    ("are at the root, below `errors`.", f"are in `{FOUNDATION}/`, below `errors`."),
    ("### The ground, and the root", f"### The root, and `{FOUNDATION}/`: the ground"),
]


def _prose(text: str) -> str:
    for old, new in _PROSE:
        if old in text:
            text = text.replace(old, new)
        elif new not in text:
            warn(f"docs/architecture.md: {old!r} not found: say so by hand")
    return text


# --- 4. the changelog, ruff, long lines -----------------------------------------------------


def changelog(root: Path, done: list[tuple[str, str]], dry_run: bool) -> None:
    path = root / "CHANGELOG.md"
    if not done or not path.exists():
        return
    text = path.read_text()
    rows = []
    for old, new in done:
        rows.append(f"| `{_dotted(old)}` | `{_dotted(new)}` |")
        if old.endswith("/"):
            rows[-1] = rows[-1].removesuffix(" |") + " (its modules with it) |"
    section = (
        f"{CHANGELOG_BEGIN}\n### Moved\n\n"
        f"The foundation is one package, `askcache.{FOUNDATION}`, and no two modules share a\n"
        "file name. The old paths are not kept (no release used them): import from the new\n"
        "module.\n\n"
        "| old module | new module |\n| --- | --- |\n"
    )
    if CHANGELOG_BEGIN in text:
        head, _, rest = text.partition(CHANGELOG_BEGIN)
        kept, _, tail = rest.partition(CHANGELOG_END)
        old_rows = [r for r in kept.splitlines() if r.startswith("| `")]
        new = head + section + "\n".join([*old_rows, *rows]) + "\n" + CHANGELOG_END + tail
    elif "## Unreleased\n" in text:
        block = section + "\n".join(rows) + "\n" + CHANGELOG_END + "\n\n"
        new = text.replace("## Unreleased\n\n", "## Unreleased\n\n" + block, 1)
    else:
        warn("CHANGELOG.md: no '## Unreleased' section: list the moves by hand")
        return
    print("rewrite CHANGELOG.md: the moves")
    _write(path, new, dry_run)


def ruff(root: Path, files: list[Path]) -> None:
    python_files = [str(f) for f in files if f.suffix == ".py" and f.exists()]
    candidates = [root / ".venv" / "bin" / "ruff", Path(sys.executable).parent / "ruff"]
    found = next((str(c) for c in candidates if c.exists()), shutil.which("ruff"))
    if not python_files:
        return
    if found is None:
        warn("ruff not found: sort the imports and format the changed files by hand")
        return
    sort = [found, "check", "--select", "I", "--fix", "-q", *python_files]
    subprocess.run(sort, cwd=root, check=False)  # what it cannot fix, the full check reports
    subprocess.run([found, "format", "-q", *python_files], cwd=root, check=True)


LONG_LINES_CHECKED = ("src/", "scripts/", "examples/", "tools/", "docs/", "README.md")
"""Where lines are kept to :data:`LINE_LIMIT`: ruff's (tests/ and bench/ are exempt) and the
prose of the docs."""

_QUOTES = ('"""', "'''")
_MD_BLOCK = re.compile(r"\s*([|#<]|```|$)")
"""A Markdown line that is not prose: a table row, a heading, HTML, a fence, a blank."""
_LIST_ITEM = re.compile(r"(\s*)([-*]|\d+\.)\s")


def _python_prose(text: str) -> dict[int, str]:
    """Line number (1-based) -> ``"doc"`` for the lines of a string statement (a docstring,
    an attribute's docstring), ``"comment"`` for a line with a comment."""
    kinds: dict[int, str] = {}
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and node.end_lineno is not None
        ):
            for number in range(node.lineno, node.end_lineno + 1):
                kinds[number] = "doc"
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            kinds.setdefault(token.start[0], "comment")
    return kinds


def _markdown_prose(text: str) -> dict[int, str]:
    kinds: dict[int, str] = {}
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and not _MD_BLOCK.match(line):
            kinds[number] = "md"
    return kinds


def _lead(line: str, kind: str) -> tuple[str, int]:
    """What a continuation line of ``line`` starts with, and where its words may be cut."""
    indent = line[: len(line) - len(line.lstrip())]
    if kind == "comment":
        return indent + "# ", line.find("#") + 2
    item = _LIST_ITEM.match(line) if kind == "md" else None
    if item:
        return item.group(1) + " " * (len(item.group(2)) + 1), item.end()
    return indent, len(indent)


def _continues(line: str, following: str, lead: str, kind: str) -> bool:
    """Whether ``following`` is the next line of ``line``'s paragraph."""
    body = following[len(lead) :]
    if not following.startswith(lead) or body.startswith((" ", *_QUOTES)) or not body.strip():
        return False
    if re.match(r"([-*>:]|\d+\.|\.\.)\s", body) or line.rstrip().endswith(_QUOTES):
        return False
    return kind != "comment" or body.strip() != "#"


def rewrap(root: Path, path: Path, original: set[str]) -> None:
    """The prose lines (docstrings, comments, Markdown paragraphs) this script made longer
    than :data:`LINE_LIMIT`: the words past the limit move to the start of the paragraph's
    next line, or to a new line."""
    relative = path.relative_to(root).as_posix()
    if path.suffix not in (".py", ".md") or not relative.startswith(LONG_LINES_CHECKED):
        return
    text = path.read_text()
    try:
        kinds = _python_prose(text) if path.suffix == ".py" else _markdown_prose(text)
    except (SyntaxError, tokenize.TokenError):
        return
    lines = text.splitlines()
    changed = carried = False  # carried: the line before passed words on to this one
    number = 0  # 0-based
    while number < len(lines):
        line, kind = lines[number], kinds.get(number + 1)
        if kind is None or len(line) <= LINE_LIMIT or not (carried or line not in original):
            number += 1
            carried = False
            continue
        lead, first = _lead(line, kind)
        cut = line.rfind(" ", first + 1, LINE_LIMIT + 1)
        if cut < 0:
            warn(f"{relative}:{number + 1}: longer than {LINE_LIMIT}: shorten it by hand")
            number += 1
            carried = False
            continue
        head, overflow = line[:cut].rstrip(), line[cut + 1 :]
        following = lines[number + 1] if number + 1 < len(lines) else ""
        lines[number] = head
        if kinds.get(number + 2) == kind and _continues(line, following, lead, kind):
            lines[number + 1] = lead + overflow + " " + following[len(lead) :]
        else:
            lines.insert(number + 1, lead + overflow)
            kinds = {(n + 1 if n > number + 1 else n): k for n, k in kinds.items()}
            kinds[number + 2] = kind
        changed = carried = True
        number += 1
    if changed:
        path.write_text("\n".join(lines) + ("\n" if text.endswith("\n") else ""))
        print(f"rewrap {relative}")


def schema(root: Path) -> None:
    """docs/cache-format.schema.json again: it holds the models' docstrings, which name
    modules."""
    script = root / "scripts" / "generate_schema.py"
    if script.exists():
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
        subprocess.run([sys.executable, str(script)], cwd=root, env=env, check=True)


# --- 5. the names that still repeat ---------------------------------------------------------


def duplicates(package: Path) -> dict[str, list[str]]:
    by_name: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        if path.name != "__init__.py" and "__pycache__" not in path.parts:
            by_name.setdefault(path.name, []).append(path.relative_to(package).as_posix())
    return {name: paths for name, paths in by_name.items() if len(paths) > 1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="say what would change")
    parser.add_argument("--no-ruff", action="store_true", help="do not sort and format")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent
    root = Path(git(here, "rev-parse", "--show-toplevel").strip())
    package = root / "src" / "askcache"
    if not package.is_dir():
        raise SystemExit(f"{package}: no such package")

    done = move(root, package, args.dry_run)
    changed = rewrite_references(root, package, args.dry_run)
    floors = contracts(root, args.dry_run)
    if floors:
        picture(root, floors, args.dry_run)
    changelog(root, done, args.dry_run)
    if not args.dry_run:
        if not args.no_ruff:
            ruff(root, changed)
        for path, original in ORIGINAL.items():
            if path.exists():
                rewrap(root, path, set(original.splitlines()))
        schema(root)

    print("\nbefore the moves:" if args.dry_run else "")
    for name, paths in sorted(duplicates(package).items()):
        rebuild = [p for p in paths if p.startswith(SKIPPED)]
        note = " (left to the replay's rebuild)" if rebuild else ""
        print(f"file name still repeats: {name}: {', '.join(paths)}{note}")
    if _warnings:
        print(f"\n{len(_warnings)} warning(s), above", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
