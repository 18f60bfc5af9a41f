"""The fleet page: `askcache dashboard` from a PostgreSQL ledger of 1,000,000 entries, and
Chromium loading the page.

    bash scripts/bench.sh dashboard [ENTRIES] [--keep FOLDER]   (default: 1000000)

``--keep FOLDER`` keeps the PostgreSQL cluster in FOLDER and, when FOLDER already holds one
(an earlier run's), reuses it instead of loading the entries again (the load takes minutes);
a kept ledger of an older schema is upgraded by the ledger's own migration when it opens.

Starts Debian's PostgreSQL in a temporary folder (askcache.testing.PostgresServer, default
settings, fsync on) on 127.0.0.1 and bulk-loads ENTRIES entries with COPY: 1,000 trajectories
over 90 days (the default retention: the most entries a ledger keeps), 80 % completed, 15 %
handed back at one of a few steps with a reason code, on two screen profiles, two models, a
heal now and then; each trajectory's summary row is the fold of its entries
(askcache.storage.ledger.summary, per-day figures included). Only the page is timed:

* writing it through the API (open the ledger, read the summaries, build the figures, write
  the file; median of 5) and through the CLI (`askcache dashboard --ledger URL -o PAGE`, the
  whole process; median of 3);
* Chromium loading it: Debian's headless chromium driven over the Chrome DevTools Protocol
  (Playwright's `chromium.launch(executable_path=/usr/bin/chromium)`, no network), the page
  opened from its file URL; the time is the Navigation Timing API's `loadEventEnd` (from the
  navigation's start to the end of the load event: HTML parsed, uPlot run, both charts drawn,
  since they draw before the load event) and the page's own `data-drawn-ms`; median of 5
  loads, each in a new page.

Writes the "fleet page" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, write_section

from askcache.cli.commands.stats import stats_json
from askcache.cli.fleet_figures import collector_paused, fleet_figures
from askcache.cli.fleet_page import write_fleet_page
from askcache.foundation.messages import Usage
from askcache.storage.ledger import RunRecord, TrajectorySummary
from askcache.storage.ledger.postgres import PostgresLedger
from askcache.storage.ledger.summary import fold_all
from askcache.testing.postgres_server import PostgresServer

ENTRIES = 1_000_000
TRAJECTORIES = 1_000
DAYS = 90
ASKCACHE = str(Path(sys.executable).with_name("askcache"))
CODES = ("screen_changed", "element_changed", "effect_missing", "label_changed", "end_state")
PROFILES = ("1280x800@1x", "2560x1600@2x")
MODELS = ("claude-sonnet-4-5", "claude-opus-4-1")
SPENT = Usage(input_tokens=9_000, output_tokens=300)


def _record(rng: random.Random, index: int, when: datetime) -> RunRecord:
    name = f"task-{index % TRAJECTORIES:04d}.json"
    roll = rng.random()
    profile = PROFILES[rng.random() < 0.25]
    model = MODELS[index % 7 == 0]
    if roll < 0.004:
        return RunRecord.model_construct(
            **{**_BASE, "trajectory": name, "event": "healed", "status": "healed",
               "started_at": when, "profile": profile, "healed_steps": [3],
               "version": "v000002.json"}
        )  # fmt: skip
    handed_back = roll < 0.15
    step = rng.choice((1, 3, 3, 7)) if handed_back else None
    return RunRecord.model_construct(
        **{**_BASE, "trajectory": name,
           "status": "handed_back" if handed_back else "completed",
           "started_at": when, "seconds": 20.0 if handed_back else 6.0,
           "steps_total": 12, "steps_run": step if handed_back else 12,
           "stopped_at_step": step,
           "reason": "the Save button looks different" if handed_back else None,
           "reason_code": rng.choice(CODES) if handed_back else None,
           "model_calls": 4 if handed_back else 0,
           "usage": SPENT if handed_back else Usage(),
           "saved_model_calls": 8, "saved_tokens": 30_000, "saved_seconds": 40.0,
           "model": model, "profile": profile, "pid": index & 0xFFFF}
    )  # fmt: skip


_BASE = {
    **RunRecord(trajectory="x", status="completed", host="runner-1", user="ci").model_dump(),
    "usage": Usage(),
}


def _load(url: str, entries: int) -> None:
    """COPY ``entries`` entries in, and write every trajectory's summary (their fold)."""
    rng = random.Random(entries)
    epoch = datetime(2026, 8, 30, tzinfo=UTC)
    step = DAYS * 86_400 / entries
    summaries = {
        f"task-{n:04d}.json": TrajectorySummary(trajectory=f"task-{n:04d}.json")
        for n in range(TRAJECTORIES)
    }
    with psycopg.connect(url) as connection:
        columns = "entry_id, trajectory, started_at, event, status, record"
        copy_sql = f"COPY askcache_ledger_entries ({columns}) FROM STDIN"
        with connection.cursor() as cursor, cursor.copy(copy_sql) as copy:
            for index in range(entries):
                when = epoch + timedelta(seconds=index * step)
                record = _record(rng, index, when)
                fold_all(summaries[record.trajectory], [record], in_place=True)
                copy.write_row(
                    (f"{index:012x}", record.trajectory, when, record.event, record.status,
                     record.model_dump_json())
                )  # fmt: skip
                if index % 100_000 == 0:
                    print(f"  {index:,} entries", flush=True)
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO askcache_ledger_summaries (trajectory, summary) VALUES (%s, %s)"
                " ON CONFLICT (trajectory) DO UPDATE SET summary = EXCLUDED.summary",
                [(name, s.model_dump_json()) for name, s in summaries.items()],
            )
        connection.execute("ANALYZE")


def _median(repeat: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _write_api(url: str, folder: Path) -> Callable[[], object]:
    def write() -> None:
        with collector_paused():  # as askcache dashboard does
            with PostgresLedger(url) as ledger:
                summaries, days = ledger.fleet_summaries()
            figures = fleet_figures(
                summaries, days_added=days, stats=stats_json(str(folder), summaries, {}),
                ledger="postgresql://...",
            )  # fmt: skip
        write_fleet_page(folder / "api.html", figures)

    return write


def _write_cli(url: str, folder: Path) -> None:
    done = subprocess.run(
        [ASKCACHE, "dashboard", "--cache-dir", str(folder), "--ledger", url,
         "-o", str(folder / "cli.html")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"askcache dashboard failed: {done.stderr}")


def _chromium(page: Path) -> tuple[float, float, int]:
    """(loadEventEnd, data-drawn-ms), medians of 5 loads, in seconds; the page's bytes."""
    from playwright.sync_api import sync_playwright

    loads, drawn = [], []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND"],
        )
        for _ in range(6):
            tab = browser.new_page(viewport={"width": 1280, "height": 1000})
            tab.goto(page.as_uri(), wait_until="load")
            end = tab.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
            charts = tab.evaluate("document.body.dataset.charts")
            if charts != "2":
                raise RuntimeError(f"the charts were not drawn ({charts})")
            loads.append(float(end) / 1000)
            drawn.append(float(tab.evaluate("document.body.dataset.drawnMs")) / 1000)
            tab.close()
        browser.close()
    return statistics.median(loads[1:]), statistics.median(drawn[1:]), page.stat().st_size


def main(entries: int, keep: Path | None) -> None:
    server = PostgresServer(keep=keep)
    with server, tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        if server.reused:
            loaded = float((keep / "loaded-seconds").read_text()) if keep else 0.0
            print(f"reusing the ledger in {keep} (loaded in {loaded:.0f} s)", flush=True)
            started = time.perf_counter()
            with PostgresLedger(server.url) as ledger:
                ledger.summary("warm-up.json")  # upgrades tables of an older version
            print(f"opened (upgraded if older) in {time.perf_counter() - started:.1f} s")
        else:
            with PostgresLedger(server.url) as ledger:
                ledger.summary("warm-up.json")  # creates the tables
            started = time.perf_counter()
            _load(server.url, entries)
            loaded = time.perf_counter() - started
            if keep is not None:
                (keep / "loaded-seconds").write_text(f"{loaded:.1f}\n")
            print(f"loaded {entries:,} entries in {loaded:.0f} s", flush=True)
        with PostgresLedger(server.url) as ledger:
            summaries = ledger.summaries()
        buckets = sum(len(s.days) for s in summaries)
        stored = sum(s.entries for s in summaries)
        if stored != entries:
            raise RuntimeError(f"the summaries count {stored} entries, not {entries}")
        with psycopg.connect(server.url) as connection:
            row = connection.execute(
                "SELECT sum(pg_column_size(summary)), sum(octet_length(summary::text)), "
                "(SELECT count(*) FROM askcache_ledger_days) FROM askcache_ledger_summaries"
            ).fetchone()
        api = _median(5, _write_api(server.url, folder))
        cli = _median(3, lambda: _write_cli(server.url, folder))
        print(f"page: API {api:.2f} s, CLI {cli:.2f} s", flush=True)
        load, drawn, size = _chromium(folder / "cli.html")
        print(f"chromium: load {load:.3f} s, drawn {drawn:.3f} s, {size:,} bytes", flush=True)
    _write(
        entries=entries, loaded=loaded, buckets=buckets, sizes=row, api=api, cli=cli,
        browser=(load, drawn, size),
    )  # fmt: skip


def _write(
    *,
    entries: int,
    loaded: float,
    buckets: int,
    sizes: tuple[int, int, int] | None,
    api: float,
    cli: float,
    browser: tuple[float, float, int],
) -> None:
    load, drawn, size = browser
    stored, text, rows = sizes or (0, 0, 0)
    body = "\n".join(
        [
            "## The fleet page (`bench/dashboard.py`)",
            "",
            machine() + " The machine was shared with other jobs while this ran (the load "
            "average above, on two cores): the times are upper bounds.",
            "",
            "`bash scripts/bench.sh dashboard` (`bench/dashboard.py`): Debian's PostgreSQL in a "
            "temporary folder on 127.0.0.1 (default settings, fsync on); "
            f"{entries:,} entries bulk-loaded with COPY ({loaded:.0f} s, folding included), "
            f"{TRAJECTORIES:,} trajectories over {DAYS} days (the default retention), 15 % "
            "handed back with a reason code, two screen profiles, two models, heals; each "
            "summary row the fold of its entries. The page reads the summaries without their "
            f"days ({TRAJECTORIES:,} rows; whole, they hold {buckets:,} per-day buckets, "
            f"{text / 2**20:.1f} MiB of JSON, {stored / 2**20:.1f} MiB stored) and the days "
            f"added up by the database from the {rows:,} rows of `askcache_ledger_days` (kept "
            "by a trigger as each summary is written, schema version 4): one row per day.",
            "",
            "| what | time | goal |",
            "| --- | --- | --- |",
            f"| write the page, API (connect, read the summaries, build, write; median of 5) "
            f"| {api:.2f} s | |",
            f"| `askcache dashboard --ledger URL -o PAGE` (whole process, median of 3) "
            f"| {cli:.2f} s | 2 s |",
            f"| Chromium loads it: navigation start to `loadEventEnd` (median of 5) "
            f"| {load:.3f} s | 1 s |",
            f"| ... to both charts drawn (the page's `data-drawn-ms`) | {drawn:.3f} s | |",
            "",
            f"The page: {size / 1024:.0f} KiB (uPlot inlined, 52 KiB). Chromium: Debian's "
            "`/usr/bin/chromium`, headless, driven over the DevTools protocol by Playwright, "
            "name resolution blocked (no network); the first of six loads is left out (a "
            "cold browser).",
            "",
            "The page's time grows with the trajectories (their summaries, their rows in "
            "`askcache stats --json`'s figures, which the page embeds) and, in the database, "
            "with the day rows it adds up (trajectories x days with replays), not with the "
            "entries.",
        ]
    )
    write_section("fleet page", body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entries", nargs="?", type=int, default=ENTRIES)
    parser.add_argument("--keep", type=Path, default=None, help="keep/reuse the cluster here")
    arguments = parser.parse_args()
    main(arguments.entries, arguments.keep)
