"""Reliability: hostile and careless cache files, fuzzed from real recordings.

    bash scripts/bench.sh fuzz [PARSE_CASES REPLAY_CASES SIGNED_CASES]

Records the form-filling task for real (SimulatedFormApp, the scripted model, the real
anthropic client over HTTP to the local stand-in), then mutates the files with
askcache.testing.fuzz: thousands of mutants are loaded, and the accepted ones replayed on
the unchanged and on a changed screen. Writes the "reliability" section of
docs/benchmarks.md. The test suite runs the same harness on fewer cases
(tests/integration/test_fuzz_cache_files.py).
"""

from __future__ import annotations

import logging
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, write_section

from askcache.cachefile.format import dump_cache_file
from askcache.cachefile.parse import parse_cache_file
from askcache.cachefile.signing import SigningKeys, sign_cache_file
from askcache.foundation.settings import CacheExecutionSettings
from askcache.testing.fuzz import FuzzReport, fuzz, record_seed_files

KEY = "bench-key:0123456789abcdef0123456789abcdef"


def _row(name: str, report: FuzzReport) -> str:
    return (
        f"| {name} | {report.cases:,} | {report.refused_at_load:,} | "
        f"{report.refused_at_activation:,} | {report.replays:,} ({report.completed:,} completed, "
        f"{report.handed_back:,} handed back) | {len(report.raw)} | {len(report.hangs)} | "
        f"{len(report.late)} | {len(report.acted_on_changed)} | {len(report.typed_altered)} | "
        f"{report.seconds:.0f} s |"
    )


def main() -> None:
    parse_cases, replay_cases, signed_cases = (
        int(a) for a in (sys.argv[1:] or [20000, 3000, 1000])
    )
    logging.disable(logging.WARNING)
    seeds = record_seed_files()
    parsed = fuzz(seeds, parse_cases, replay=False, time_bound=10)
    replayed = fuzz(seeds, replay_cases, first_seed=10_000_000, big=False)

    import os

    os.environ["ASKCACHE_SIGNING_KEY"] = KEY
    keys = SigningKeys.from_env()

    def signed(raw: bytes) -> bytes:
        cache_file = parse_cache_file(raw, "seed.json")
        sign_cache_file(cache_file, keys)
        return dump_cache_file(cache_file)

    signed_report = fuzz(
        seeds,
        signed_cases,
        first_seed=20_000_000,
        big=False,
        prepare=signed,
        settings=CacheExecutionSettings(delay_time_between_action=0, require_signature=True),
    )
    del os.environ["ASKCACHE_SIGNING_KEY"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    reports = [parsed, replayed, signed_report]
    lines = [
        "## Reliability: fuzzed cache files (`bench/fuzz.py`)",
        "",
        machine(),
        "",
        "Mutants of two real recordings (the form-filling task in both computer-tool shapes, "
        "with a parameter), made by `askcache.testing.fuzz`'s seeded mutator: truncations, "
        "flipped bits, inserted and deleted bytes, deleted, renamed and added keys, wrong "
        "types, huge, negative and non-finite numbers, nesting up to 100,000 deep, long "
        "strings and lists, lone surrogates, broken hashes, weakened or removed validation "
        "set-ups, changed actions, steps calling a `shell` tool. Each mutant is loaded; an "
        "accepted one is replayed on the unchanged form and on a changed one (a banner pushes "
        "the form down), with a model that stops when handed the turn. Each case has a time "
        "bound (10 s when only loading, 20 s when replaying).",
        "",
        "| run | mutants | refused at load | refused at activation | replays | raw exceptions "
        "| hangs | errors after an action | actions on the changed screen | altered text typed "
        "| wall time |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        _row("load only", parsed),
        _row("load and replay", replayed),
        _row("load and replay, signed files", signed_report),
        "",
        f"Peak memory of the process: {peak:.0f} MiB, mostly the mutator's own (it builds "
        "mutants of up to about 40 MB of JSON; askcache refuses any file over 8 MiB before "
        f"parsing it). The longest `wait` a replayed step asked for: "
        f"{max(r.longest_wait for r in reports):g} s.",
        "",
        "Every refusal is an `AskCacheError` subclass raised before the first action. Without "
        "a signature, a mutant that changes only the text a `type` step types (a flipped "
        "letter) is a valid file and is typed as it stands: the loader cannot tell it from a "
        "recording, only the signature can, and with signing on no altered text was typed.",
    ]
    for name, report in (("load only", parsed), ("replay", replayed), ("signed", signed_report)):
        for case in [*report.raw, *report.hangs, *report.late, *report.acted_on_changed][:5]:
            lines.append(f"- {name}: seed {case.seed}: {case.what}")
    body = "\n".join(lines)
    write_section("reliability", body)
    print(body)


if __name__ == "__main__":
    main()
