"""One writer of a fleet, as a separate process, appending to a PostgreSQL run ledger.

    python -m tests.ledger.pg_writer URL INDEX ENTRIES

Waits for a line on stdin (so that every writer starts at once), then opens the ledger (the
first use creates its tables) and appends ENTRIES entries, alternating between two
trajectories, and prints how many it appended. Its timeouts are long: this writer checks that
concurrent appends lose nothing, on a machine that may be loaded; what a timeout does is
test_postgres.py's concern.
"""

from __future__ import annotations

import sys

from askcache.storage.ledger import RunRecord
from askcache.storage.ledger.postgres import PostgresLedger, PostgresTimeouts


def main(url: str, index: int, entries: int) -> int:
    sys.stdin.readline()
    with PostgresLedger(url, timeouts=PostgresTimeouts(connect=120, statement=300)) as ledger:
        for run in range(entries):
            status = "handed_back" if run % 3 else "completed"
            record = RunRecord(
                trajectory=f"shared-{run % 2}.json",
                status=status,
                stopped_at_step=1 if status == "handed_back" else None,
                steps_run=run,
                pid=index,
            )
            ledger.append(record)
    return entries


if __name__ == "__main__":
    print(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
