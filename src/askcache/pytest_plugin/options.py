"""The plugin's options and marker, and what they decide for one test (:class:`TestPlan`).

Where each setting comes from, first found wins:

==============  =====================================================================
mode            ``--askcache-mode``; the test's ``askcache`` marker (``mode=``); the
                ini option ``askcache_mode``; ``off``
allow model     ``--askcache-allow-model``, or the marker's ``allow_model=True``
cache folder    ``--askcache-dir``; the ini option ``askcache_dir``; a folder
                ``askcache/`` next to the test module. A URL (``s3://bucket/prefix``) is
                used as it is; a relative folder from the command line is taken from
                where pytest was started, from the ini file from the ini file's folder
report folder  ``--askcache-report-dir``; the ini option ``askcache_report_dir``;
                ``askcache-reports/`` in the root folder
==============  =====================================================================

As in pytest-recording, a mode given on the command line wins over the marker, so
``--askcache-mode=off`` turns the plugin off for every test, and a marker's mode applies
when the command line gives none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

import pytest

from askcache.foundation.errors import AskCacheError
from askcache.pytest_plugin.naming import safe_part, trajectory_stem

__all__ = [
    "MARKER",
    "MARKER_FIELDS",
    "MarkerError",
    "PluginMode",
    "TestPlan",
    "add_options",
    "plan_for",
]

MARKER = "askcache"
"""The marker's name: ``@pytest.mark.askcache(mode="replay", allow_model=True)``."""

MARKER_FIELDS = ("mode", "allow_model", "name")
"""What the marker takes: ``mode``, ``allow_model`` and ``name`` (the trajectory's file name
in the cache folder, instead of the one made from the node id)."""

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class PluginMode(StrEnum):
    """What the plugin does for a test that uses the ``askcache`` fixture (in the manner of
    pytest-recording's record modes)."""

    RECORD = "record"
    """The model does the test's task and its trajectory is written (over an older one,
    which is kept as a version): askcache's strategy ``record``."""
    REPLAY = "replay"
    """The trajectory is replayed, read-only (strategy ``execute``, heal ``off``); a
    missing trajectory fails the test, and so does a hand-back (with the step, the reason
    and the report page), unless the model is allowed (``--askcache-allow-model`` or the
    marker): then the model finishes the task, as under strategy ``execute``."""
    AUTO = "auto"
    """The trajectory is replayed when it exists and recorded when it does not; a hand-back
    lets the model finish and heals the trajectory (strategy ``auto``)."""
    OFF = "off"
    """Nothing is read or written: the model does the task (strategy ``off``). The default."""


class MarkerError(AskCacheError, ValueError):
    """An ``askcache`` marker with an unknown field or value."""

    def __init__(self, nodeid: str, problem: str) -> None:
        super().__init__(f"the askcache marker of {nodeid}: {problem}")


@dataclass(frozen=True)
class TestPlan:
    """What the plugin does for one test."""

    __test__ = False  # not a test class, whatever pytest collects

    nodeid: str
    """The test's node id."""
    mode: PluginMode
    """The mode in force."""
    allow_model: bool
    """True when the model may finish a replay that handed back in ``replay`` mode."""
    cache_dir: Path | str
    """The cache folder, or a URL of shared storage."""
    folder: str
    """The folder, inside the cache folder, of the test's trajectories (the module's name
    next to the module, its path from the root folder in a cache folder of its own)."""
    names: tuple[str, ...]
    """The test's classes and function, outermost first."""
    params: str | None
    """Its parametrised id."""
    name: str | None
    """The trajectory's file name from the marker (``None``: made from the node id)."""
    report_folder: Path
    """Where the report pages of this module's tests go (the module's path under the report
    folder)."""

    def filename(self, secrets: dict[str, str] | None = None, part: str | None = None) -> str:
        """The trajectory's file name in the cache folder (``.json`` included); ``part``
        tells apart several trajectories of one test (``test_fill-ada-login.json``)."""
        if self.name is not None:
            stem = self.name.removesuffix(".json")
        else:
            stem = f"{self.folder}/{trajectory_stem(self.names, self.params, secrets)}"
        if part is not None:
            stem = f"{stem}-{safe_part(part) or '_'}"
        return f"{stem}.json"


def add_options(parser: pytest.Parser) -> None:
    """The command-line and ini options."""
    group = parser.getgroup("askcache", "askcache: record and replay agent tests")
    group.addoption(
        "--askcache-mode",
        choices=[mode.value for mode in PluginMode],
        default=None,
        help="record, replay, auto or off (the default) for tests using the askcache fixture; "
        "wins over their markers",
    )
    group.addoption(
        "--askcache-allow-model",
        action="store_true",
        default=False,
        help="in replay mode, let the model finish a replay that handed back instead of "
        "failing the test",
    )
    group.addoption(
        "--askcache-dir",
        default=None,
        help="the cache folder or URL (s3://bucket/prefix) for every test; default: askcache/ "
        "next to each test module",
    )
    group.addoption(
        "--askcache-report-dir",
        default=None,
        help="where report pages of replays that handed back go; default: askcache-reports/ "
        "in the root folder",
    )
    parser.addini("askcache_mode", "the mode when neither the command line nor a marker says")
    parser.addini("askcache_dir", "the cache folder or URL (relative: to the ini file's folder)")
    parser.addini("askcache_report_dir", "where report pages go (relative: to the ini file)")


def _location(value: str, base: Path) -> Path | str:
    """A folder (relative to ``base``) or a URL, kept as given."""
    if _URL.match(value):
        return value
    return base / Path(value).expanduser()


def _ini_base(config: pytest.Config) -> Path:
    return config.inipath.parent if config.inipath is not None else config.rootpath


def _marker_fields(item: pytest.Item) -> dict[str, object]:
    fields: dict[str, object] = {}
    for marker in reversed(list(item.iter_markers(MARKER))):  # the closest wins
        if marker.args:
            raise MarkerError(item.nodeid, "takes keywords only (mode=, allow_model=, name=)")
        unknown = sorted(set(marker.kwargs) - set(MARKER_FIELDS))
        if unknown:
            raise MarkerError(
                item.nodeid,
                f"unknown field {', '.join(unknown)} (valid: {', '.join(MARKER_FIELDS)})",
            )
        fields.update(marker.kwargs)
    return fields


def _mode(value: object, nodeid: str) -> PluginMode:
    try:
        return PluginMode(str(value))
    except ValueError:
        valid = ", ".join(mode.value for mode in PluginMode)
        raise MarkerError(nodeid, f"mode {value!r} is not one of {valid}") from None


def _module_path(item: pytest.Item, root: Path) -> PurePosixPath:
    path = Path(item.path).with_suffix("")
    try:
        relative = PurePosixPath(path.relative_to(root).as_posix())
    except ValueError:  # a module outside the root folder
        relative = PurePosixPath(path.name)
    return PurePosixPath(*(safe_part(part) or "_" for part in relative.parts))


def plan_for(item: pytest.Item) -> TestPlan:
    """What the options and the marker decide for ``item``.

    Raises:
        MarkerError: the marker has an unknown field, a mode not known, or a ``name`` that
            is not a string.
    """
    config = item.config
    fields = _marker_fields(item)
    given = config.getoption("--askcache-mode")
    ini_mode = str(config.getini("askcache_mode") or "").strip()
    if given is not None:
        mode = PluginMode(given)
    elif "mode" in fields:
        mode = _mode(fields["mode"], item.nodeid)
    elif ini_mode:
        mode = _mode(ini_mode, item.nodeid)
    else:
        mode = PluginMode.OFF
    allow_model = bool(config.getoption("--askcache-allow-model") or fields.get("allow_model"))
    name = fields.get("name")
    if name is not None and not isinstance(name, str):
        raise MarkerError(item.nodeid, f"name must be a string, not {type(name).__name__}")
    module = _module_path(item, config.rootpath)
    dir_option = config.getoption("--askcache-dir")
    dir_ini = str(config.getini("askcache_dir") or "").strip()
    cache_dir: Path | str
    if dir_option:
        cache_dir = _location(dir_option, config.invocation_params.dir)
        folder = module.as_posix()
    elif dir_ini:
        cache_dir = _location(dir_ini, _ini_base(config))
        folder = module.as_posix()
    else:
        cache_dir = Path(item.path).parent / "askcache"
        folder = module.name
    report_option = config.getoption("--askcache-report-dir")
    report_ini = str(config.getini("askcache_report_dir") or "").strip()
    if report_option:
        reports = config.invocation_params.dir / Path(report_option).expanduser()
    elif report_ini:
        reports = _ini_base(config) / Path(report_ini).expanduser()
    else:
        reports = config.rootpath / "askcache-reports"
    parts = item.nodeid.split("::")
    originalname = getattr(item, "originalname", None) or parts[-1].split("[", 1)[0]
    callspec = getattr(item, "callspec", None)
    params = callspec.id if callspec is not None else None
    return TestPlan(
        nodeid=item.nodeid,
        mode=mode,
        allow_model=allow_model,
        cache_dir=cache_dir,
        folder=folder,
        names=(*parts[1:-1], originalname),
        params=params,
        name=name,
        report_folder=reports / module,
    )
