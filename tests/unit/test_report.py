"""The HTML report: recorded and current regions side by side for each checked step."""

from __future__ import annotations

import re
from pathlib import Path

from askcache.cli.html_report import ReplaySection, recorded_regions, write_html_report
from askcache.conversation.turns import Conversation
from askcache.foundation.settings import CacheExecutionSettings, CacheWritingSettings
from askcache.record.recording import CacheManager
from askcache.replay import CacheExecutor
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import SimulatedFormApp
from askcache.tools import ComputerTool, ToolCollection
from tests.helpers import GOAL, form_calls, run_history
from tests.unit.test_replay import FinishingSpeaker


def test_report_shows_both_regions_of_every_checked_step(
    storage: LocalCacheStorage, tmp_path: Path
) -> None:
    app = SimulatedFormApp()
    messages = run_history(app, form_calls(app))
    manager = CacheManager(storage, CacheWritingSettings(filename="form.json"))
    manager.start_recording(GOAL)
    manager.finish_recording(messages)
    cache_file = load_cache_file(storage, "form.json")
    recorded = recorded_regions(messages, cache_file)
    assert sorted(recorded) == [1, 2, 3]
    assert all(region.size == (100, 100) for region in recorded.values())

    executor = CacheExecutor(sleep=lambda s: None)
    executor.activate_cache_execution(
        cache_file,
        "form.json",
        execution_settings=CacheExecutionSettings(keep_step_views=True),
    )
    changed = SimulatedFormApp(layout="banner")
    Conversation(
        [executor, FinishingSpeaker()],
        ToolCollection([ComputerTool(changed)]),
        first_speaker=executor.name,
    ).run(GOAL)
    assert executor.result is not None
    path = write_html_report(
        tmp_path / "report.html",
        title="t",
        recorded=recorded,
        sections=[ReplaySection("changed", executor.result, executor.regions)],
        summary="summary <text>",
    )
    page = path.read_text()
    assert "summary &lt;text&gt;" in page
    assert "distance" in page
    assert "class='bad'" in page
    rows = re.findall(r"<tr[^>]*>.*?</tr>", page, re.S)
    checked = [row for row in rows if "distance" in row]
    assert len(checked) == 1
    assert checked[0].count("data:image/png;base64,") == 2


def test_savings_text_gives_each_quantity_its_own_sign() -> None:
    from askcache.cli.html_report import savings_text
    from askcache.storage.ledger import RunRecord

    mixed = RunRecord(
        trajectory="t.json",
        status="handed_back",
        steps_run=1,
        model_calls=5,
        saved_model_calls=-4,
        saved_tokens=-19_064,
        saved_seconds=1.2,
    )
    text = savings_text(mixed)
    assert text.startswith(
        "saved 1.2 s; made 4 more model calls and used 19,064 more tokens than the recording "
        "(estimated"
    )
    assert "for the 1 step replayed, against the 5 model calls this run made" in text
    slower = mixed.model_copy(update={"saved_model_calls": 5, "saved_seconds": -7.6})
    assert "took 7.6 s longer than the recording" in savings_text(slower)
    assert "-7.6" not in savings_text(slower)
    clean = RunRecord(
        trajectory="t.json",
        status="completed",
        steps_run=4,
        saved_model_calls=5,
        saved_tokens=14_328,
        saved_seconds=None,
    )
    assert savings_text(clean).startswith("saved 5 model calls and 14,328 tokens (estimated")
