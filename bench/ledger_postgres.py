"""The run ledger on PostgreSQL: `stats` and the hand-back check at 10k, 100k and 1M entries;
8 processes writing 1,000 runs each at once.

    bash scripts/bench.sh ledger_postgres [SIZE ...]   (default: 10000 100000 1000000)

Starts Debian's PostgreSQL in a temporary folder (askcache.testing.PostgresServer, default
server settings: fsync on) on 127.0.0.1. The entries are bulk-loaded with COPY, 1,000
trajectories, spread over 30 days, and each trajectory's summary row is the fold of its
entries (askcache.storage.ledger.summary); only the reads are timed: through the API (a
:class:`PostgresLedger`) and through the CLI (`askcache stats --ledger URL`, the whole
process). Writes the "run ledger on PostgreSQL" section of docs/benchmarks.md.
"""

from __future__ import annotations

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
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, write_section

from askcache.foundation.messages import Usage
from askcache.storage.ledger import RunRecord, TrajectorySummary
from askcache.storage.ledger.postgres import PostgresLedger
from askcache.storage.ledger.summary import fold_all
from askcache.testing.postgres_server import PostgresServer

SIZES = (10_000, 100_000, 1_000_000)
TRAJECTORIES = 1_000
WRITERS, RUNS = 8, 1_000
ROOT = Path(__file__).resolve().parents[1]
ASKCACHE = str(Path(sys.executable).with_name("askcache"))

WRITER = """
import sys, time
from askcache.storage.ledger import RunRecord
from askcache.storage.ledger.postgres import PostgresLedger
url, index, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with PostgresLedger(url) as ledger:
    ledger.summary("warm-up.json")  # connect before the clock starts
    sys.stdin.readline()
    start = time.perf_counter()
    for run in range(runs):
        ledger.append(RunRecord(trajectory=f"fleet-{run % 10}.json", status="completed",
                                steps_run=run, pid=index))
    print(time.perf_counter() - start)
"""


def _record(rng: random.Random, name: str, when: datetime) -> RunRecord:
    roll = rng.random()
    status = "completed" if roll < 0.8 else "handed_back" if roll < 0.95 else "completed_unverified"
    handed_back = status == "handed_back"
    return RunRecord(
        trajectory=name,
        status=status,
        started_at=when,
        seconds=rng.uniform(5, 60),
        steps_total=12,
        steps_run=3 if handed_back else 12,
        stopped_at_step=3 if handed_back else None,
        reason="the Save button looks different" if handed_back else None,
        model_calls=4 if handed_back else 0,
        usage=Usage(input_tokens=9000, output_tokens=300) if handed_back else Usage(),
        saved_model_calls=8,
        saved_tokens=30_000,
        saved_seconds=40.0,
        model="claude-sonnet-4-5",
        host=f"runner-{rng.randrange(1000)}",
        pid=rng.randrange(1 << 16),
        user="ci",
    )


def _load(url: str, start: int, stop: int, summaries: dict[str, TrajectorySummary]) -> None:
    """Add entries ``start``..``stop`` with COPY and rewrite the summaries they change."""
    rng = random.Random(start)
    epoch = datetime(2026, 10, 26, tzinfo=UTC)
    batch: dict[str, list[RunRecord]] = {}
    with psycopg.connect(url) as connection:
        columns = "entry_id, trajectory, started_at, event, status, record"
        copy_sql = f"COPY askcache_ledger_entries ({columns}) FROM STDIN"
        with connection.cursor() as cursor, cursor.copy(copy_sql) as copy:
            for index in range(start, stop):
                name = f"task-{index % TRAJECTORIES:04d}.json"
                when = epoch + timedelta(seconds=index * 2.592)  # 1M entries in 30 days
                record = _record(rng, name, when)
                batch.setdefault(name, []).append(record)
                copy.write_row(
                    (
                        f"{index:012x}",
                        name,
                        when,
                        record.event,
                        record.status,
                        record.model_dump_json(),
                    )
                )
        with connection.cursor() as cursor:
            for name, records in batch.items():
                folded = fold_all(
                    summaries.get(name) or TrajectorySummary(trajectory=name), records
                )
                summaries[name] = folded
                cursor.execute(
                    "INSERT INTO askcache_ledger_summaries (trajectory, summary) VALUES (%s, %s)"
                    " ON CONFLICT (trajectory) DO UPDATE SET summary = EXCLUDED.summary",
                    (name, folded.model_dump_json()),
                )
        connection.execute("ANALYZE")


def _median(repeat: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _stats_cli(url: str | None, folder: str) -> float:
    """``askcache stats`` as a whole process (``url`` None: the empty cache folder's own
    ledger, which is what starting the command costs)."""
    ledger = [] if url is None else ["--ledger", url]

    def run() -> None:
        done = subprocess.run(
            [ASKCACHE, "stats", "--cache-dir", folder, *ledger],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"askcache stats failed: {done.stderr}")

    return _median(3, run)


def _reads(url: str, folder: str, size: int) -> dict[str, float]:
    rng = random.Random(size)
    names = [f"task-{rng.randrange(TRAJECTORIES):04d}.json" for _ in range(200)]

    def stats_api() -> None:
        with PostgresLedger(url) as ledger:
            assert sum(s.entries for s in ledger.summaries()) == size

    with PostgresLedger(url) as ledger:
        ledger.summary(names[0])  # connected
        queue = iter(names)

        def check() -> None:  # what a hand-back reads (agent/run_record.py)
            name = next(queue)
            ledger.consecutive_failures(name)
            found = ledger.summary(name)
            assert found is not None
            _ = found.imported

        warm = _median(200, check)

    with psycopg.connect(url) as connection:  # the server's own time for the summary read
        server_ms = []
        for name in names[:50]:
            plan = connection.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) "
                "SELECT summary FROM askcache_ledger_summaries WHERE trajectory = %s",
                (name,),
            ).fetchone()
            assert plan is not None
            server_ms.append(float(plan[0][0]["Execution Time"]))

    def cold_check() -> None:
        with PostgresLedger(url) as fresh:
            fresh.consecutive_failures(names[0])
            fresh.summary(names[0])

    return {
        "stats_api": _median(5, stats_api),
        "stats_cli": _stats_cli(url, folder),
        "check_warm": warm,
        "check_cold": _median(5, cold_check),
        "check_server": statistics.median(server_ms) / 1000,
    }


def _writers(server: PostgresServer) -> tuple[float, int, int]:
    """8 processes x 1,000 appends at once into a new database: (seconds, stored, lost)."""
    with psycopg.connect(server.url, autocommit=True) as connection:
        connection.execute("CREATE DATABASE writers")
    url = server.url.rsplit("/", 1)[0] + "/writers"
    with PostgresLedger(url) as ledger:
        ledger.summary("warm-up.json")  # the tables exist
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, str(index), str(RUNS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for index in range(WRITERS)
    ]
    start = time.perf_counter()
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    for process in processes:
        process.communicate()
        if process.returncode != 0:
            raise RuntimeError("a writer failed")
    seconds = time.perf_counter() - start
    with PostgresLedger(url) as ledger:
        stored = len(ledger.records())
        folded = sum(s.entries for s in ledger.summaries())
    if folded != stored:
        raise RuntimeError(f"summaries count {folded} entries, the table holds {stored}")
    return seconds, stored, WRITERS * RUNS - stored


def main(sizes: tuple[int, ...]) -> None:
    rows = []
    with PostgresServer() as server, tempfile.TemporaryDirectory() as folder:
        url = server.url
        with PostgresLedger(url) as ledger:
            ledger.summary("warm-up.json")  # creates the tables
        startup = _stats_cli(None, folder)
        summaries: dict[str, TrajectorySummary] = {}
        loaded = 0
        for size in sizes:
            started = time.perf_counter()
            _load(url, loaded, size, summaries)
            print(f"loaded {size} entries in {time.perf_counter() - started:.0f} s", flush=True)
            loaded = size
            numbers = _reads(url, folder, size)
            print(size, numbers, flush=True)
            rows.append((size, numbers))
        with psycopg.connect(url) as connection:
            plan = connection.execute(
                sql.SQL(
                    "EXPLAIN SELECT summary FROM askcache_ledger_summaries WHERE trajectory = %s"
                ),
                ("task-0001.json",),
            ).fetchall()
            size_mb = connection.execute("SELECT pg_database_size(current_database())").fetchone()
        writer_seconds, stored, lost = _writers(server)
        print(f"writers: {writer_seconds:.1f} s, {stored} stored, {lost} lost", flush=True)
    _write(
        rows, startup, plan[0][0], int(size_mb[0]) if size_mb else 0, (writer_seconds, stored, lost)
    )


def _goals(rows: list[tuple[int, dict[str, float]]], startup: float) -> str:
    """The goals (``stats`` <= 2 s, the hand-back check <= 50 ms) at the largest size."""
    size, n = rows[-1]
    return (
        f"At {size:,} entries `stats` reads its summaries in {n['stats_api']:.2f} s through the "
        f"API (goal: 2 s); the whole command takes {n['stats_cli']:.1f} s, as much as its "
        f"start-up on this machine ({startup:.1f} s with an empty local ledger: importing "
        "askcache on two loaded cores). The hand-back check takes "
        f"{n['check_warm'] * 1000:.1f} ms (goal: 50 ms), "
        f"{n['check_server'] * 1000:.3f} ms of it in the server, the same at every size."
    )


def _write(
    rows: list[tuple[int, dict[str, float]]],
    startup: float,
    plan: str,
    database_bytes: int,
    writers: tuple[float, int, int],
) -> None:
    table = [
        "| entries | `askcache stats` (CLI, whole process) | `summaries()` (API, connect included) "
        "| hand-back check (open ledger) | hand-back check (new ledger: connect included) "
        "| one summary read, the server's time |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| 0 (an empty local ledger: the command's start-up) | {startup:.2f} s | | | | |",
    ]
    for size, n in rows:
        table.append(
            f"| {size:,} | {n['stats_cli']:.2f} s | {n['stats_api'] * 1000:.0f} ms "
            f"| {n['check_warm'] * 1000:.2f} ms | {n['check_cold'] * 1000:.0f} ms "
            f"| {n['check_server'] * 1000:.3f} ms |"
        )
    seconds, stored, lost = writers
    body = "\n".join(
        [
            "## The run ledger on PostgreSQL",
            "",
            machine() + " The machine was shared with other jobs while this ran (the load "
            "average above, on two cores): the times are upper bounds.",
            "",
            "`bash scripts/bench.sh ledger_postgres` (`bench/ledger_postgres.py`): Debian's "
            "PostgreSQL 15 in a temporary folder on 127.0.0.1 (default settings, fsync on), no "
            f"network latency. {TRAJECTORIES:,} trajectories, entries bulk-loaded with COPY "
            "(their summary rows folded from them); only the reads are timed. The hand-back "
            "check is what a replay that hands back reads: `consecutive_failures(name)` and "
            "`summary(name)`, two primary-key reads of one summary row (median of 200 names). "
            "`askcache stats` reads one summary row per trajectory (median of 3 runs). The last "
            "column is PostgreSQL's own time for one summary read (`EXPLAIN ANALYZE`, median of "
            "50): the part the load of the machine touches least.",
            "",
            *table,
            "",
            _goals(rows, startup),
            "",
            f"The summary read's plan: `{plan}`. The database at {rows[-1][0]:,} entries: "
            f"{database_bytes / 2**20:,.0f} MiB.",
            "",
            f"**{WRITERS} processes appending {RUNS:,} runs each at once** (10 trajectories, so "
            f"writers wait on each other's summary row): {seconds:.1f} s for all "
            f"{WRITERS * RUNS:,} appends, {WRITERS * RUNS / seconds:,.0f} appends/s; "
            f"{stored:,} stored, **{lost} lost**, and the summaries count every one.",
        ]
    )
    write_section("ledger postgres", body)


if __name__ == "__main__":
    main(tuple(int(size) for size in sys.argv[1:]) or SIZES)
