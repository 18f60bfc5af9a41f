"""The run ledger at fleet sizes: ``stats``, ``list`` and a replay that hands back, with 10k, 100k
and 1M entries; 8 processes writing 1,000 runs each at once.

    bash scripts/bench.sh ledger [--sizes 10000,100000] [--engines sqlite,json] [--before SRC]

Every timing is a whole process (``askcache stats`` ..., start-up included), the
median of ``--repeat`` runs. The cache folder holds 50 cache files (one recording of the
simulated form, copied) and ``size`` entries over them, started in the last 30 days (inside the
retention period). The replay is ``c00.json`` on the form changed so that it hands back, after
waiting ``settle_timeout=1`` s for the screen its first step expects (``heal="propose"``, so
the file stays as it is and the invalidation check reads the ledger); it is compared with the
same replay against an empty ledger.

Engines are set-ups in :data:`ENGINES`: how to seed ``size`` entries and which environment the
CLI runs with (``ASKCACHE_LEDGER`` for an engine elsewhere). ``json`` is askcache 0.1's JSON
ledger: with ``--before SRC`` (a ``src/`` folder of askcache before the ledger engines) it
measures that version, for comparison (its replay needs a recording that version can read: a
file recorded by today's askcache is refused by older ones, a gap not closed yet). Writes the
"ledger" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, write_section

from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import FolderLedger, RunRecord, open_ledger
from askcache.storage.ledger.sqlite import SqliteLedger

FILES = 50
WRITERS, WRITES = 8, 1000

REPLAY = """
import sys
from askcache import Agent, CacheExecutionSettings, CachingSettings, ComputerTool
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
app = SimulatedFormApp(layout="banner")
with MessagesApiStandIn(FormFillingScript(app, "Ada Lovelace")) as api:
    run = Agent(api.client(), [ComputerTool(app)], sleep=lambda _: None).act(
        "Save the contact Ada Lovelace",
        CachingSettings(
            strategy="execute",
            cache_dir=sys.argv[1],
            heal="propose",
            writing_settings={"filename": "c00.json"},
            execution_settings=CacheExecutionSettings(invalidate_after=1000, settle_timeout=1.0),
        ),
    )
assert run.replay is not None and run.replay.status == "handed_back", run.replay
"""

CLI = "import sys; from askcache.cli.app import main; sys.exit(main(sys.argv[1:]))"
"""``askcache`` as the console script runs it (with ``PYTHONPATH``'s askcache first)."""

WRITER = """
import sys
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import RunRecord, open_ledger
ledger = open_ledger(LocalCacheStorage(sys.argv[1]))
print("ready", flush=True)
sys.stdin.readline()
for run in range(int(sys.argv[3])):
    ledger.append(RunRecord(trajectory="shared.json", status="completed", steps_run=run, pid=int(sys.argv[2])))
"""


def _records(size: int) -> Iterator[tuple[str, RunRecord]]:
    now = datetime.now(UTC)
    step = timedelta(days=30) / max(size, 1)
    for index in range(size):
        handed_back = index % 5 == 4
        yield (
            f"seed{index:09d}",
            RunRecord(
                trajectory=f"c{index % FILES:02d}.json",
                status="handed_back" if handed_back else "completed",
                stopped_at_step=(index % 3) if handed_back else None,
                started_at=now - timedelta(days=30) + step * index,
                steps_total=4,
                steps_run=4,
                model_calls=2 if handed_back else 0,
                saved_tokens=9000,
                saved_model_calls=4,
                saved_seconds=12.5,
                model="claude-sonnet-4-5",
                host=f"runner-{index % 1000}",
            ),
        )


def _seed_sqlite(cache: Path, size: int) -> None:
    ledger = open_ledger(LocalCacheStorage(cache))
    assert isinstance(ledger, SqliteLedger)
    batch: list[tuple[str, RunRecord]] = []
    for item in _records(size):
        batch.append(item)
        if len(batch) == 20_000:
            ledger.append_many(batch)
            batch = []
    ledger.append_many(batch)


def _seed_json(cache: Path, size: int) -> None:
    folder = FolderLedger(LocalCacheStorage(cache))
    for entry_id, record in _records(size):
        folder.append(record, entry_id=entry_id)


@dataclass(frozen=True)
class EngineBench:
    """One engine in the benchmark."""

    seed: Callable[[Path, int], None]
    """Put ``size`` entries in the ledger of the cache folder."""
    env: Callable[[Path], dict[str, str]]
    """Extra environment of the CLI and replay processes (``ASKCACHE_LEDGER``, ...)."""
    writers: bool = True
    """Whether the concurrent-writers measure applies."""


ENGINES: dict[str, EngineBench] = {
    "sqlite": EngineBench(seed=_seed_sqlite, env=lambda _cache: {}),
    "json": EngineBench(seed=_seed_json, env=lambda _cache: {}, writers=False),
}
"""The engines measured, by name: ``json`` is askcache 0.1's (with ``--before``, that version)."""


def _template(work: Path) -> Path:
    """A cache folder with FILES copies of one recording and an empty ledger."""
    from askcache import Agent, CacheWritingSettings, CachingSettings, ComputerTool
    from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp

    folder = work / "template"
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, "Ada Lovelace")) as api:
        Agent(api.client(), [ComputerTool(app)], sleep=lambda _: None).act(
            "Save the contact Ada Lovelace",
            CachingSettings(
                strategy="record",
                cache_dir=folder,
                writing_settings=CacheWritingSettings(filename="c00.json"),
            ),
        )
    for index in range(1, FILES):
        shutil.copy(folder / "c00.json", folder / f"c{index:02d}.json")
    shutil.rmtree(folder / ".ledger", ignore_errors=True)
    return folder


def _timed(command: list[str], env: dict[str, str], repeat: int) -> float:
    """Median seconds of ``command`` as a whole process."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _environment(src: Path | None, extra: dict[str, str]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "ASKCACHE_LEDGER"}
    env.update(extra)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def _in_process(cache: Path, env: dict[str, str]) -> tuple[float, float]:
    """Milliseconds of the reads alone, in a process already started (median of 5):
    ``summaries()`` (what ``stats`` reads) and the hand-back check (``consecutive_failures``)."""
    script = (
        "import statistics, sys, time\n"
        "from askcache.storage.cache_storage import LocalCacheStorage\n"
        "from askcache.storage.ledger import open_ledger\n"
        "ledger = open_ledger(LocalCacheStorage(sys.argv[1]))\n"
        "def t(f):\n"
        "    s = []\n"
        "    for _ in range(5):\n"
        "        a = time.perf_counter(); f(); s.append((time.perf_counter() - a) * 1000)\n"
        "    return statistics.median(s)\n"
        "print(t(ledger.summaries), t(lambda: ledger.consecutive_failures('c00.json')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(cache)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), float(out[1])


def _measure(
    name: str,
    *,
    engine: EngineBench,
    size: int,
    template: Path,
    work: Path,
    src: Path | None,
    repeat: int,
) -> dict[str, float]:
    cache = work / f"{name}-{size}"
    shutil.copytree(template, cache)
    empty = work / f"{name}-{size}-empty"
    shutil.copytree(template, empty)
    start = time.perf_counter()
    engine.seed(cache, size)
    seeded = time.perf_counter() - start
    env = _environment(src, engine.env(cache))
    cli = [sys.executable, "-c", CLI]
    # the first open may migrate or build caches: once, untimed, as a real first command would
    first = _timed([*cli, "stats", "--cache-dir", str(cache)], env, 1)
    result = {
        "seed": seeded,
        "first_stats": first,
        "stats": _timed([*cli, "stats", "--cache-dir", str(cache)], env, repeat),
        "list": _timed([*cli, "list", "--cache-dir", str(cache)], env, repeat),
        "replay": _timed([sys.executable, "-c", REPLAY, str(cache)], env, repeat),
        "help": _timed([*cli, "--help"], env, repeat),
        "replay_empty": _timed(
            [sys.executable, "-c", REPLAY, str(empty)], _environment(src, engine.env(empty)), repeat
        ),
    }
    if src is None:
        result["read_ms"], result["check_ms"] = _in_process(cache, env)
    shutil.rmtree(cache)
    shutil.rmtree(empty)
    return result


def _writers(work: Path) -> tuple[float, int]:
    """8 processes appending 1,000 entries each at once: seconds, entries lost."""
    cache = work / "writers"
    cache.mkdir()
    open_ledger(LocalCacheStorage(cache)).append(
        RunRecord(trajectory="seed.json", status="completed")
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(cache), str(w), str(WRITES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.close()
    for proc in procs:
        assert proc.wait() == 0
    seconds = time.perf_counter() - start
    kept = len(open_ledger(LocalCacheStorage(cache)).records("shared.json"))
    return seconds, WRITERS * WRITES - kept


def _reads(got: dict[str, float]) -> str:
    if "read_ms" not in got:
        return "-"
    return f"{got['read_ms']:.1f} ms / {got['check_ms']:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--engines", default="sqlite")
    parser.add_argument("--json-sizes", default="10000,100000", help="sizes for the json engine")
    parser.add_argument("--json-repeat", type=int, default=1, help="runs of each json timing")
    parser.add_argument(
        "--before", type=Path, help="src/ of askcache before the ledger engines (json)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print, do not write the doc")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="askcache-bench-ledger-") as tmp:
        work = Path(tmp)
        template = _template(work)
        for name in args.engines.split(","):
            engine = ENGINES[name]
            src = args.before if name == "json" else None
            for size in [int(n) for n in args.json_sizes.split(",")] if name == "json" else sizes:
                got = _measure(
                    name,
                    engine=engine,
                    size=size,
                    template=template,
                    work=work,
                    src=src,
                    repeat=args.json_repeat if name == "json" else args.repeat,
                )
                label = name
                if name == "json":
                    label = "json, askcache before" if src else "json, moved to sqlite by the first"
                rows.append(
                    f"| {label} | {size:,} | {got['stats']:.2f} s (first {got['first_stats']:.2f} s) "
                    f"| {got['list']:.2f} s | {got['replay']:.2f} s vs {got['replay_empty']:.2f} s "
                    f"({got['replay'] / got['replay_empty']:.2f}x) | {got['help']:.2f} s "
                    f"| {_reads(got)} | {got['seed']:.0f} s |"
                )
                print(rows[-1], flush=True)
        writers = []
        for name in args.engines.split(","):
            if ENGINES[name].writers and name == "sqlite":
                seconds, lost = _writers(work)
                writers.append(f"| {name} | {WRITERS} x {WRITES:,} | {seconds:.1f} s | {lost} |")
                print(writers[-1], flush=True)
    body = "\n".join(
        [
            "## Run ledger (`bench/ledger.py`)",
            "",
            machine(),
            "",
            "Whole processes (`askcache stats|list --cache-dir DIR`, and a replay of the "
            "simulated form that hands back at its first step, `settle_timeout=1`), median of "
            f"{args.repeat} ({args.json_repeat} for json); {FILES} cache files; entries spread over the last 30 days. "
            '"first" is the first `stats` after seeding (it may migrate). The replay is '
            "compared with the same replay against an empty ledger.",
            "",
            "| engine | entries | `stats` | `list` | hand-back replay vs empty ledger "
            "| `askcache --help` | reads in-process: summaries() / hand-back check | seeding |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
            *rows,
            "",
            "Concurrent writers (real processes, started together, each appending its runs):",
            "",
            "| engine | writers x runs | wall time | entries lost |",
            "| --- | --- | --- | --- |",
            *writers,
        ]
    )
    if args.no_write:
        print(body)
    else:
        write_section("ledger", body)


if __name__ == "__main__":
    main()
