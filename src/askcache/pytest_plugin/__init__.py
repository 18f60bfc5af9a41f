"""askcache's pytest plugin: the ``askcache`` fixture, the ``--askcache-*`` options and the
``askcache`` marker, and one summary at the end of the session (docs/pytest.md).

Registered through the ``pytest11`` entry point under this module's own name, so
``-p askcache.pytest_plugin`` and ``-p no:askcache.pytest_plugin`` name it whether it is
installed or not. Loading it imports only pytest and the options: nothing of askcache's
engine is imported until a test asks for the fixture, and nothing changes for a test that
does not (:mod:`.options` says where each setting comes from, :mod:`.naming` how a test's
trajectory is named, :mod:`.fixture` what the fixture gives, :mod:`.failure_page` how a
hand-back fails a test, :mod:`.outcomes` and :mod:`.tally` the summary).

Under pytest-xdist each test's outcomes travel on its report to the controller, which
prints the one summary.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from askcache.pytest_plugin.options import MARKER, add_options, plan_for

if TYPE_CHECKING:
    from askcache.pytest_plugin.fixture import AskcacheFixture

__all__ = [
    "REPORT_ATTRIBUTE",
    "SessionOutcomes",
    "askcache",
    "pytest_addoption",
    "pytest_configure",
    "pytest_runtest_makereport",
]

REPORT_ATTRIBUTE = "askcache_outcomes"
"""The attribute of a test's call report holding its outcomes as JSON-ready dicts (it
travels from an xdist worker to the controller with the report)."""

_FIXTURES = pytest.StashKey["AskcacheFixture"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(mode=None, allow_model=False, name=None): askcache's mode for this test "
        "(record, replay, auto, off; --askcache-mode wins), whether the model may finish a "
        "replay that handed back, and its trajectory's file name",
    )
    if not hasattr(config, "workerinput"):  # an xdist worker's reports go to the controller
        config.pluginmanager.register(SessionOutcomes(), "askcache-session-outcomes")


@pytest.fixture
def askcache(request: pytest.FixtureRequest) -> AskcacheFixture:
    """The test's askcache settings, agent and loop replay, named after the test
    (:class:`~askcache.pytest_plugin.fixture.AskcacheFixture`)."""
    from askcache.pytest_plugin.fixture import AskcacheFixture

    fixture = AskcacheFixture(plan_for(request.node))
    request.node.stash[_FIXTURES] = fixture
    return fixture


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    fixture = item.stash.get(_FIXTURES, None)
    if fixture is not None and call.when == "call" and fixture.outcomes:
        dumped = [outcome.model_dump(mode="json") for outcome in fixture.outcomes]
        setattr(report, REPORT_ATTRIBUTE, dumped)
    return report


class SessionOutcomes:
    """Collects the outcomes on every test's report and prints the summary once, in the
    process that prints (the controller under xdist)."""

    def __init__(self) -> None:
        self.outcomes: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.outcomes.extend(getattr(report, REPORT_ATTRIBUTE, None) or [])

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.outcomes:
            return
        from askcache.pytest_plugin.outcomes import TestOutcome
        from askcache.pytest_plugin.tally import summary_lines

        lines = summary_lines(TestOutcome.model_validate(item) for item in self.outcomes)
        terminalreporter.write_sep("=", "askcache")
        for line in lines:
            terminalreporter.write_line(line)
