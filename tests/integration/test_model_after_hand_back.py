"""``CacheExecutionSettings.model_after_hand_back=False``: a replay that hands back ends the
run there, with no model call, its ledger entry written as any hand-back's (the pytest
plugin's ``replay`` mode stands on it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from askcache import (
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
    open_ledger,
)
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp

pytestmark = pytest.mark.integration

GOAL = "Type Ada Lovelace into the Name field and press Save"


def _settings(cache: Path, strategy: str, **execution: object) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache,
        writing_settings=CacheWritingSettings(filename="form.json"),
        execution_settings=CacheExecutionSettings(settle_timeout=2, **execution),  # type: ignore[arg-type]
    )


def test_a_hand_back_ends_the_run_with_no_model_call(tmp_path: Path) -> None:
    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace")
    with MessagesApiStandIn(script) as api:
        agent = Agent(api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None)
        assert agent.act(GOAL, _settings(tmp_path, "record")).status == "done"
        assert len(api.requests) == 5

        changed = SimulatedFormApp(layout="banner")
        script.app = changed
        agent = Agent(
            api.client(), [ComputerTool(changed)], model="claude-test", sleep=lambda s: None
        )
        result = agent.act(GOAL, _settings(tmp_path, "execute", model_after_hand_back=False))
        assert len(api.requests) == 5  # not one more
    assert result.status == "failed"
    assert result.model_calls == 0
    assert "model_after_hand_back is off" in (result.conversation.reason or "")
    assert result.replay is not None
    assert (result.replay.status, result.replay.stopped_at_step) == ("handed_back", 1)
    assert result.replay.reason_code == "screen_changed"
    assert result.heal is None
    assert changed.saved == []
    with open_ledger(LocalCacheStorage(tmp_path)) as ledger:
        (entry,) = ledger.records("form.json")
    assert (entry.status, entry.reason_code, entry.model_calls) == (
        "handed_back",
        "screen_changed",
        0,
    )
