"""A replay that handed back in ``replay`` mode: the test's failure message and its report page.

The page is ``askcache report``'s (:func:`~askcache.cli.html_report.write_trajectory_report`:
the file's facts, its recorded end state, its latest runs from the run ledger, each step's
recorded effect), with this replay's checks on each step it reached, the screen it checked
each on (the region with the action point, the whole screen with the region boxed), and
the step it stopped at in red. Registered secrets are redacted from the page and the message.
"""

from __future__ import annotations

import logging
from pathlib import Path

from askcache.agent.act import ActResult
from askcache.agent.prepare import open_run_ledger
from askcache.cli.commands.report import build_report
from askcache.cli.html_report import write_trajectory_report
from askcache.foundation.errors import AskCacheError
from askcache.foundation.reasons import describe_code
from askcache.foundation.redaction import redact
from askcache.foundation.settings import CachingSettings
from askcache.replay.result import ReplayResult
from askcache.storage.cache_storage import load_cache_file
from askcache.storage.remote import storage_for

__all__ = ["failure_message", "write_failure_page"]

logger = logging.getLogger(__name__)


def write_failure_page(
    path: Path, result: ActResult, settings: CachingSettings, *, nodeid: str
) -> Path | None:
    """Write the report page of ``result``'s last replay to ``path`` (its folders made);
    ``None`` when it cannot be written (the reason is logged: the test fails either way)."""
    replay = result.replay
    name = settings.writing_settings.filename
    if replay is None or name is None:
        return None
    try:
        storage = storage_for(settings.cache_dir)
        cache_file = load_cache_file(storage, name)
        with open_run_ledger(storage, settings) as ledger:
            records = ledger.records(name, limit=20)
            summary = ledger.summary(name)
        report = build_report(
            name,
            cache_file,
            records,
            views=result.views,
            checked_on=f"the replay of {nodeid}",
            summary=summary,
        )
        steps = {step.step_index: step for step in replay.steps}
        for row in report.steps:
            step = steps.get(row.step_index)
            if step is not None:
                row.check += f"; this replay: {step.check_summary()}"
                row.matched = step.matched
            if row.step_index == replay.stopped_at_step:
                row.matched = False
                row.current_note = f"STOPPED HERE: {replay.reason or ''}"
        report.verdict = _stop_line(replay)
        report.verdict_ok = False
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_trajectory_report(path, report)
    except (AskCacheError, OSError) as exc:
        logger.warning("the report page of %s cannot be written: %s", name, exc)
        return None


def _stop_line(replay: ReplayResult) -> str:
    code = replay.reason_code
    kind = f"{code}: {describe_code(code)}" if code is not None else "no reason code"
    return f"handed back at step {replay.stopped_at_step} ({kind})"


def failure_message(result: ActResult, settings: CachingSettings, *, page: Path | None) -> str:
    """Why the test fails: the trajectory, the step, the reason and its code, the report
    page, and how to let the model finish instead. Secrets redacted."""
    replay = result.replay
    assert replay is not None
    name = settings.writing_settings.filename
    lines = [
        f"askcache: the replay {_stop_line(replay)}",
        f"  trajectory: {name} in {settings.cache_dir}",
        f"  reason: {replay.reason}",
        f"  report: {page if page is not None else '(not written: see the log)'}",
        "  the model was not called (--askcache-mode=replay). Let it finish with "
        "--askcache-allow-model or @pytest.mark.askcache(allow_model=True), or record the "
        "test again with --askcache-mode=record (or auto).",
    ]
    return redact("\n".join(lines))
