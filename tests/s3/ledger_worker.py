"""One machine appending run-ledger entries to an S3 segment ledger, as a separate process.

    python -m tests.s3.ledger_worker CACHE_DIR WORKER ENTRIES COMPACT_AFTER

Appends ENTRIES entries for ``shared.json`` (entry ids ``wWORKER-N``, each appended twice, as
an outbox resending a write would), every append deciding on compaction (past COMPACT_AFTER
loose entries), and prints how many it appended on its last line.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

from askcache.storage.ledger import RunRecord
from askcache.storage.ledger.segments import SegmentLedger
from askcache.storage.remote import storage_for


def main(cache_dir: str, worker: int, entries: int, compact_after: int) -> int:
    ledger = SegmentLedger(storage_for(cache_dir), compact_after=compact_after, check_every=1)
    for n in range(entries):
        record = RunRecord(
            trajectory="shared.json",
            status="completed" if n % 2 else "handed_back",
            stopped_at_step=None if n % 2 else 1,
            started_at=datetime.now(UTC),
            model_calls=1,
            host=f"worker-{worker}",
        )
        entry_id = f"w{worker}-{n:05d}"
        ledger.append(record, entry_id=entry_id)
        ledger.append(record, entry_id=entry_id)
    return entries


if __name__ == "__main__":
    print(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
