"""What the failing-region thumbnails cost the fleet page: reading every trajectory's summary
with and without a full table of thumbnails beside them, reading the 25 listed hot spots'
thumbnails, and drawing their section; on SQLite and on PostgreSQL (Debian's, in a temporary
folder on 127.0.0.1). Writes the section "Failing-region thumbnails" of docs/benchmarks.md.

Run: ``PYTHONPATH=src .venv/bin/python bench/fleet_regions.py [TRAJECTORIES]``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_section

from askcache.cli.fleet_figures import HOT_SPOTS, fleet_figures
from askcache.cli.fleet_regions import hot_spot_regions, regions_section
from askcache.storage.ledger import RunLedger, RunRecord
from askcache.storage.ledger.day_totals import spot_key
from askcache.storage.ledger.postgres import PostgresLedger
from askcache.storage.ledger.spot_images import SpotImages, png_of
from askcache.storage.ledger.sqlite import SqliteLedger
from askcache.testing.postgres_server import PostgresServer

SPOTS_PER_TRAJECTORY = 25
DAYS = 90
START = datetime(2026, 8, 30, tzinfo=UTC)


def _region(seed: int) -> bytes:
    image = Image.new("RGB", (100, 100), (seed * 37 % 256, seed * 91 % 256, 200))
    draw = ImageDraw.Draw(image)
    draw.rectangle((10, 30, 90, 70), outline="black", fill="white")
    draw.text((16, 42), f"Save {seed}", fill="black")
    return png_of(image)


def _fill(ledger: RunLedger, trajectories: int) -> None:
    """One hand-back per trajectory, spot and day: ``trajectories`` x 25 hot spots, 90 days."""
    batch: list[tuple[str, RunRecord]] = []
    for t in range(trajectories):
        for day in range(DAYS):
            spot = (t + day) % SPOTS_PER_TRAJECTORY
            batch.append(
                (
                    f"t{t}-d{day}",
                    RunRecord(
                        trajectory=f"app-{t:04d}.json",
                        status="handed_back",
                        started_at=START + timedelta(days=day, minutes=t),
                        stopped_at_step=spot,
                        reason_code="screen_changed",
                        profile="1280x800@1x",
                    ),
                )
            )
    if isinstance(ledger, SqliteLedger):
        ledger.append_many(batch)
    else:
        for entry_id, record in batch:
            ledger.append(record, entry_id=entry_id)


def _keep_all(ledger: RunLedger, trajectories: int) -> int:
    pictures = [_region(seed) for seed in range(50)]
    kept = 0
    for t in range(trajectories):
        for spot in range(SPOTS_PER_TRAJECTORY):
            ledger.put_spot_images(
                SpotImages(
                    trajectory=f"app-{t:04d}.json",
                    spot=spot_key(spot, "screen_changed", "1280x800@1x"),
                    entry_id=f"t{t}-s{spot}",
                    at=START,
                    recorded=pictures[spot],
                    latest=pictures[spot + 25],
                )
            )
            kept += 1
    return kept


def _median(call: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def _measure(name: str, ledgers: tuple[RunLedger, RunLedger], trajectories: int) -> list[str]:
    """Two ledgers of the same entries, thumbnails kept in the second only: their summaries
    read in turn (so the machine's load weighs on both alike)."""
    plain, kept_in = ledgers
    _fill(plain, trajectories)
    _fill(kept_in, trajectories)
    kept = _keep_all(kept_in, trajectories)
    without: list[float] = []
    with_them: list[float] = []
    for _ in range(7):
        without.append(_median(plain.summaries, runs=1))
        with_them.append(_median(kept_in.summaries, runs=1))
    before, after = statistics.median(without), statistics.median(with_them)
    summaries = kept_in.summaries()
    figures = fleet_figures(summaries, stats={"total": {}}, ledger=name)
    spots = figures.hot_spots
    read = _median(lambda: hot_spot_regions(kept_in, spots))
    regions = hot_spot_regions(kept_in, spots)
    drawn = _median(lambda: regions_section(spots, regions))
    size = len(regions_section(spots, regions).encode())
    return [
        f"| {name} | read every summary, no thumbnails kept | {before * 1000:.0f} ms |",
        f"| {name} | the same entries, {kept:,} hot spots' thumbnails kept | {after * 1000:.0f} ms |",
        f"| {name} | read the {len(spots)} listed hot spots' thumbnails "
        f"({len(regions)} kept) | {read * 1000:.1f} ms |",
        f"| {name} | draw their section ({size / 1024:.0f} KiB of HTML) | {drawn * 1000:.1f} ms |",
    ]


def main() -> None:
    trajectories = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    load = os.getloadavg()
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        pair = (
            SqliteLedger(Path(folder) / "plain.sqlite3", retention_days=None),
            SqliteLedger(Path(folder) / "kept.sqlite3", retention_days=None),
        )
        rows += _measure("SQLite", pair, trajectories)
    with PostgresServer() as server:
        server.start()
        urls = []
        for database in ("plain", "kept"):
            with psycopg.connect(server.url, autocommit=True) as connection:
                connection.execute(f"CREATE DATABASE {database}")
            urls.append(f"{server.url.rsplit('/', 1)[0]}/{database}")
        ledgers = (
            PostgresLedger(urls[0], retention_days=None),
            PostgresLedger(urls[1], retention_days=None),
        )
        try:
            rows += _measure("PostgreSQL", ledgers, trajectories)
        finally:
            for ledger in ledgers:
                ledger.close()
    after = os.getloadavg()
    body = f"""## Failing-region thumbnails (`bench/fleet_regions.py`)

{machine()}

`PYTHONPATH=src .venv/bin/python bench/fleet_regions.py {trajectories}`: {trajectories} trajectories,
{DAYS} days, one hand-back a day each over {SPOTS_PER_TRAJECTORY} hot spots; then every hot
spot's thumbnails kept in a second ledger of the same entries (two PNGs of a 100 px region
at 96 px, about 1-2 KiB each). The two ledgers' summaries are read in turn, 7 times each
(medians); the rest medians of 5. Load average {load[0]:.2f} before, {after[0]:.2f} after
(1 min): the machine was shared. The page lists {HOT_SPOTS} hot spots and reads only
theirs.

| engine | what | time |
| --- | --- | --- |
{chr(10).join(rows)}

Reading the summaries does not read the thumbnails (they are in another table); what the
page adds is the last two lines of each engine (drawing decodes every thumbnail and writes
it again, so a damaged one is caught before the browser sees it).
"""
    print(body)
    write_section("fleet regions", body)


if __name__ == "__main__":
    main()
