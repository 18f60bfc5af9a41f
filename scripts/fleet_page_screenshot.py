"""Make docs/fleet-page.png: the fleet page of a realistic ledger, as headless Chromium draws it.

    PYTHONPATH=src .venv/bin/python scripts/fleet_page_screenshot.py

The ledger is tests/ledger/fleet_ledger.py's (four trajectories, four weeks of replays on two
screen profiles, hand-backs of several reason codes, heals, a proposal and an invalidation) in a
temporary cache folder; the page is written by `askcache dashboard` and shot by Debian's
`/usr/bin/chromium --headless --screenshot` with no network.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ledger.fleet_ledger import fleet_records  # noqa: E402

from askcache.cli.app import main as askcache  # noqa: E402
from askcache.storage.cache_storage import LocalCacheStorage  # noqa: E402
from askcache.storage.ledger import open_ledger  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(scratch) / "cache"
        proposals = cache / ".versions" / "checkout.json"
        proposals.mkdir(parents=True)
        (proposals / "proposed-20261127T141502Z-5f2c9a.json").write_text("{}")
        with open_ledger(LocalCacheStorage(cache)) as ledger:
            for number, record in enumerate(fleet_records(days=28, per_day=40)):
                ledger.append(record, entry_id=f"e{number:06d}")
        page = Path(scratch) / "fleet.html"
        if askcache(["dashboard", "--cache-dir", str(cache), "-o", str(page)]) != 0:
            raise SystemExit("askcache dashboard failed")
        subprocess.run(
            ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--hide-scrollbars", "--host-resolver-rules=MAP * ~NOTFOUND",
             "--window-size=1280,1150", f"--screenshot={ROOT / 'docs' / 'fleet-page.png'}",
             page.as_uri()],
            check=True, capture_output=True,
        )  # fmt: skip
    print(ROOT / "docs" / "fleet-page.png")


if __name__ == "__main__":
    main()
