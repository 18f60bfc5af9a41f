"""A machine (a container) that heals ``login.json`` in its own PID namespace.

    python -m tests.s3.lock_worker CACHE_DIR LAYOUT USER POINT AHEAD

Prints ``identity HOST PID NAMESPACE`` first. At POINT (one of
``askcache.storage.versions.COMMIT_POINTS``, or ``-`` for none) it prints ``paused at POINT``
and waits for a line on its standard input, then goes on. AHEAD: seconds its clock runs ahead
(``0``: none), as if the process holding the lock had stalled that long. Ends with the heal's
outcome as JSON (``{"heal": ..., "version": ..., "reason": ...}``).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from datetime import UTC, datetime, timedelta

from askcache.storage import lock, versions
from askcache.storage.versions import CommitPoint
from tests.s3.heal_runs import heal_run


def main(cache_dir: str, layout: str, user: str, point: str, ahead: float) -> dict[str, object]:
    namespace = os.stat("/proc/self/ns/pid").st_ino
    print(f"identity {socket.gethostname()} {os.getpid()} {namespace}", flush=True)
    if ahead:
        lock.wall_clock = lambda: datetime.now(UTC) + timedelta(seconds=ahead)

    def pause(reached: CommitPoint) -> None:
        if reached == point:
            print(f"paused at {point}", flush=True)
            sys.stdin.readline()

    versions.commit_point_hook = pause
    result = heal_run(cache_dir, layout, user, search_radius=0)  # type: ignore[arg-type]
    heal = result.heal
    return {
        "heal": None if heal is None else heal.event,
        "version": None if heal is None else heal.version,
        "reason": None if heal is None else heal.reason,
    }


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:5], float(sys.argv[5]))), flush=True)
