"""The run ledger and the list index on S3 (moto): ``askcache list`` of 1,000 cache files,
``askcache stats`` at 10,000 entries, the hand-back check, 8 concurrent writers; and, with
``--parts writers,scale``, 8 writers x 1,000 appends and ``stats`` and the hand-back check at
100,000 (or more, ``--scale``) entries.

    bash scripts/bench.sh ledger_s3 [--entries-per-trajectory 100] [--big 2300]
    bash scripts/bench.sh ledger_s3 --parts writers,scale --writes 1000 --scale 100000

The large ledgers are seeded as that many compactions would have left them: each trajectory's
segments and its newest generation made by the engine's own fold
(:func:`~askcache.storage.ledger.segment_fold.fold_generation`, ``--segment-entries`` entries
each: 1,000 by default, the size compactions merge segments up to) and written directly, plus 10 loose entries, instead of one append per entry.

Starts moto's S3 server (``python -m moto.server``) on 127.0.0.1 in its own process (the S3 API
over HTTP on loopback: no network latency in these numbers). ``list`` and ``stats`` are timed
as whole ``askcache`` processes, start-up included, as a user runs them. With every part
(``--parts all``, the default), writes the "ledger-s3" section of docs/benchmarks.md; with
some, prints their rows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import ROOT, machine, write_section
from bench.storage import BUCKET, _start_server

SUMMARY_CACHE_NOTE = "`list` (run first) computes every trajectory's summary and keeps them in `.ledger-cache/summaries.json`; the `stats` rows read that cache and compute again only the trajectories changed since (`big.json` in the 12,300 row). A first `stats` without the cache reads one generation and the loose entries (10 here) of each trajectory; it was not measured separately in this run."
FILES = int(os.environ.get("BENCH_FILES", "1000"))
TRAJECTORIES = int(os.environ.get("BENCH_TRAJECTORIES", "100"))
WRITERS = 8
LOOSE = 10
"""Loose entries left in each seeded trajectory (appended since its last compaction)."""


def _env(endpoint: str, copies: Path) -> dict[str, str]:
    return {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "ASKCACHE_LOCAL_COPY_DIR": str(copies),
        "PYTHONPATH": str(ROOT),
    }


def _cli(env: dict[str, str], *args: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "askcache.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - start, done.stdout


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) a running process has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    """CPU seconds used by the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cache_files(url: str) -> None:
    """FILES cache files, written as an older askcache (or a hand) would: no index records."""
    from bench.storage import _record

    from askcache.storage.remote import FsspecCacheStorage, storage_for

    _record(url)
    storage = storage_for(url)
    assert isinstance(storage, FsspecCacheStorage)
    content = json.loads(storage.read("contact.json"))
    files = {}
    for n in range(FILES):
        content["metadata"]["goal"] = f"Save contact number {n} for {{{{person}}}}"
        files[storage.path_for(f"team-{n % 10}/file-{n:04d}.json")] = json.dumps(content).encode()
    storage.fs.pipe(files)


def _entries(url: str, trajectory: str, count: int, start: int = 0) -> None:
    """``count`` ledger entries of ``trajectory`` written at once, then compacted as appends
    would have (at most 1,000 per compaction), leaving 10 loose ones."""
    from askcache.storage.ledger import RunRecord, SegmentLedger
    from askcache.storage.remote import FsspecCacheStorage, storage_for

    storage = storage_for(url)
    assert isinstance(storage, FsspecCacheStorage)
    ledger = SegmentLedger(storage)
    t0 = datetime.now(UTC) - timedelta(days=1)

    def batch(numbers: range) -> None:
        objects = {}
        for n in numbers:
            record = RunRecord(
                trajectory=trajectory,
                status="handed_back" if n % 4 == 0 else "completed",
                stopped_at_step=2 if n % 4 == 0 else None,
                started_at=t0 + timedelta(seconds=n),
                model_calls=1,
                model="claude-sonnet-4-5",
            )
            stamp = record.started_at.strftime("%Y%m%dT%H%M%S.%fZ")
            name = f".ledger/{trajectory}/{stamp}-{n:012d}.json"
            objects[storage.path_for(name)] = record.model_dump_json().encode()
        storage.fs.pipe(objects)

    end = start + count
    for first in range(start, end - 10, 1000):
        batch(range(first, min(first + 1000, end - 10)))
        while ledger.compact(trajectory, force=True):
            pass
    batch(range(end - 10, end))


def _handback_check(url: str, trajectory: str) -> float:
    """Median seconds of the hand-back check (``consecutive_failures``) in a warm process."""
    from askcache.storage.ledger import open_ledger
    from askcache.storage.remote import storage_for

    ledger = open_ledger(storage_for(url))
    ledger.consecutive_failures(trajectory)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        ledger.consecutive_failures(trajectory)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


WRITER = """
import sys
from askcache.storage.ledger import RunRecord, open_ledger
from askcache.storage.remote import storage_for
url, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ledger = open_ledger(storage_for(url))
for n in range(count):
    ledger.append(RunRecord(trajectory="shared.json", status="completed", pid=worker),
                  entry_id=f"w{worker}-{n}")
"""


def _writers(url: str, env: dict[str, str], writes: int) -> tuple[float, int]:
    from askcache.storage.ledger import open_ledger
    from askcache.storage.remote import storage_for

    start = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, url, str(w), str(writes)], env=env)
        for w in range(WRITERS)
    ]
    for proc in procs:
        assert proc.wait() == 0
    seconds = time.perf_counter() - start
    summary = open_ledger(storage_for(url)).summary("shared.json")
    return seconds, WRITERS * writes - (summary.entries if summary else 0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries-per-trajectory", type=int, default=100)
    parser.add_argument("--big", type=int, default=2300)
    parser.add_argument("--parts", default="all", help="all, or some of: files,writers,scale")
    parser.add_argument("--writes", type=int, default=1000, help="appends per writer")
    parser.add_argument("--scale", default="100000", help="entry counts, comma-separated")
    parser.add_argument("--segment-entries", type=int, default=1000)
    options = parser.parse_args()
    parts = (
        {"files", "writers", "scale"} if options.parts == "all" else set(options.parts.split(","))
    )
    server, endpoint = _start_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env = _env(endpoint, Path(tmp) / "copies")
            os.environ.update(env)
            import boto3

            boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
            url = f"s3://{BUCKET}/ledger"
            rows: list[tuple[str, str]] = []
            if "files" in parts:
                rows += _measure(url, env, options.entries_per_trajectory, options.big)
            if "writers" in parts:
                rows += _measure_writers(f"s3://{BUCKET}/writers", env, options.writes)
            for count in [int(c) for c in options.scale.split(",")] if "scale" in parts else []:
                rows += _measure_scale(
                    f"s3://{BUCKET}/scale-{count}", env, count, options.segment_entries, server.pid
                )
    finally:
        server.terminate()
        server.wait()
    if parts != {"files", "writers", "scale"}:
        print(machine())
        print("\n".join(f"| {name} | {value} |" for name, value in rows))
        return
    body = "\n".join(
        [
            "## Run ledger and `list` on S3 (moto)",
            "",
            machine(),
            "",
            "`bench/ledger_s3.py`: moto's S3 server in its own process on 127.0.0.1; `list` and "
            "`stats` timed as whole `askcache` processes (start-up included). "
            + SUMMARY_CACHE_NOTE,
            "",
            "| measure | result |",
            "| --- | --- |",
            *(f"| {name} | {value} |" for name, value in rows),
            "",
            "Before (main at 48762cf, the same machine, measured for issue 24 as whole processes): "
            "`askcache stats` at 10,000 entries 51.9 s; `askcache list` of 1,000 cache files did "
            "not finish in 300 s; the hand-back's ledger check at 2,300 entries 18.1 s (every "
            "entry read, one request at a time). The machine is shared with other work: the "
            "load average above is its load during this run, and the `--help` row is what "
            "starting a Python process that imports askcache cost under it.",
        ]
    )
    write_section("ledger-s3", body)
    print(body)


def _progress(text: str) -> None:
    print(f"{datetime.now(UTC):%H:%M:%S} {text}", file=sys.stderr, flush=True)


def _measure(url: str, env: dict[str, str], per: int, big: int) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    _progress(f"writing {FILES} cache files")
    _cache_files(url)
    _progress(f"writing {TRAJECTORIES} x {per} ledger entries")
    for t in range(TRAJECTORIES):
        _entries(url, f"team-{t % 10}/file-{t:04d}.json", per)
    _progress("list, stats")
    entries = TRAJECTORIES * per
    startup, _ = _cli(env, "--help")
    rows.append(
        (
            "`askcache --help` (the process start-up included in each `askcache` row)",
            f"{startup:.1f} s",
        )
    )
    cold, out = _cli(env, "list", "--cache-dir", url)
    warm, again = _cli(env, "list", "--cache-dir", url)
    assert out == again, "list printed something else from the index"
    listed = sum(1 for line in out.splitlines() if line.startswith("- "))
    rows.append(
        (f"`askcache list`, {listed:,} cache files, first run (no index yet)", f"{cold:.1f} s")
    )
    rows.append((f"`askcache list`, {listed:,} cache files, index kept", f"{warm:.1f} s"))
    seconds, _ = _cli(env, "stats", "--cache-dir", url)
    rows.append(
        (
            f"`askcache stats`, {entries:,} entries over {TRAJECTORIES} trajectories",
            f"{seconds:.1f} s",
        )
    )
    small = _handback_check(url, "team-0/file-0000.json")
    _progress(f"writing {big} entries of one trajectory")
    _entries(url, "big.json", big)
    large = _handback_check(url, "big.json")
    rows.append((f"hand-back check, a trajectory of {per:,} entries", f"{small * 1000:.0f} ms"))
    rows.append((f"hand-back check, a trajectory of {big:,} entries", f"{large * 1000:.0f} ms"))
    seconds, _ = _cli(env, "stats", "--cache-dir", url)
    rows.append((f"`askcache stats`, {entries + big:,} entries", f"{seconds:.1f} s"))
    return rows


def _measure_writers(url: str, env: dict[str, str], writes: int) -> list[tuple[str, str]]:
    _progress(f"{WRITERS} writers x {writes}")
    took, lost = _writers(url, env, writes)
    return [
        (
            f"{WRITERS} processes appending {writes:,} entries each to one trajectory at once",
            f"{took:.0f} s ({WRITERS * writes / took:.0f} appends/s), {lost} entries lost",
        )
    ]


def _seed(url: str, trajectory: str, count: int, per_segment: int) -> int:
    """``count`` entries of ``trajectory`` as compactions of ``per_segment`` entries would
    have left them (segments, the newest generation) plus :data:`LOOSE` loose ones; returns
    how many segments the generation lists."""
    from askcache.storage.ledger import RunRecord
    from askcache.storage.ledger.segment_fold import fold_generation
    from askcache.storage.ledger.segment_objects import Generation, stem_at, summary_name
    from askcache.storage.remote import FsspecCacheStorage, storage_for

    storage = storage_for(url)
    assert isinstance(storage, FsspecCacheStorage)
    t0 = datetime.now(UTC) - timedelta(days=30)
    step = timedelta(days=29) / count

    def entry(n: int) -> tuple[str, RunRecord]:
        record = RunRecord(
            trajectory=trajectory,
            status="handed_back" if n % 4 == 0 else "completed",
            stopped_at_step=2 if n % 4 == 0 else None,
            started_at=t0 + n * step,
            model_calls=1,
            model="claude-sonnet-4-5",
        )
        return f"{stem_at(record.started_at)}-{n:012d}", record

    previous: Generation | None = None
    objects: dict[str, bytes] = {}
    for first in range(0, count - LOOSE, per_segment):
        pending = dict(entry(n) for n in range(first, min(first + per_segment, count - LOOSE)))
        folded = fold_generation(trajectory, previous, pending, cutoff=None)
        objects[storage.path_for(folded.segment_name)] = folded.segment.model_dump_json().encode()
        previous = folded.generation
        if len(objects) >= 200:
            storage.fs.pipe(objects)
            objects = {}
    for n in range(count - LOOSE, count):
        stem, record = entry(n)
        objects[storage.path_for(f".ledger/{trajectory}/{stem}.json")] = (
            record.model_dump_json().encode()
        )
    storage.fs.pipe(objects)
    assert previous is not None
    storage.create(
        summary_name(trajectory, previous.generation), previous.model_dump_json().encode()
    )
    return len(previous.segments)


def _measure_scale(
    url: str, env: dict[str, str], count: int, per_segment: int, server_pid: int
) -> list[tuple[str, str]]:
    from askcache.storage.ledger.segment_objects import SUMMARY_CACHE_NAME
    from askcache.storage.remote import storage_for

    _progress(f"seeding {count:,} entries over {TRAJECTORIES} trajectories")
    start = time.perf_counter()
    rows_per = 0
    for t in range(TRAJECTORIES):
        rows_per = _seed(
            url, f"team-{t % 10}/file-{t:04d}.json", count // TRAJECTORIES, per_segment
        )
    _progress(f"seeding one trajectory of {count:,} entries")
    big_rows = _seed(url, "big.json", count, per_segment)
    seeded = time.perf_counter() - start
    _progress("stats, hand-back check")
    storage_for(url).delete(SUMMARY_CACHE_NAME)
    client, server = _children_cpu(), _cpu_of(server_pid)
    cold, out = _cli(env, "stats", "--cache-dir", url)
    client, server = _children_cpu() - client, _cpu_of(server_pid) - server
    warm, again = _cli(env, "stats", "--cache-dir", url)
    assert out == again, "stats printed something else from the summary cache"
    startup, _ = _cli(env, "--help")
    small = _handback_check(url, "team-0/file-0000.json")
    large = _handback_check(url, "big.json")
    total = count + TRAJECTORIES * (count // TRAJECTORIES)
    return [
        (
            f"seeding {total:,} entries ({per_segment} per segment, {LOOSE} loose per trajectory)",
            f"{seeded:.0f} s",
        ),
        (
            f"`askcache stats`, {total:,} entries over {TRAJECTORIES + 1} trajectories, "
            "no summary cache",
            f"{cold:.1f} s",
        ),
        (
            "the same `stats`: CPU of the `askcache` process / of moto's server",
            f"{client:.1f} s / {server:.1f} s",
        ),
        (f"`askcache stats`, {total:,} entries, summary cache kept", f"{warm:.1f} s"),
        ("`askcache --help` in the same minutes (process start-up)", f"{startup:.1f} s"),
        (
            f"hand-back check, a trajectory of {count // TRAJECTORIES:,} entries "
            f"({rows_per} segments)",
            f"{small * 1000:.0f} ms",
        ),
        (
            f"hand-back check, a trajectory of {count:,} entries ({big_rows:,} segments)",
            f"{large * 1000:.0f} ms",
        ),
    ]


if __name__ == "__main__":
    main()
