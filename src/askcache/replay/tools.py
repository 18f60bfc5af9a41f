"""Tools that let the model find, replay and resume cached trajectories.

``list_cached_trajectories`` lists the valid cache files (goal, steps, parameters, past
results from the run ledger); ``execute_cached_trajectory`` starts a replay, after which the
conversation hands the turn to the :class:`~askcache.replay.CacheExecutor`;
``resume_cached_trajectory`` lets the model hand the turn back to a replay that stopped, once
it has put the screen back. Their own calls are never recorded.
"""

from __future__ import annotations

from typing import Any

from askcache.cachefile.format import CacheFile
from askcache.foundation.errors import AskCacheError
from askcache.foundation.messages import MessageParam, ToolUseBlockParam
from askcache.foundation.parameters import placeholders_in, secret_placeholders_in
from askcache.foundation.settings import CacheExecutionSettings
from askcache.replay.executor import CacheExecutor
from askcache.replay.rejoin import RESUME_TOOL_NAME
from askcache.storage.cache_storage import CacheStorage, load_cache_file
from askcache.storage.index import CacheFileIndex, CacheFileRecord
from askcache.storage.ledger import RunLedger, TrajectorySummary, open_ledger
from askcache.tools.tool import Tool, ToolOutput

__all__ = [
    "ExecuteCachedTrajectory",
    "ListCachedTrajectories",
    "ResumeCachedTrajectory",
    "describe_cache_file",
    "describe_record",
]


def describe_cache_file(name: str, cache_file: CacheFile, ledger: RunLedger | None = None) -> str:
    """One paragraph about a cache file, as the model sees it in a listing (with its past
    replays when a ledger is given)."""
    record = CacheFileRecord.describing(name, cache_file)
    summary = None if ledger is None else ledger.summary(name)
    return describe_record(record, summary, replays=ledger is not None)


def describe_record(
    record: CacheFileRecord, summary: TrajectorySummary | None, *, replays: bool = True
) -> str:
    """:func:`describe_cache_file` from the file's index record and its ledger summary
    (``replays``: say how its replays went, none when ``summary`` is ``None``)."""
    params = ", ".join(record.placeholders) or "none"
    line = f"  steps: {record.steps}; parameters: {params}"
    if replays:
        done = 0 if summary is None else summary.completed
        stopped = 0 if summary is None else summary.handed_back
        line += f"; replays: {done} completed, {stopped} stopped early"
    lines = [f"- {record.name}: {record.goal!r}", line]
    if not record.valid:
        lines.append(f"  INVALID: {record.invalidation_reason or 'no reason given'}")
    return "\n".join(lines)


class ListCachedTrajectories(Tool):
    """Lists the cached trajectories the model may replay."""

    name = "list_cached_trajectories"

    def __init__(self, storage: CacheStorage, ledger: RunLedger | None = None) -> None:
        self.storage = storage
        self.ledger = ledger
        """The run ledger whose summaries the listing shows (default: the storage's)."""

    def to_params(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                "List the cached trajectories: recorded solutions of earlier tasks that can be "
                "replayed without thinking, with their goals, step counts and parameters."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "include_invalid": {
                        "type": "boolean",
                        "description": "Also list trajectories marked invalid.",
                    }
                },
            },
        }

    def run(self, block: ToolUseBlockParam) -> ToolOutput:
        include_invalid = bool(block.input.get("include_invalid", False))
        entries, unreadable = [], []
        ledger = self.ledger or open_ledger(self.storage)
        summaries = {summary.trajectory: summary for summary in ledger.summaries()}
        for record in CacheFileIndex(self.storage).records():
            if not record.readable:
                unreadable.append(f"- {record.name}: unreadable ({record.error})")
            elif record.valid or include_invalid:
                entries.append(describe_record(record, summaries.get(record.name)))
        if not entries and not unreadable:
            return ToolOutput.text("No cached trajectories are available.")
        return ToolOutput.text("\n".join(["Cached trajectories:", *entries, *unreadable]))


class ExecuteCachedTrajectory(Tool):
    """Starts replaying a cached trajectory; the executor takes the next turns.

    The model may ask for a main threshold (``visual_validation_threshold``): it is passed as
    ``CacheExecutionSettings.model_visual_validation_threshold`` and resolved by the replay's
    check policy (:class:`~askcache.replay.check_policy.CheckPolicy`), which refuses one that
    would accept any screen and says one above the file's as a loosening by the model (in the
    tool's answer, the replay's result and the run ledger)."""

    name = "execute_cached_trajectory"

    def __init__(
        self,
        storage: CacheStorage,
        executor: CacheExecutor,
        execution_settings: CacheExecutionSettings | None = None,
    ) -> None:
        self.storage = storage
        self.executor = executor
        self.execution_settings = execution_settings or CacheExecutionSettings()

    def to_params(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                "Replay a cached trajectory step by step without thinking. Before each click or "
                "keystroke the screen is compared with the recording; if it differs, the replay "
                "stops and you continue from there. Use it when a listed trajectory's goal "
                "matches the task."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "trajectory_file": {
                        "type": "string",
                        "description": "Name from list_cached_trajectories.",
                    },
                    "parameter_values": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "description": "A value for each of the trajectory's parameters.",
                    },
                    "start_from_step_index": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Resume from this step (default 0).",
                    },
                    "visual_validation_threshold": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Override the stored validation threshold (bits).",
                    },
                },
                "required": ["trajectory_file"],
            },
        }

    def run(self, block: ToolUseBlockParam) -> ToolOutput:
        arguments = block.input
        name = arguments.get("trajectory_file")
        if not isinstance(name, str) or not name:
            return ToolOutput.text("trajectory_file must be a file name.", is_error=True)
        values = arguments.get("parameter_values") or {}
        start = arguments.get("start_from_step_index", 0)
        threshold = arguments.get("visual_validation_threshold")
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            return ToolOutput.text("parameter_values must map names to strings.", is_error=True)
        if not isinstance(start, int):
            return ToolOutput.text("start_from_step_index must be an integer.", is_error=True)
        try:
            settings = self.execution_settings
            if threshold is not None:  # validated like any setting, then by the check policy
                settings = CacheExecutionSettings(
                    **{**settings.model_dump(), "model_visual_validation_threshold": threshold}
                )
            cache_file = load_cache_file(self.storage, name)
            texts = [cache_file.metadata.goal, *(s.input for s in cache_file.trajectory)]
            needed = set(cache_file.cache_parameters) | placeholders_in(texts)
            given = settings.parameter_values  # the caller's values; secrets come only from here
            values = {
                **{k: v for k, v in given.items() if k in needed},
                **{k: v for k, v in values.items() if k not in secret_placeholders_in(texts)},
            }
            result = self.executor.activate_cache_execution(
                cache_file,
                name,
                parameter_values=values,
                start_from_step_index=start,
                execution_settings=settings,
                return_to_agent_on_success=True,
            )
        except AskCacheError as exc:
            return ToolOutput.text(str(exc), is_error=True)
        loosened = "".join(f" Checks loosened: {item.describe()}." for item in result.loosened)
        return ToolOutput.text(
            f"Replaying {name} from step {start} of {result.steps_total}.{loosened}",
            handoff_to=self.executor.name,
        )


class ResumeCachedTrajectory(Tool):
    """Hands the turn back to a replay that stopped, once the model has put the screen back."""

    name = RESUME_TOOL_NAME

    def __init__(self, executor: CacheExecutor) -> None:
        self.executor = executor
        self._messages: list[MessageParam] = []

    def watch(self, messages: list[MessageParam]) -> None:
        """The conversation's history, read when the model calls the tool."""
        self._messages = messages

    def to_params(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                "After a cached replay stopped and you have put the screen back into the state "
                "it expects (closed an unexpected dialog, for example), call this to let the "
                "replay continue. It continues only if the screen passes both the check that "
                "stopped it and the next step's check; it never repeats a step."
            ),
            "input_schema": {"type": "object", "properties": {}},
        }

    def run(self, block: ToolUseBlockParam) -> ToolOutput:
        try:
            text = self.executor.resume(self._messages)
        except AskCacheError as exc:
            return ToolOutput.text(str(exc), is_error=True)
        return ToolOutput.text(text, handoff_to=self.executor.name)
