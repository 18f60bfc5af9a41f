"""The package's face: a small public surface imported on first use, and one import graph (a
name is imported from the module that holds it; nothing else serves it)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import askcache


def test_the_public_surface_is_small_and_every_name_imports() -> None:
    assert len(askcache.__all__) <= 33  # what README and docs write, the own-loop API included
    for name in askcache.__all__:
        assert getattr(askcache, name) is not None


def test_a_name_outside_the_public_surface_is_not_served_by_the_package() -> None:
    # ReplaySession is askcache.replay.session's: the package does not forward it
    with pytest.raises(ImportError, match="ReplaySession"):
        from askcache import ReplaySession  # noqa: F401


def test_importing_askcache_itself_warns_about_nothing() -> None:
    # a fresh interpreter, warnings as errors
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
