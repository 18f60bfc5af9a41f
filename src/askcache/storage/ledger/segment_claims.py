"""Who compacts a trajectory of the S3 run ledger (:mod:`askcache.storage.ledger.segments`):
one claim object per generation, so that of many machines finding the same trajectory due,
one does the work.

Before it reads the entries it will fold into generation ``n``, a compaction creates
``claim-<n>-<attempt>.json`` exclusively (``If-None-Match: *`` on S3); a process that finds a
claim on ``n`` younger than the compaction deadline leaves the work to its owner and goes on
(one request, instead of reading every loose entry for a commit that would be refused).

Claims only save work. What keeps an entry from being lost or counted twice is still the
exclusive creation of the generation itself, so a claim taken over while its owner still runs
(clocks differ between machines) costs at most a compaction that does not commit. A
compaction gives up before committing once the deadline has passed since it started (before
it claimed), so a claim older than the deadline belongs to a compaction that will not
commit: the next process takes over with the next attempt number (again exclusively, so one
process does). A compaction deletes its claim when it ends, and with it the claims on
generations up to its own (left by a process killed while compacting).
"""

from __future__ import annotations

from datetime import datetime

from askcache.foundation.errors import CacheExistsError
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.ledger.segment_objects import (
    Claim,
    TrajectoryObjects,
    claim_name,
    parse_object,
)

__all__ = ["spent_claims", "take_claim"]


def take_claim(
    storage: CacheStorage,
    objects: TrajectoryObjects,
    generation: int,
    deadline: float,
    *,
    now: datetime,
) -> str | None:
    """Claim the compaction of ``objects``' trajectory into ``generation`` at ``now`` (UTC);
    the claim's storage name, or ``None`` when another process holds a claim younger than
    ``deadline`` seconds (or took it first, or committed meanwhile)."""
    attempts = objects.claims.get(generation, {})
    attempt = 0
    if attempts:
        newest = max(attempts)
        raw = storage.read_many([attempts[newest]]).get(attempts[newest])
        if raw is None:  # deleted since the listing: its compaction ended
            return None
        claim = parse_object(Claim, attempts[newest], raw)
        if claim is not None:
            age = (now - claim.created_at).total_seconds()
            if age < deadline:
                return None
        attempt = newest + 1
    name = claim_name(objects.trajectory, generation, attempt)
    try:
        storage.create(name, Claim(created_at=now).model_dump_json().encode())
    except CacheExistsError:
        return None
    return name


def spent_claims(objects: TrajectoryObjects, generation: int) -> list[str]:
    """The claims listed on generations up to ``generation`` (once a compaction into it has
    ended, none of them is needed)."""
    return [
        name
        for number, attempts in objects.claims.items()
        if number <= generation
        for name in attempts.values()
    ]
