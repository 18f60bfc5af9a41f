"""The ``askcache`` fixture's object: a test's caching settings, its agent and its own loop's
replay, each named after the test, and what each run did.

::

    def test_fill_form(askcache, client, computer):
        agent = askcache.agent(Agent(client, [computer]))
        result = agent.act("Fill in the form and press Save")   # the test's settings

    def test_own_loop(askcache, messages):
        replay = askcache.loop_replay(messages, model="claude-sonnet-4-5")
        for action in replay.actions(messages): ...

The mode decides the strategy (:class:`~askcache.pytest_plugin.options.PluginMode`):
``record`` -> ``record``, ``replay`` -> ``execute`` (read-only; the step views kept for the
report page; the model not called after a hand-back unless allowed), ``auto`` -> ``auto``,
``off`` -> ``off``. In ``replay`` mode without the model, a hand-back fails the test
(:mod:`askcache.pytest_plugin.failure_page`) once its ledger entry is written; a missing
trajectory fails it too, saying how to record it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from askcache.agent.act import ActResult, Agent
from askcache.foundation.errors import AskCacheError, CacheNotFoundError, RecordingNotStoredError
from askcache.foundation.settings import (
    CacheExecutionSettings,
    CacheStrategy,
    CacheWritingSettings,
    CachingSettings,
)
from askcache.loop.loop_replay import LoopReplay
from askcache.pytest_plugin.failure_page import failure_message, write_failure_page
from askcache.pytest_plugin.options import PluginMode, TestPlan
from askcache.pytest_plugin.outcomes import TestOutcome, outcome_of

__all__ = ["STRATEGIES", "AgentUnderTest", "AskcacheFixture", "FixtureUsageError"]

STRATEGIES: dict[PluginMode, CacheStrategy] = {
    PluginMode.RECORD: CacheStrategy.RECORD,
    PluginMode.REPLAY: CacheStrategy.EXECUTE,
    PluginMode.AUTO: CacheStrategy.AUTO,
    PluginMode.OFF: CacheStrategy.OFF,
}
"""The strategy each mode runs."""

_PLUGIN_FIELDS = {
    "strategy": "--askcache-mode or the marker's mode",
    "cache_dir": "--askcache-dir or the ini option askcache_dir",
}


class FixtureUsageError(AskCacheError, ValueError):
    """A setting the plugin decides was given to the fixture."""

    def __init__(self, field: str, instead: str) -> None:
        super().__init__(f"askcache.settings(): {field} is set by the plugin; use {instead}")


def _fields(
    given: CacheWritingSettings | CacheExecutionSettings | Mapping[str, Any] | None,
) -> dict[str, Any]:
    if given is None:
        return {}
    if isinstance(given, CacheWritingSettings | CacheExecutionSettings):
        return given.model_dump(exclude_unset=True)
    return dict(given)


class AskcacheFixture:
    """What the ``askcache`` fixture gives a test (see the module docstring)."""

    def __init__(self, plan: TestPlan) -> None:
        self.plan = plan
        self.outcomes: list[TestOutcome] = []
        """What each run of the test did, in order."""

    @property
    def mode(self) -> PluginMode:
        """The mode in force for this test."""
        return self.plan.mode

    @property
    def allow_model(self) -> bool:
        """True when the model may finish a replay that handed back in ``replay`` mode."""
        return self.plan.allow_model

    @property
    def cache_dir(self) -> Path | str:
        """The cache folder (or URL) of this test's trajectories."""
        return self.plan.cache_dir

    @property
    def strict(self) -> bool:
        """True when a hand-back fails the test: ``replay`` mode, model not allowed."""
        return self.plan.mode == PluginMode.REPLAY and not self.plan.allow_model

    def name(self, *, secrets: Mapping[str, str] | None = None, part: str | None = None) -> str:
        """The trajectory's file name in :attr:`cache_dir`: from the node id, with
        ``secrets``' values masked (:mod:`askcache.pytest_plugin.naming`), ``-part`` added."""
        return self.plan.filename(dict(secrets or {}), part)

    def settings(
        self,
        *,
        parameters: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        part: str | None = None,
        writing_settings: CacheWritingSettings | Mapping[str, Any] | None = None,
        execution_settings: CacheExecutionSettings | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> CachingSettings:
        """The test's :class:`~askcache.foundation.settings.CachingSettings`: the mode's
        strategy, the cache folder, the trajectory named after the test.

        Args:
            parameters: Cache parameters (name -> value): recorded as ``{{name}}`` and
                given back at replay, whatever the mode.
            secrets: Secret parameters (name -> value), likewise: never written, never in
                the trajectory's name.
            part: Tells apart several trajectories of one test (added to the name).
            writing_settings: Further recording settings (not ``filename``).
            execution_settings: Further replay settings.
            fields: Further :class:`CachingSettings` fields (``heal``, ``ledger``, ...).

        Raises:
            FixtureUsageError: ``strategy``, ``cache_dir`` or a ``filename`` was given: the
                plugin sets them.
            InvalidSettingsError: a setting is wrong (the message names it).
        """
        for field, instead in _PLUGIN_FIELDS.items():
            if field in fields:
                raise FixtureUsageError(field, instead)
        writing = _fields(writing_settings)
        if writing.get("filename") is not None:
            raise FixtureUsageError("filename", "the marker's name= or part=")
        execution = _fields(execution_settings)
        declared = {**writing.get("secret_parameters", {}), **(secrets or {})}
        writing["parameters"] = {**writing.get("parameters", {}), **(parameters or {})}
        writing["secret_parameters"] = declared
        writing["filename"] = self.name(secrets=declared, part=part)
        execution["parameter_values"] = {
            **(parameters or {}),
            **(secrets or {}),
            **execution.get("parameter_values", {}),
        }
        if self.plan.mode == PluginMode.REPLAY:
            execution.setdefault("keep_step_views", True)  # for the report page
            if not self.plan.allow_model:
                execution["model_after_hand_back"] = False
        return CachingSettings(
            strategy=STRATEGIES[self.plan.mode],
            cache_dir=self.plan.cache_dir,
            writing_settings=CacheWritingSettings(**writing),
            execution_settings=CacheExecutionSettings(**execution),
            **fields,
        )

    def agent(self, agent: Agent) -> AgentUnderTest:
        """``agent``, whose :meth:`~AgentUnderTest.act` runs with this test's settings."""
        return AgentUnderTest(self, agent)

    def loop_replay(
        self, messages: list[Any], *, settings: CachingSettings | None = None, **options: Any
    ) -> LoopReplay:
        """A :class:`~askcache.loop.LoopReplay` of this test's trajectory (``settings``:
        from :meth:`settings`, by default its defaults) for your own loop; ``options`` as
        :class:`LoopReplay` takes them (``model``, ``display_size``, ``windows``, ...). In
        ``replay`` mode without the model, a hand-back ends the run and fails the test when
        the loop asks for its next action, before the loop could call the model."""
        chosen = settings or self.settings()
        name = chosen.writing_settings.filename
        assert name is not None
        replay: LoopReplay = self.run(
            lambda: _LoopUnderTest(self, chosen, name, messages, settings=chosen, **options),
            chosen,
        )
        return replay

    def run(self, call: Callable[[], Any], settings: CachingSettings) -> Any:
        """``call()``, with a missing trajectory in ``replay`` mode said as a test failure
        that tells how to record it."""
        try:
            return call()
        except CacheNotFoundError as exc:
            if self.plan.mode != PluginMode.REPLAY:
                raise
            pytest.fail(
                f"askcache: {exc}\n  no trajectory to replay for {self.plan.nodeid}: record it "
                "with --askcache-mode=record (or auto)",
                pytrace=False,
            )

    def observed(self, result: ActResult, settings: CachingSettings, since: datetime) -> None:
        """Keep what ``result`` did; fail the test when its replay handed back and a
        hand-back fails it (:attr:`strict`). In ``off`` mode nothing is kept (the session
        prints no summary for it)."""
        if self.plan.mode == PluginMode.OFF:
            return
        outcome = outcome_of(
            result, settings, nodeid=self.plan.nodeid, mode=self.plan.mode.value, since=since
        )
        self.outcomes.append(outcome)
        replay = result.replay
        if not self.strict or replay is None or replay.status != "handed_back":
            return
        name = settings.writing_settings.filename or "trajectory.json"
        path = self.plan.report_folder / f"{Path(name).stem}.html"
        page = write_failure_page(path, result, settings, nodeid=self.plan.nodeid)
        outcome.failed = True
        outcome.report = None if page is None else str(page)
        pytest.fail(failure_message(result, settings, page=page), pytrace=False)


def _now() -> datetime:
    return datetime.now(UTC) - timedelta(seconds=1)  # the ledger's clock, with room


class AgentUnderTest:
    """An :class:`~askcache.agent.act.Agent` under the plugin: :meth:`act` runs with the test's
    settings and its outcome is kept; every other attribute is the agent's."""

    def __init__(self, fixture: AskcacheFixture, agent: Agent) -> None:
        self.fixture = fixture
        self.wrapped = agent
        """The agent."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    def act(self, goal: str, caching_settings: CachingSettings | None = None) -> ActResult:
        """:meth:`Agent.act <askcache.agent.act.Agent.act>` with ``caching_settings``
        (default: the fixture's :meth:`~AskcacheFixture.settings`).

        Raises:
            pytest.fail.Exception: ``replay`` mode without the model and the replay handed
                back, or there is no trajectory to replay.
        """
        settings = caching_settings or self.fixture.settings()
        since = _now()
        try:
            result: ActResult = self.fixture.run(lambda: self.wrapped.act(goal, settings), settings)
        except RecordingNotStoredError as exc:
            if isinstance(exc.result, ActResult) and self.fixture.mode != PluginMode.OFF:
                self.fixture.outcomes.append(
                    outcome_of(
                        exc.result,
                        settings,
                        nodeid=self.fixture.plan.nodeid,
                        mode=self.fixture.mode.value,
                        since=since,
                    )
                )
            raise
        self.fixture.observed(result, settings, since)
        return result


class _LoopUnderTest(LoopReplay):
    """A :class:`LoopReplay` whose ending is kept, and whose hand-back fails the test when
    the fixture says so."""

    def __init__(
        self,
        fixture: AskcacheFixture,
        chosen: CachingSettings,
        name: str,
        messages: list[Any],
        **options: Any,
    ) -> None:
        self._fixture = fixture
        self._chosen = chosen
        self._since = _now()
        self._kept: ActResult | None = None
        super().__init__(name, messages, **options)

    def next_action(self, messages: list[Any] | None = None) -> dict[str, Any] | None:
        action = super().next_action(messages)
        if action is None and self.handed_back and self._fixture.strict:
            self.done(messages, status="failed")  # the entry written, then the test fails
        return action

    def done(self, messages: list[Any] | None = None, **kwargs: Any) -> ActResult:
        result = super().done(messages, **kwargs)
        if result is not self._kept:
            self._kept = result
            self._fixture.observed(result, self._chosen, self._since)
        return result
