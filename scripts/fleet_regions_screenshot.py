"""Make docs/fleet-regions.png: the fleet page's failing regions after real replays, as headless
Chromium draws them.

    PYTHONPATH=src .venv/bin/python scripts/fleet_regions_screenshot.py

The simulated form is recorded, then replayed with ``ledger_thumbnails=True`` on two updated
versions (a notice above the form; the Save button relabelled), each handing back on a step's
pixel check; the page is written by ``askcache dashboard`` and its failing-region
section shot by Debian's ``/usr/bin/chromium --headless --screenshot`` with no network.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from askcache import (  # noqa: E402
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
)
from askcache.cli.app import main as askcache  # noqa: E402
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp  # noqa: E402
from askcache.tools import ComputerTool  # noqa: E402


def _act(api: MessagesApiStandIn, app: SimulatedFormApp, cache: Path, strategy: str) -> Any:
    agent = Agent(api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None)
    return agent.act(
        "Type Ada Lovelace into the Name field and press Save",
        CachingSettings(
            strategy=strategy,  # type: ignore[arg-type]
            cache_dir=cache,
            writing_settings=CacheWritingSettings(filename="contacts.json"),
            execution_settings=CacheExecutionSettings(
                settle_timeout=1, model_after_hand_back=False
            ),
            ledger_thumbnails=True,
        ),
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(scratch) / "cache"
        app = SimulatedFormApp()
        script = FormFillingScript(app, "Ada Lovelace")
        with MessagesApiStandIn(script) as api:
            _act(api, app, cache, "record")
            for changed in (
                SimulatedFormApp(layout="banner"),
                SimulatedFormApp(labels={"save": "Submit"}),
            ):
                script.app = changed
                _act(api, changed, cache, "execute")
        page = Path(scratch) / "fleet.html"
        if askcache(["dashboard", "--cache-dir", str(cache), "-o", str(page)]) != 0:
            raise SystemExit("askcache dashboard failed")
        text = page.read_text()
        section = re.search(r"<section id='regions'>.*?</section>", text, re.S)
        assert section is not None
        style = re.findall(r"<style>.*?</style>", text, re.S)
        alone = Path(scratch) / "regions.html"
        alone.write_text(
            f"<!doctype html><html><head>{''.join(style)}</head><body>"
            f"{section.group(0)}</body></html>"
        )
        shot = Path(scratch) / "shot.png"
        subprocess.run(
            [
                "/usr/bin/chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--window-size=1100,420",
                f"--screenshot={shot}",
                alone.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        with Image.open(shot) as image:
            image.convert("RGB").save(ROOT / "docs" / "fleet-regions.png", optimize=True)
    print("wrote docs/fleet-regions.png")


if __name__ == "__main__":
    main()
