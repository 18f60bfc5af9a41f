"""What a replay saves: model calls, tokens and wall time of the demo's recording vs its replay.

    bash scripts/bench.sh savings        (starts Xvfb; uses the Tk demo, offline)

Writes the "savings" section of docs/benchmarks.md.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, write_section

from askcache.cli.demo import run_demo


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        outcome = run_demo(Path(folder), offline=True)
    record, replay, changed = outcome.record, outcome.replay, outcome.changed
    t1, t2, t3 = outcome.seconds
    rows = [
        ("recording", record.model_calls, record.conversation.usage.total_tokens, t1),
        ("replay, unchanged app", replay.model_calls, replay.conversation.usage.total_tokens, t2),
        (
            "replay, changed app (hand-back at step 1)",
            changed.model_calls,
            changed.conversation.usage.total_tokens,
            t3,
        ),
    ]
    lines = [
        "## Savings (`bench/savings.py`)",
        "",
        machine(),
        "",
        f"The demo's task on {outcome.where}, model: {outcome.mode}.",
        "",
        "| run | model calls | tokens | wall time |",
        "| --- | --- | --- | --- |",
        *(
            f"| {name} | {calls} | {tokens:,} | {seconds:.2f} s |"
            for name, calls, tokens, seconds in rows
        ),
        "",
        "Tokens are the stand-in's estimates (text at 4 characters a token, images at width x height / 750, "
        "as the API prices them). The scripted model answers at once, so the recording's wall time here is only "
        "the application's: with Claude each of those model calls adds its latency, which the replay does not "
        "pay. The replay's time is mostly waiting for the screen to settle (0.3 s after each action, then 0.3 s "
        "of stillness). Time saved with a real model is not claimed until measured with one.",
    ]
    body = "\n".join(lines)
    write_section("savings", body)
    print(body)


if __name__ == "__main__":
    main()
