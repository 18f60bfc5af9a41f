"""Shared storage: replay start-up from S3 vs a local folder; N concurrent ledger writers.

    bash scripts/bench.sh storage

Starts moto's S3 server (``python -m moto.server``) on 127.0.0.1 in its own process: the S3
API over HTTP on loopback, so network latency is not in these numbers. Writes the "shared
storage" section of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, write_section

BUCKET = "bench-caches"
REPEAT = 20
WRITERS = (1, 4, 8)
ENTRIES = 50

WRITER = """
import json, sys, time
from askcache.storage.ledger import RunRecord, open_ledger
from askcache.storage.remote import storage_for
url, index, entries, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
storage = storage_for(url)
storage.list_names()  # connect before the clock starts
start = time.perf_counter()
for run in range(entries):
    if mode == "ledger":
        open_ledger(storage).append(
            RunRecord(trajectory="shared.json", status="completed", steps_run=run, pid=index)
        )
    else:  # the naive way: read a counter, add one, write it back
        count = json.loads(storage.read(".counter/runs.json"))["runs"]
        storage.write(".counter/runs.json", json.dumps({"runs": count + 1}).encode())
print(time.perf_counter() - start)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_server() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    return server, f"http://127.0.0.1:{port}"


def _record(cache_dir: str) -> None:
    from askcache import Agent, CacheWritingSettings, CachingSettings, ComputerTool
    from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp

    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, "Ada Lovelace")) as api:
        Agent(api.client(), [ComputerTool(app)], sleep=lambda _: None).act(
            "Save the contact Ada Lovelace",
            CachingSettings(
                strategy="record",
                cache_dir=cache_dir,
                writing_settings=CacheWritingSettings(filename="contact.json"),
            ),
        )


def _times(
    variants: list[tuple[str, Callable[[], object]]],
) -> list[tuple[str, tuple[float, float]]]:
    """Median and p90 in ms of each variant, run in turn REPEAT times (interleaved, so that
    other load on the machine weighs on every variant alike)."""
    samples: dict[str, list[float]] = {name: [] for name, _ in variants}
    for _ in range(REPEAT):
        for name, run in variants:
            start = time.perf_counter()
            run()
            samples[name].append((time.perf_counter() - start) * 1000)
    result = []
    for name, values in samples.items():
        values.sort()
        result.append((name, (statistics.median(values), values[int(len(values) * 0.9) - 1])))
    return result


def _writers(url: str) -> list[tuple[int, str, int, int, float, float]]:
    """N processes appending ledger entries (and updating a naive counter) at once."""
    from askcache.storage.ledger import open_ledger
    from askcache.storage.remote import storage_for

    rows = []
    for count in WRITERS:
        for mode in ("ledger", "counter"):
            target = f"{url}/w{count}-{mode}"
            if mode == "counter":
                storage_for(target).write(".counter/runs.json", b'{"runs": 0}')
            start = time.perf_counter()
            procs = [
                subprocess.Popen(
                    [sys.executable, "-c", WRITER, target, str(i), str(ENTRIES), mode],
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for i in range(count)
            ]
            outs = [p.communicate()[0] for p in procs]
            if any(p.returncode for p in procs):
                raise SystemExit(f"a writer failed: {outs}")
            wall = time.perf_counter() - start
            busy = max(float(out.strip()) for out in outs)
            if mode == "ledger":
                kept = len(open_ledger(storage_for(target)).records("shared.json"))
            else:
                kept = json.loads(storage_for(target).read(".counter/runs.json"))["runs"]
            rows.append((count, mode, count * ENTRIES, kept, busy, wall))
    return rows


def main() -> None:
    server, endpoint = _start_server()
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ENDPOINT_URL=endpoint,
    )
    import boto3
    from s3fs import S3FileSystem

    from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
    from askcache.storage.remote import FsspecCacheStorage, storage_for

    try:
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        work = Path(tempfile.mkdtemp())
        url = f"s3://{BUCKET}/bench"
        os.environ["ASKCACHE_LOCAL_COPY_DIR"] = str(work / "copy")
        _record(str(work / "local"))
        _record(url)
        size = len(LocalCacheStorage(work / "local").read("contact.json"))

        def cold() -> None:
            S3FileSystem.clear_instance_cache()
            storage = FsspecCacheStorage(url, local_copy_dir=work / f"cold-{time.monotonic_ns()}")
            load_cache_file(storage, "contact.json")

        def warm_copy() -> None:
            S3FileSystem.clear_instance_cache()
            load_cache_file(storage_for(url), "contact.json")

        shared = storage_for(url)

        def same_process() -> None:
            load_cache_file(shared, "contact.json")

        local = LocalCacheStorage(work / "local")
        startup = _times(
            [
                ("local folder", lambda: load_cache_file(local, "contact.json")),
                ("S3, first read of a process: new S3 client, HEAD + GET", cold),
                ("S3, first read of a process, file in the read-through copy: HEAD", warm_copy),
                ("S3, next replay in the same process: HEAD", same_process),
            ]
        )
        writers = _writers(url)
    finally:
        server.terminate()
        server.wait(timeout=30)
    load = os.getloadavg()[0]
    lines = [
        "## Shared storage (`bench/storage.py`)",
        "",
        machine(),
        f" Load average at the end: {load:.1f} (other work shared the machine).",
        "",
        "The S3 server is moto's (`python -m moto.server`) in its own process on 127.0.0.1: the "
        "real S3 API over HTTP through s3fs, but on loopback, so these numbers contain no "
        "network latency; expect each request to cost a round trip more on real S3 "
        "(a few ms in the same region). A process's first read also creates the S3 client "
        "(botocore loads its service model), which costs more than the requests.",
        "",
        f"**Replay start-up**: reading and parsing the {size:,}-byte cache file of the demo's "
        f"task before the first step, {REPEAT} times each.",
        "",
        "| from | median | p90 |",
        "| --- | --- | --- |",
        *(f"| {name} | {med:.1f} ms | {p90:.1f} ms |" for name, (med, p90) in startup),
        "",
        f"**Concurrent writers**: N processes each append {ENTRIES} run-ledger entries to one "
        "trajectory at once (`RunLedger.append`: one object per run, created with "
        "`If-None-Match: *`), against the naive alternative of a shared counter object that "
        "each run reads, increments and writes back.",
        "",
        "| writers | how | runs | runs kept | slowest writer | wall time incl. start-up |",
        "| --- | --- | --- | --- | --- | --- |",
        *(
            f"| {count} | {'ledger (one object per run)' if mode == 'ledger' else 'read-modify-write counter'} "
            f"| {runs} | {kept} | {busy:.2f} s | {wall:.2f} s |"
            for count, mode, runs, kept, busy, wall in writers
        ),
        "",
        "The ledger keeps every run however many processes write at once; the counter loses "
        "updates as soon as two writers overlap, which is why the ledger never rewrites an "
        "object.",
    ]
    body = "\n".join(lines)
    write_section("shared storage", body)
    print(body)


if __name__ == "__main__":
    main()
