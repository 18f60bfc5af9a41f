"""A process appending entries to a ledger: ``python -m tests.ledger.worker ENGINE LOCATION
WORKER COUNT``. Prints ``ready`` once the ledger is open, then waits for a line on stdin, so
every worker starts appending at once."""

from __future__ import annotations

import sys

from askcache.storage.ledger import RunRecord
from tests.ledger.engines import ENGINES


def main(engine: str, location: str, worker: int, count: int) -> None:
    ledger = ENGINES[engine].open(location)
    print("ready", flush=True)
    sys.stdin.readline()
    for index in range(count):
        record = RunRecord(trajectory=f"t{index % 3}.json", status="completed", steps_run=index)
        ledger.append(record.model_copy(update={"pid": worker}))
    ledger.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
