"""After an :meth:`~askcache.agent.act.Agent.act` call: its replays into the run ledger, and the
automatic invalidation policy.

A replay's ledger entry is written once the conversation has ended, so it can say what the
model spent after a hand-back, and how long each of its steps waited for the screen
(:func:`step_waits`, read back by the next replays through
:meth:`~askcache.storage.ledger.RunLedger.step_waits`). The estimate of what a replay saved
is the recording's cost in proportion to the steps replayed, less what this run spent on the
model.

Invalidation: once ``CacheExecutionSettings.invalidate_after`` replays in a row handed back at
the same step, the file is marked invalid (the only time a replay writes the trajectory file)
and an ``invalidated`` entry says why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from PIL import Image

from askcache.agent.failure_regions import keep_failing_region
from askcache.agent.outbox_sync import RunWriter
from askcache.conversation.turns import ConversationResult
from askcache.foundation.errors import AskCacheError, RecordingNotStoredError
from askcache.foundation.messages import Usage
from askcache.foundation.settings import CacheExecutionSettings, CachingSettings, HealMode
from askcache.heal.trajectory import HealOutcome, prepare_heal
from askcache.record.recording import CacheManager
from askcache.replay.executor import CacheExecutor
from askcache.replay.result import ReplayResult
from askcache.replay.session import ReplaySession
from askcache.storage.cache_storage import load_cache_file
from askcache.storage.index import save_indexed
from askcache.storage.ledger import RunRecord, RunStatus, steps_digest

__all__ = [
    "finish_run",
    "heal_after",
    "record_runs",
    "run_record",
    "step_deciders",
    "step_waits",
    "store_recording",
]

logger = logging.getLogger(__name__)


def finish_run(
    writer: RunWriter,
    executor: CacheExecutor,
    outcome: ConversationResult,
    settings: CachingSettings,
    *,
    name: str | None,
    base: bytes | None,
    capture: Callable[[], Image.Image] | None,
) -> tuple[HealOutcome | None, list[str]]:
    """After a run, whoever owned its loop: the heal of ``name`` when its one replay handed
    back and the run is verified (``base``: the file's bytes as the replay read them), then
    a ledger entry per replay of ``executor``. Returns the heal written (``None``: none) and
    the ledger entries' names. Nothing here raises: what the storage does not take waits
    in the outbox (``writer.kept``)."""
    healed = (
        heal_after(
            writer,
            name=name,
            base=base,
            session=executor.sessions[0],
            outcome=outcome,
            settings=settings,
            capture=capture,
        )
        if base is not None and name is not None and len(executor.sessions) == 1
        else None
    )
    entries = record_runs(
        writer,
        executor.sessions,
        outcome,
        settings.execution_settings,
        read_only=settings.heal_mode == HealMode.OFF,
        thumbnails=settings.ledger_thumbnails,
    )
    return healed, entries


def store_recording(
    recorder: CacheManager | None, outcome: ConversationResult, settings: CachingSettings
) -> RecordingNotStoredError | None:
    """Store the run's recording when it recorded one, is done and may write (heal mode not
    ``off``), setting ``outcome.recorded_file``. A recording the storage did not take is
    kept in the outbox (:mod:`askcache.record.store`); its error is returned, for the caller
    to raise once the run's other writes are done, with the run's result on it."""
    if recorder is None or outcome.status != "done" or settings.heal_mode == HealMode.OFF:
        return None
    try:
        outcome.recorded_file = recorder.finish_recording(outcome.messages)
    except RecordingNotStoredError as exc:
        return exc
    return None


def run_record(session: ReplaySession, outcome: ConversationResult, *, last: bool) -> RunRecord:
    """The ledger entry of one replay; the conversation's model calls count against the last
    replay of the call (``last``)."""
    result = session.result
    status: RunStatus = "interrupted" if result.status == "running" else result.status
    recording = session.file.metadata.recording
    share = result.steps_run / result.steps_total if result.steps_total else 0.0
    calls = outcome.model_calls if last else 0
    tokens = outcome.usage.total_tokens if last else 0
    seconds = result.seconds or session.elapsed()
    saved_seconds = None
    if recording.duration_seconds is not None:
        saved_seconds = recording.duration_seconds * share - seconds
    return RunRecord(
        trajectory=session.name,
        status=status,
        started_at=datetime.now(UTC) - timedelta(seconds=session.elapsed()),
        seconds=seconds,
        steps_total=result.steps_total,
        steps_run=result.steps_run,
        start_step=result.start_step,
        stopped_at_step=result.stopped_at_step,
        reason=result.reason,
        reason_code=result.reason_code,
        rejoins=result.rejoins,
        rejoin_decisions=list(result.rejoin_decisions),
        model_calls=calls,
        usage=outcome.usage if last else Usage(),
        saved_model_calls=round(recording.model_calls * share) - calls,
        saved_tokens=round(recording.usage.total_tokens * share) - tokens,
        saved_seconds=saved_seconds,
        model=recording.model,
        profile=result.profile,
        loosened=[loosening.short for loosening in result.loosened],
        steps_digest=steps_digest(session.file.trajectory),
        step_waits=step_waits(result),
        step_deciders=step_deciders(result),
    )


def step_waits(result: ReplayResult) -> dict[int, float]:
    """The waits a replay's ledger entry keeps (:attr:`RunRecord.step_waits`): each step
    that passed its check and acted, by index, its :attr:`StepRecord.waited_seconds
    <askcache.replay.result.StepRecord.waited_seconds>` rounded to milliseconds; none for a
    step the replay handed back at (its check failed or its effect did not appear, even if
    it passed after a re-join), nor from the first trajectory variant taken on (the indexes
    then name the variant's steps). See :mod:`askcache.storage.ledger.waits`."""
    handed_back = {*result.handback_steps, result.stopped_at_step}
    variant = min(result.variants_used, default=None)
    waits: dict[int, float] = {}
    for step in result.steps:
        index = step.step_index
        if not (step.validated and step.matched) or index in handed_back:
            continue
        if variant is not None and index >= variant:
            continue
        waits[index] = max(waits.get(index, 0.0), round(step.waited_seconds, 3))
    return dict(sorted(waits.items()))


def step_deciders(result: ReplayResult) -> dict[int, str]:
    """What decided each step recorded with its element (:attr:`RunRecord.step_deciders`):
    the last check of each step index (a step checked again after a re-join says what
    decided then)."""
    return {
        step.step_index: step.decided_by for step in result.steps if step.decided_by is not None
    }


def record_runs(
    writer: RunWriter,
    sessions: Sequence[ReplaySession],
    outcome: ConversationResult,
    settings: CacheExecutionSettings,
    *,
    read_only: bool = False,
    thumbnails: bool = False,
) -> list[str]:
    """Append an entry per replay (and, once per file, the counts an old file kept inside
    itself); with ``thumbnails`` (``CachingSettings.ledger_thumbnails``), keep the failing
    region of a replay that handed back beside its entry
    (:func:`~askcache.agent.failure_regions.keep_failing_region`); invalidate a file that
    keeps failing at the same step (never when ``read_only``: heal mode ``off``). Returns
    the entry names written; an entry the storage does not take waits in the outbox
    (``writer.kept``). Nothing here raises: the run itself succeeded."""
    before = len(writer.entries)  # a heal's entry, written first, is not a replay's
    for position, session in enumerate(sessions):
        record = run_record(session, outcome, last=position == len(sessions) - 1)
        session.observer.recorded(record)
        try:
            _import_legacy(writer, session)
        except (AskCacheError, OSError) as exc:  # counted again on the next run
            logger.warning("could not import the counts of %s: %s", session.name, exc)
        try:
            entry_id = writer.append(record)
        except (AskCacheError, OSError) as exc:
            logger.warning("could not write the run ledger: %s", exc)
            continue
        if thumbnails and record.status == "handed_back":
            keep_failing_region(writer, session, record, entry_id)
        if record.status == "handed_back" and not read_only:
            try:
                _maybe_invalidate(writer, session.name, settings)
            except (AskCacheError, OSError) as exc:  # decided again at the next hand-back
                logger.warning("could not check whether %s keeps failing: %s", session.name, exc)
    return writer.entries[before:]


def _import_legacy(writer: RunWriter, session: ReplaySession) -> None:
    legacy = session.file.metadata.legacy_stats
    if legacy is None or legacy.execution_attempts == 0:
        return
    summary = writer.ledger.summary(session.name)
    if summary is not None and summary.imported:
        return
    writer.append(
        RunRecord(
            trajectory=session.name,
            event="imported",
            status="imported",
            started_at=legacy.last_executed_at or datetime.now(UTC),
            attempts=legacy.execution_attempts,
            successes=legacy.successes,
            reason=legacy.failures[-1].reason if legacy.failures else None,
            stopped_at_step=legacy.failures[-1].step_index if legacy.failures else None,
        )
    )


def _maybe_invalidate(writer: RunWriter, name: str, settings: CacheExecutionSettings) -> None:
    limit = settings.invalidate_after
    if limit is None:
        return
    count, step = writer.ledger.consecutive_failures(name)
    storage = writer.storage
    if count < limit:
        return
    cache_file = load_cache_file(storage, name)
    if not cache_file.metadata.is_valid:
        return
    reason = f"the last {count} replays handed back at step {step}"
    cache_file.invalidate(reason)
    save_indexed(storage, name, cache_file)
    writer.append(RunRecord(trajectory=name, event="invalidated", status="refused", reason=reason))
    logger.warning("%s marked invalid: %s", name, reason)


def heal_after(
    writer: RunWriter,
    *,
    name: str,
    base: bytes,
    session: ReplaySession,
    outcome: ConversationResult,
    settings: CachingSettings,
    capture: Callable[[], Image.Image] | None,
) -> HealOutcome | None:
    """Heal ``name`` after this run when allowed and verified (:mod:`askcache.heal`) and
    put a ``healed`` or ``proposed`` entry in the ledger (who, when, which steps, the model
    calls spent). A heal the storage does not take waits in the outbox with its entry
    (``writer.kept``) and ``None`` is returned; any other failure is logged, never raised."""
    try:
        heal = prepare_heal(
            storage=writer.storage,
            name=name,
            base=base,
            session=session,
            outcome=outcome,
            mode=settings.heal_mode,
            keep=settings.keep_versions,
            capture=capture,
            redact_typed_text=settings.writing_settings.redact_typed_text,
        )
        if heal is None:
            return None
        record = RunRecord(
            trajectory=name,
            event="healed" if heal.mode == "auto" else "proposed",
            status="healed" if heal.mode == "auto" else "proposed",
            steps_total=session.result.steps_total,
            stopped_at_step=session.result.stopped_at_step,
            reason=session.result.reason,
            reason_code=session.result.reason_code,
            model_calls=outcome.model_calls,
            usage=outcome.usage,
            healed_steps=heal.healed_steps,
            verified_by=heal.verified_by,
            model=session.file.metadata.recording.model,
            profile=heal.profile,
        )
        return writer.heal(heal, record)
    except (AskCacheError, OSError) as exc:
        logger.warning("could not heal %s: %s", name, exc)
        return None
