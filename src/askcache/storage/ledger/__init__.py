"""The run ledger: what happened at each replay, kept beside the cache, never inside it.

A trajectory file changes only when it is recorded, healed or invalidated, so users can review
and commit it and many machines can read it at once. Everything a replay learns (status, the
step it stopped at, why, seconds, how long each step waited for the screen, model calls and
tokens spent after a hand-back, and an estimate of what it saved) goes into the ledger
instead, one :class:`RunRecord` per run, and into its trajectory's
:class:`TrajectorySummary`, which reads use instead of the runs.

:func:`open_ledger` opens the engine (:class:`RunLedger`) a storage or a URL asks for:
:mod:`.records` (the entry), :mod:`.summary` (the aggregates), :mod:`.waits` (each step's
past waits, and the wait they allow the next run), :mod:`.engine` (the interface),
:mod:`.folder` (one JSON object per entry, askcache 0.1's format), :mod:`.segments` (S3: entry
objects compacted into segments and summaries, :mod:`.segment_objects`), :mod:`.open`
(choosing), :mod:`.url` (a URL's password never shown).
See docs/ledger.md.
"""

from typing import TYPE_CHECKING

from askcache.storage.ledger.engine import LEDGER_FOLDER, RunLedger
from askcache.storage.ledger.folder import FolderLedger
from askcache.storage.ledger.open import open_ledger, redact_url
from askcache.storage.ledger.records import (
    FailedCheck,
    RejoinCondition,
    RejoinDecision,
    RunEvent,
    RunRecord,
    RunStatus,
)
from askcache.storage.ledger.summary import ModelTotals, TrajectorySummary, fold, merge
from askcache.storage.ledger.waits import StepWaits, steps_digest, wait_budget

if TYPE_CHECKING:
    from askcache.storage.ledger.segments import SegmentLedger

__all__ = [
    "LEDGER_FOLDER",
    "FailedCheck",
    "FolderLedger",
    "ModelTotals",
    "RejoinCondition",
    "RejoinDecision",
    "RunEvent",
    "RunLedger",
    "RunRecord",
    "RunStatus",
    "SegmentLedger",
    "StepWaits",
    "TrajectorySummary",
    "fold",
    "merge",
    "open_ledger",
    "redact_url",
    "steps_digest",
    "wait_budget",
]


def __getattr__(name: str) -> object:
    """:class:`SegmentLedger` (the S3 engine and its modules), imported when first named: a
    command on another engine (``askcache dashboard --ledger postgresql://...``) starts
    without it."""
    if name == "SegmentLedger":
        from askcache.storage.ledger.segments import SegmentLedger

        return SegmentLedger
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
