"""How long each step of a trajectory waited for the screen, run after run, and how long the
next run should wait for it: :class:`StepWaits` and :func:`wait_budget`.

Every replay's ledger entry keeps, per step that passed its check and acted, the seconds it
waited for the screen (:attr:`RunRecord.step_waits
<askcache.storage.ledger.records.RunRecord.step_waits>`: the step's
:attr:`~askcache.replay.result.StepRecord.waited_seconds`: its wait until its check passed on
a still screen; the wait for its effect after acting is not in it), with the screen profile it
ran on and the digest of the steps it ran (:func:`steps_digest`). :meth:`RunLedger.step_waits
<askcache.storage.ledger.engine.RunLedger.step_waits>` reads them back for one trajectory,
one profile and one digest, from the newest runs; :func:`wait_budget` turns one step's past
waits into how long a replay waits for that step's screen before it hands back.

What is kept, and why:

* only steps that passed their check and acted: a step that handed back (its check failed,
  or its effect did not appear) waited until the replay gave up, which says nothing about how
  long the screen takes, and would push every later budget up to ``settle_timeout``;
* no step at or after a trajectory variant taken in the run: from there the indexes name
  the variant's steps, not the trajectory's;
* the steps' digest: a heal, a rollback or a new recording under the same name renumbers
  steps, so waits are compared with runs of the same steps only (the first runs after such a
  change have no past, and wait as long as ``settle_timeout`` allows);
* the profile: a slower screen (a larger one, another machine class) is its own history.

A run counts (:attr:`StepWaits.runs`) even when no step of it passed (it handed back at its
first step): the past covers that many runs, and a step not in :attr:`StepWaits.waits` never
passed in them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from askcache.storage.ledger.records import RunRecord

if TYPE_CHECKING:  # a digest reads the steps' fields; the ledger needs no Messages model
    from askcache.foundation.messages import ToolUseBlockParam

__all__ = [
    "DEFAULT_WAIT_RUNS",
    "MIN_WAIT_RUNS",
    "WAIT_FLOOR_SECONDS",
    "StepWaits",
    "collect_waits",
    "key_of",
    "merge_waits",
    "steps_digest",
    "wait_budget",
    "waits_key",
]

DEFAULT_WAIT_RUNS = 50
"""How many of the newest runs :meth:`~askcache.storage.ledger.engine.RunLedger.step_waits`
reads by default."""

MIN_WAIT_RUNS = 5
"""Fewer runs than this give no budget (:func:`wait_budget`)."""

WAIT_FLOOR_SECONDS = 0.25
"""The least budget :func:`wait_budget` gives. Most steps find their screen at the first look
(a past of zeros), so a budget of 1.5 times their 99th percentile would be 0: a replay would
hand back at its first look whenever a window is missing, although mapping a window and
drawing it takes a few frames and a round trip to the X server, more on a loaded machine.
A quarter of a second covers that (15 frames at 60 Hz) and is a quarter of the 1 s the
hand-back may take in all."""

_DIGEST_CHARS = 16
"""Hex digits kept of the steps' SHA-256 (64 bits: two trajectories of one name never share
them by chance)."""


class StepWaits(BaseModel):
    """The past waits of one trajectory's steps on one screen profile (see the module
    docstring)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    runs: int = 0
    """The runs they came from: the newest replays of these steps on this profile, at most
    the ``limit`` asked for."""
    waits: dict[int, list[float]] = Field(default_factory=dict)
    """Step index -> the seconds it waited for the screen (:attr:`RunRecord.step_waits
    <askcache.storage.ledger.records.RunRecord.step_waits>`), newest run first, one per run
    in which it passed (fewer than :attr:`runs` when some runs stopped before it)."""


def steps_digest(steps: Iterable[ToolUseBlockParam]) -> str:
    """The digest of a trajectory's steps, as :attr:`RunRecord.steps_digest
    <askcache.storage.ledger.records.RunRecord.steps_digest>` keeps it: 16 hex digits of the
    SHA-256 of each step's JSON (fingerprints included, parameters not filled in). Pass the
    trajectory the replay runs (the learned profile's, when it runs one)."""
    digest = hashlib.sha256()
    for step in steps:
        digest.update(step.model_dump_json().encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()[:_DIGEST_CHARS]


def waits_key(record: RunRecord) -> str | None:
    """What the SQL engines index an entry's waits under: ``<digest> <profile>`` (no profile:
    nothing after the space); ``None`` for an entry that holds no waits (not a replay, or
    written before askcache kept them)."""
    if record.event != "replay" or record.steps_digest is None:
        return None
    return key_of(record.steps_digest, record.profile)


def key_of(digest: str, profile: str | None) -> str:
    """The index key of :func:`waits_key` for a query."""
    return f"{digest} {profile or ''}"


def collect_waits(
    records: Iterable[RunRecord], *, profile: str | None, digest: str, limit: int
) -> StepWaits:
    """The :class:`StepWaits` of the newest ``limit`` of ``records`` (entries of one
    trajectory, in any order) that replayed the steps of ``digest`` on ``profile``."""
    key = key_of(digest, profile)
    runs = [r for r in records if waits_key(r) == key]
    runs.sort(key=lambda record: record.started_at, reverse=True)
    return merge_waits(run.step_waits for run in runs[: max(limit, 0)])


def merge_waits(newest_first: Iterable[dict[int, float]]) -> StepWaits:
    """The :class:`StepWaits` of runs' :attr:`RunRecord.step_waits
    <askcache.storage.ledger.records.RunRecord.step_waits>`, given newest first."""
    waits: dict[int, list[float]] = {}
    runs = 0
    for run in newest_first:
        runs += 1
        for index, seconds in run.items():
            waits.setdefault(index, []).append(seconds)
    return StepWaits(runs=runs, waits=dict(sorted(waits.items())))


def wait_budget(
    past: Sequence[float],
    *,
    runs: int,
    settle_timeout: float,
    min_runs: int = MIN_WAIT_RUNS,
    floor: float = WAIT_FLOOR_SECONDS,
) -> float | None:
    """How long a replay waits for one step's screen, from that step's ``past`` waits
    (:attr:`StepWaits.waits`) over ``runs`` runs (:attr:`StepWaits.runs`): the 99th
    percentile of ``past`` (linearly interpolated between the two nearest waits) plus half
    of it, at least ``floor`` (:data:`WAIT_FLOOR_SECONDS`), at most ``settle_timeout``.

    ``None`` (no budget: wait up to ``settle_timeout``, as without a past) when fewer than
    ``min_runs`` runs are known, or when the step passed in none of them (nothing says how
    long its screen takes). A wait that is not a finite number is left out (a ledger edited
    by hand); a negative one counts as 0.
    """
    waits = sorted(max(wait, 0.0) for wait in past if math.isfinite(wait))
    if runs < min_runs or not waits:
        return None
    position = 0.99 * (len(waits) - 1)
    low = math.floor(position)
    high = min(low + 1, len(waits) - 1)
    p99 = waits[low] + (waits[high] - waits[low]) * (position - low)
    return min(max(p99 * 1.5, floor), settle_timeout)
