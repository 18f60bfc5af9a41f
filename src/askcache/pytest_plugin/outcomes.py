"""What one test's askcache runs did (:class:`TestOutcome`), for the session's summary.

The figures of a replay are its run-ledger entry's, so that they add up as ``askcache
stats`` adds them: what it saved is the recording's cost in proportion to the steps it
replayed, less what the model spent after a hand-back (:mod:`askcache.agent.run_record`),
and dollars are those tokens at the recording model's input price
(:meth:`~askcache.cli.prices.ModelPrice.saved`). An outcome travels as JSON: from a
pytest-xdist worker to the controller on the test's report.
"""

from __future__ import annotations

import logging
import os
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from askcache.agent.act import ActResult
from askcache.agent.prepare import open_run_ledger
from askcache.cli.prices import price_for
from askcache.foundation.errors import AskCacheError
from askcache.foundation.reasons import HandBackCode
from askcache.foundation.settings import CachingSettings
from askcache.storage.ledger import RunRecord
from askcache.storage.remote import storage_for

__all__ = ["ReplayOutcome", "TestOutcome", "outcome_of"]

logger = logging.getLogger(__name__)


class ReplayOutcome(BaseModel):
    """One replay a test ran."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    status: str
    """How it ended (:data:`~askcache.replay.result.ReplayStatus`)."""
    reason_code: HandBackCode | None = None
    """Why it handed back (or why its end is not confirmed), as a code."""
    stopped_at_step: int | None = None
    """The step it handed back at."""
    handbacks: int = 0
    """Times it handed back."""


class TestOutcome(BaseModel):
    """What one call of a test (an ``act``, or a loop's ``done``) did under the plugin."""

    __test__ = False  # not a test class, whatever pytest collects

    model_config = ConfigDict(use_attribute_docstrings=True)

    nodeid: str
    """The test."""
    mode: str
    """The plugin's mode for it."""
    trajectory: str
    """The trajectory's file name."""
    strategy: str
    """What the run did: ``record``, ``execute`` (replayed) or ``off``."""
    recorded: bool = False
    """True when the run wrote its trajectory."""
    replays: list[ReplayOutcome] = Field(default_factory=list)
    """The replays it ran."""
    model_calls: int = 0
    """Model calls the run made (a recording's, or after a hand-back)."""
    saved_model_calls: int = 0
    """Model calls its replays saved, from their ledger entries (negative: spent more)."""
    saved_tokens: int = 0
    """Tokens its replays saved, likewise."""
    saved_dollars: float | None = None
    """Those tokens' price at the recording model's input price; ``None``: no replay had
    a priced model."""
    unpriced_models: list[str] = Field(default_factory=list)
    """Recording models with no price, left out of :attr:`saved_dollars`."""
    failed: bool = False
    """True when the plugin failed the test (a hand-back in ``replay`` mode)."""
    report: str | None = None
    """The report page written for it."""


def _entries(settings: CachingSettings, name: str, since: datetime) -> list[RunRecord]:
    """This process's replay entries of ``name`` written since ``since``."""
    storage = storage_for(settings.cache_dir)
    try:
        with open_run_ledger(storage, settings) as ledger:
            found = ledger.records(name, since=since)
    except (AskCacheError, OSError) as exc:  # the summary goes without them
        logger.warning("the run ledger of %s cannot be read: %s", name, exc)
        return []
    return [r for r in found if r.event == "replay" and r.pid == os.getpid()]


def outcome_of(
    result: ActResult,
    settings: CachingSettings,
    *,
    nodeid: str,
    mode: str,
    since: datetime,
) -> TestOutcome:
    """The outcome of ``result``, a run under ``settings`` that started at ``since``; its
    replays' savings are read back from their ledger entries."""
    name = settings.writing_settings.filename or ""
    outcome = TestOutcome(
        nodeid=nodeid,
        mode=mode,
        trajectory=name,
        strategy=str(result.strategy),
        recorded=result.conversation.recorded_file is not None,
        model_calls=result.model_calls,
        replays=[
            ReplayOutcome(
                status=replay.status,
                reason_code=replay.reason_code,
                stopped_at_step=replay.stopped_at_step,
                handbacks=replay.handbacks,
            )
            for replay in result.replays
        ],
    )
    if not result.replays or not name:
        return outcome
    unpriced: set[str] = set()
    for record in _entries(settings, name, since)[-len(result.replays) :]:
        outcome.saved_model_calls += record.saved_model_calls
        outcome.saved_tokens += record.saved_tokens
        price = price_for(record.model)
        if price is None:
            unpriced.add(record.model or "(unknown model)")
            continue
        outcome.saved_dollars = (outcome.saved_dollars or 0.0) + price.saved(record.saved_tokens)
    outcome.unpriced_models = sorted(unpriced)
    return outcome
