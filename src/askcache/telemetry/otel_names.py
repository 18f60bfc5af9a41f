"""The names askcache's telemetry uses: span names, attribute keys and metric names.

Where OpenTelemetry's semantic conventions name a thing, their name is used (``gen_ai.*``
for the model's calls, ``error.type``); askcache's own are under ``askcache.``. Every
string value goes through :func:`~askcache.foundation.redaction.redact` (:func:`text`): an
attribute never holds a registered secret. Reason texts and step inputs are never exported,
only codes and numbers.
"""

from __future__ import annotations

from askcache.foundation.redaction import redact

__all__ = [
    "ACT_SPAN",
    "AFTER_HANDBACK",
    "ANCHOR",
    "CHECK_DECIDED_BY",
    "CHECK_DETAIL_DISTANCE",
    "CHECK_DETAIL_THRESHOLD",
    "CHECK_DISTANCE",
    "CHECK_MATCHED",
    "CHECK_THRESHOLD",
    "CHECK_VALIDATED",
    "ERROR_TYPE",
    "GEN_AI_AGENT_NAME",
    "GEN_AI_FINISH_REASONS",
    "GEN_AI_INPUT_TOKENS",
    "GEN_AI_MAX_TOKENS",
    "GEN_AI_OPERATION",
    "GEN_AI_OUTPUT_TOKENS",
    "GEN_AI_PROVIDER",
    "GEN_AI_REQUEST_MODEL",
    "GEN_AI_TOKEN_TYPE",
    "GEN_AI_USAGE_CACHE_CREATION",
    "GEN_AI_USAGE_CACHE_READ",
    "HANDBACK_EVENT",
    "HANDBACK_REASON_CODE",
    "LOOP_SPAN",
    "METER_NAME",
    "PROFILE",
    "REPLAY_STATUS",
    "RUN_KIND",
    "RUN_STATUS",
    "STEP_ACTION",
    "STEP_EFFECT",
    "STEP_EFFECT_WAITED",
    "STEP_INDEX",
    "STEP_SECONDS",
    "STEP_SPAN",
    "STEP_WAITED",
    "STRATEGY",
    "TRAJECTORY",
    "text",
]

METER_NAME = "askcache"
"""The instrumentation scope of the tracer and the meter."""

ACT_SPAN = "invoke_agent askcache"
"""One :meth:`Agent.act <askcache.agent.act.Agent.act>` call (the GenAI conventions' agent
invocation span: ``invoke_agent {gen_ai.agent.name}``)."""
LOOP_SPAN = "askcache.loop"
"""One run of the user's own loop (:class:`~askcache.loop.LoopReplay`)."""
STEP_SPAN = "askcache.replay.step"
"""One replayed step (a child of its run's span)."""
HANDBACK_EVENT = "askcache.handback"
"""The span event on the run's span when the replay hands back."""

RUN_KIND = "askcache.run.kind"
STRATEGY = "askcache.strategy"
TRAJECTORY = "askcache.trajectory"
PROFILE = "askcache.screen.profile"
RUN_STATUS = "askcache.run.status"
REPLAY_STATUS = "askcache.replay.status"
HANDBACK_REASON_CODE = "askcache.handback.reason_code"
AFTER_HANDBACK = "askcache.after_handback"

STEP_INDEX = "askcache.step.index"
STEP_ACTION = "askcache.step.action"
STEP_WAITED = "askcache.step.waited_seconds"
STEP_EFFECT_WAITED = "askcache.step.effect_waited_seconds"
STEP_SECONDS = "askcache.step.seconds"
STEP_EFFECT = "askcache.step.effect"
ANCHOR = "askcache.step.anchor"
CHECK_VALIDATED = "askcache.check.validated"
CHECK_MATCHED = "askcache.check.matched"
CHECK_DISTANCE = "askcache.check.distance"
CHECK_THRESHOLD = "askcache.check.threshold"
CHECK_DETAIL_DISTANCE = "askcache.check.detail_distance"
CHECK_DETAIL_THRESHOLD = "askcache.check.detail_threshold"
CHECK_DECIDED_BY = "askcache.check.decided_by"

ERROR_TYPE = "error.type"
GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_PROVIDER = "gen_ai.provider.name"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_TOKEN_TYPE = "gen_ai.token.type"


def text(value: str | None) -> str:
    """``value`` as an attribute: registered secrets masked; ``""`` for ``None``."""
    return "" if value is None else redact(value)
