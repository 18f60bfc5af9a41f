"""The HTML report, looked at as a person would: rendered by headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from askcache import Agent, CacheExecutionSettings, CacheWritingSettings, CachingSettings
from askcache.cli.html_report import (
    ReplaySection,
    model_actions,
    recorded_views,
    savings_text,
    write_html_report,
)
from askcache.parity.evidence import _CHROMIUM_FLAGS, find_chromium
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.ledger import open_ledger
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.tools import ComputerTool

pytestmark = pytest.mark.integration

GOAL = "Type " + "Ada Lovelace " * 12 + "into the Name field and press Save"


def test_the_report_shows_every_part_and_nothing_overflows(tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace")
    settings = CachingSettings(
        strategy="record",
        cache_dir=tmp_path,
        writing_settings=CacheWritingSettings(filename="form.json"),
        execution_settings=CacheExecutionSettings(keep_step_views=True),
    )
    with MessagesApiStandIn(script) as api:
        record = Agent(api.client(), [ComputerTool(app)]).act(GOAL, settings)
        changed = SimulatedFormApp(layout="banner")
        script.app = changed
        run = Agent(api.client(), [ComputerTool(changed)]).act(
            GOAL, settings.model_copy(update={"strategy": "execute"})
        )
    storage = LocalCacheStorage(tmp_path)
    assert run.replay is not None
    entry = open_ledger(storage).records("form.json")[-1]
    assert entry.event == "replay"
    section = ReplaySection(
        "after the change",
        run.replay,
        views=run.views,
        model_steps=model_actions(run.conversation.messages),
        saved=savings_text(entry),
    )
    recorded = recorded_views(record.conversation.messages, load_cache_file(storage, "form.json"))
    path = write_html_report(
        tmp_path / "report.html", title="report", recorded=recorded, sections=[section]
    )
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=find_chromium(), args=_CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(path.as_uri())
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # no overflow
        images = page.locator("img")
        # the failed step: recorded region + screen, current region + screen
        assert images.count() >= 4
        assert all(
            page.evaluate("(i) => i.complete && i.naturalWidth > 0", handle)
            for handle in images.element_handles()
        )
        alts = {images.nth(i).get_attribute("alt") for i in range(images.count())}
        assert alts == {"region with the action point", "whole screen with the region boxed"}
        model = page.locator("ol.model li").all_inner_texts()
        assert model[0] == "screenshot"
        assert any(line.startswith("left_click") for line in model)
        assert "(estimated: " in page.locator("p.saved").inner_text()
        assert "stopped at step 1" in page.locator("p.status").inner_text()
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert (tmp_path / "report.png").stat().st_size > 10_000
