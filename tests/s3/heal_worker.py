"""A machine that heals a trajectory and is killed at one point of the heal's commit.

    python -m tests.s3.heal_worker CACHE_DIR POINT

Replays ``login.json`` from CACHE_DIR (a folder or an s3:// URL) on the form with a notice
banner: the replay hands back, the scripted model fills the form, and the run heals. At
POINT (one of ``askcache.storage.versions.COMMIT_POINTS``) the process prints ``paused at POINT``
and blocks for good, waiting to be killed. When the commit never reaches POINT it prints
the heal's outcome (``{"heal": ...}``) and exits.
"""

from __future__ import annotations

import json
import sys
import threading

from askcache.storage import versions
from askcache.storage.versions import CommitPoint
from tests.s3.heal_runs import heal_run


def main(cache_dir: str, point: str) -> dict[str, object]:
    def pause(reached: CommitPoint) -> None:
        if reached == point:
            print(f"paused at {point}", flush=True)
            threading.Event().wait()  # until kill -9

    versions.commit_point_hook = pause
    result = heal_run(cache_dir, "banner", "bob")
    return {"heal": None if result.heal is None else result.heal.event}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])), flush=True)
