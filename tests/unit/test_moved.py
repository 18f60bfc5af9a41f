"""The package layout: a small public surface, and old import paths that still work, warned."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import askcache
from askcache._moved import MOVED
from askcache.cachefile.format import CacheFile
from askcache.cli.commands.show import add_show_command
from askcache.replay.session import ReplaySession
from askcache.storage.base import LocalCacheStorage


def test_the_public_surface_is_small_and_every_name_imports() -> None:
    assert len(askcache.__all__) <= 33  # what README and docs write, the own-loop API included
    for name in askcache.__all__:
        assert getattr(askcache, name) is not None


def test_a_name_dropped_from_the_top_level_still_imports_with_a_warning() -> None:
    with pytest.warns(
        DeprecationWarning, match=r"askcache\.ReplaySession moved to askcache\.replay"
    ):
        from askcache import ReplaySession as OldSession

    assert OldSession is ReplaySession


def test_an_old_module_path_still_imports_with_a_warning_naming_the_new_one() -> None:
    with pytest.warns(DeprecationWarning, match=r"askcache\.cachefile\.format\.CacheFile"):
        from askcache.cache_file import CacheFile as OldCacheFile

    assert OldCacheFile is CacheFile


def test_a_module_that_became_a_package_forwards_its_old_names_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"askcache\.storage\.base\.LocalCacheStorage"):
        from askcache.storage import LocalCacheStorage as OldStorage

    assert OldStorage is LocalCacheStorage


def test_a_module_of_an_old_package_still_imports_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"askcache\.cli\.commands\.show\.add_show_command"):
        from askcache.commands.show import add_show_command as old_add

    assert old_add is add_show_command


def test_an_unknown_name_on_an_old_path_is_an_attribute_error() -> None:
    module = importlib.import_module("askcache.cache_file")
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = module.no_such_name


@pytest.mark.parametrize("old_module", sorted(MOVED))
def test_every_moved_name_resolves_to_an_object_at_its_new_home(old_module: str) -> None:
    for name, new_module in MOVED[old_module].items():
        assert hasattr(importlib.import_module(new_module), name), f"{new_module}.{name}"


def test_importing_askcache_itself_warns_about_nothing() -> None:
    # a fresh interpreter, warnings as errors: importing the package touches no old path
    code = "import askcache, askcache.cli.app, askcache.testing"
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True)


def test_the_command_starts_without_the_agent_the_client_or_scipy() -> None:
    # the askcache command's stats and list read files and ledgers: starting it (a fresh
    # interpreter) loads neither the agent, nor the Anthropic client, nor scipy; using a
    # public name imports its module then
    code = (
        "import sys, askcache.cli.app\n"
        "heavy = [m for m in ('askcache.agent.act', 'anthropic', 'scipy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "from askcache import Agent, CachingSettings\n"
        "assert 'askcache.agent.act' in sys.modules and Agent.__module__ == 'askcache.agent.act'\n"
        "import askcache\n"
        "assert set(askcache.__all__) <= set(dir(askcache))\n"
    )
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True)


def test_subpackages_are_attributes_of_the_package_once_used() -> None:
    # a fresh interpreter: after `import askcache`, askcache.settings and
    # askcache.storage.ledger are there as before the names were imported lazily
    code = (
        "import askcache\n"
        "assert askcache.settings.CachingSettings.__name__ == 'CachingSettings'\n"
        "assert callable(askcache.storage.ledger.open_ledger)\n"
        "for missing in ('no_such_thing', 'storage.no_such_thing'):\n"
        "    head, _, tail = missing.rpartition('.')\n"
        "    owner = askcache.storage if head else askcache\n"
        "    try:\n"
        "        getattr(owner, tail)\n"
        "    except AttributeError:\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError(missing)\n"
    )
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True)
