"""Runs for the OpenTelemetry tests: a login recorded on the simulated form app through the
Messages API stand-in (typing a declared secret), then replayed as recorded or on a changed
screen (a hand-back, and the model's turns after it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from askcache import (
    ActResult,
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.testing.simulated import Layout

SECRET = "hunter2-Secret!"
GOAL = "Log in to the contacts form"
MODEL = "claude-sonnet-5"
"""A model with a list price (askcache.cli.prices): the dollar metrics are made."""
RECORDED_CALLS = 5


def settings(folder: Path, strategy: str) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=folder,
        writing_settings=CacheWritingSettings(
            filename="login.json", secret_parameters={"pw": SECRET}
        ),
        execution_settings=CacheExecutionSettings(
            parameter_values={"pw": SECRET},
            delay_time_between_action=0,
            settle_quiet_period=0.2,
            settle_timeout=1,
        ),
    )


def act(
    folder: Path, strategy: str, layout: Layout = "original", **client: Any
) -> tuple[ActResult, Any]:
    """One ``Agent.act`` of the login on a fresh app; the result and the app. ``client``:
    options of the anthropic client (``open_telemetry``)."""
    app = SimulatedFormApp(layout=layout)
    with MessagesApiStandIn(FormFillingScript(app, SECRET)) as api:
        agent = Agent(api.client(**client), [ComputerTool(app)], model=MODEL, sleep=lambda s: None)
        return agent.act(GOAL, settings(folder, strategy)), app


def record(folder: Path) -> None:
    result, _ = act(folder, "record")
    assert result.conversation.recorded_file == "login.json"
    assert result.model_calls == RECORDED_CALLS
