"""One machine of a fleet, as a separate process: records, replays, writes the run ledger.

    python -m tests.s3.worker CACHE_DIR INDEX ENTRIES

Records ``contact-INDEX.json`` through Agent with ``cache_dir=CACHE_DIR`` (an s3:// URL),
replays the shared ``shared.json`` for another person, appends ENTRIES run-ledger entries
for ``shared.json``, overwrites ``common.json`` with its own version, and prints a JSON
summary on its last line.
"""

from __future__ import annotations

import json
import sys

from askcache import (
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.storage.ledger import RunRecord, open_ledger
from askcache.storage.remote import storage_for
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp


def main(cache_dir: str, index: int, entries: int) -> dict[str, object]:
    person = f"Person {index}"
    app = SimulatedFormApp()
    script = FormFillingScript(app, person)
    with MessagesApiStandIn(script) as api:
        agent = Agent(api.client(), [ComputerTool(app)], sleep=lambda _: None)
        recorded = agent.act(
            f"Save the contact {person}",
            CachingSettings(
                strategy="record",
                cache_dir=cache_dir,
                writing_settings=CacheWritingSettings(filename=f"contact-{index}.json"),
            ),
        )
        other = SimulatedFormApp()
        script.app = other
        replayed = Agent(api.client(), [ComputerTool(other)], sleep=lambda _: None).act(
            f"Save the contact Replayed {index}",
            CachingSettings(
                strategy="execute",
                cache_dir=cache_dir,
                writing_settings=CacheWritingSettings(filename="shared.json"),
                execution_settings=CacheExecutionSettings(
                    parameter_values={"person": f"Replayed {index}"}
                ),
            ),
        )
    storage = storage_for(cache_dir)
    ledger = open_ledger(storage)
    for run in range(entries):
        ledger.append(
            RunRecord(trajectory="shared.json", status="completed", steps_run=run, pid=index)
        )
    storage.write("common.json", json.dumps({"writer": index, "pad": "x" * 50_000}).encode())
    assert replayed.replay is not None
    return {
        "index": index,
        "recorded": recorded.status,
        "record_calls": recorded.model_calls,
        "replay": replayed.replay.status,
        "replay_calls": replayed.model_calls,
        "saved": other.saved,
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
