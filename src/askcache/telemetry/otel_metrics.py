"""The metrics: replays, hits, hand-backs by reason code, what replays avoided and what the
model spent, step times; per trajectory and screen profile.

=====================================  =========  ==========================================
name                                   kind       what
=====================================  =========  ==========================================
``askcache.replays``                   counter    replays ended, by ``askcache.replay.status``
``askcache.replay.hits``               counter    replays that completed (every step, the end
                                                  state as recorded)
``askcache.handbacks``                 counter    hand-backs, by ``askcache.handback.reason_code``
``askcache.model_calls.avoided``       counter    the recording's model calls for the steps
                                                  replayed
``askcache.tokens.avoided``            counter    the recording's tokens for the steps replayed
``askcache.cost.avoided``              counter    those tokens in US dollars (priced as input,
                                                  :mod:`askcache.cli.prices`; a model with no
                                                  price adds nothing)
``askcache.model_calls``               counter    model calls made (``askcache.after_handback``)
``askcache.cost.spent``                counter    their dollars (list price)
``askcache.step.duration``             histogram  seconds per replayed step, action included
``askcache.step.wait``                 histogram  seconds a step waited for the screen
``gen_ai.client.token.usage``          histogram  tokens per model call (``gen_ai.token.type``)
``gen_ai.client.operation.duration``   histogram  seconds per model call
=====================================  =========  ==========================================

What a run saved is ``avoided`` less what it spent: counters only go up, so the two are
kept apart (a replay that handed back may spend more than it avoided).
"""

from __future__ import annotations

from opentelemetry.metrics import Meter

from askcache.cli.prices import price_for
from askcache.replay.observers import HandedBack, ModelCall, ReplayedStep
from askcache.storage.ledger import RunRecord
from askcache.telemetry.otel_names import (
    AFTER_HANDBACK,
    ERROR_TYPE,
    GEN_AI_OPERATION,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_TOKEN_TYPE,
    HANDBACK_REASON_CODE,
    PROFILE,
    REPLAY_STATUS,
    STEP_ACTION,
    TRAJECTORY,
    text,
)

__all__ = ["ReplayMetrics"]

_TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)
"""The GenAI conventions' advised buckets for ``gen_ai.client.token.usage``."""
_SECONDS_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48)
"""The GenAI conventions' advised buckets for durations (used for steps too)."""


def _where(trajectory: str, profile: str | None) -> dict[str, str]:
    return {TRAJECTORY: text(trajectory), PROFILE: text(profile)}


class ReplayMetrics:
    """askcache's instruments on ``meter``."""

    def __init__(self, meter: Meter) -> None:
        self.replays = meter.create_counter(
            "askcache.replays", unit="{replay}", description="Replays ended, by status"
        )
        self.hits = meter.create_counter(
            "askcache.replay.hits", unit="{replay}", description="Replays that completed"
        )
        self.handbacks = meter.create_counter(
            "askcache.handbacks", unit="{handback}", description="Hand-backs, by reason code"
        )
        self.calls_avoided = meter.create_counter(
            "askcache.model_calls.avoided",
            unit="{call}",
            description="The recording's model calls for the steps replayed",
        )
        self.tokens_avoided = meter.create_counter(
            "askcache.tokens.avoided",
            unit="{token}",
            description="The recording's tokens for the steps replayed",
        )
        self.cost_avoided = meter.create_counter(
            "askcache.cost.avoided",
            unit="USD",
            description="The avoided tokens at list price (as input tokens)",
        )
        self.calls = meter.create_counter(
            "askcache.model_calls", unit="{call}", description="Model calls made"
        )
        self.cost_spent = meter.create_counter(
            "askcache.cost.spent", unit="USD", description="The model calls made, at list price"
        )
        self.step_duration = meter.create_histogram(
            "askcache.step.duration",
            unit="s",
            description="Seconds per replayed step, action included",
            explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
        )
        self.step_wait = meter.create_histogram(
            "askcache.step.wait",
            unit="s",
            description="Seconds a replayed step waited for the screen",
            explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
        )
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens per model call",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.operation_duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Seconds per model call",
            explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
        )

    def step(self, step: ReplayedStep) -> None:
        where = {**_where(step.trajectory, step.profile), STEP_ACTION: text(step.record.action)}
        if step.record.seconds is not None:
            self.step_duration.record(max(step.record.seconds, 0.0), where)
        self.step_wait.record(max(step.record.waited_seconds, 0.0), where)

    def handed_back(self, event: HandedBack) -> None:
        self.handbacks.add(
            1, {**_where(event.trajectory, event.profile), HANDBACK_REASON_CODE: event.code}
        )

    def model_call(self, call: ModelCall) -> None:
        where: dict[str, str | bool] = {
            GEN_AI_OPERATION: "chat",
            GEN_AI_PROVIDER: "anthropic",
            GEN_AI_REQUEST_MODEL: text(call.model),
        }
        if call.error is not None:
            where[ERROR_TYPE] = call.error
        self.operation_duration.record(max(call.ended_ns - call.started_ns, 0) / 1e9, where)
        made: dict[str, str | bool] = {
            GEN_AI_REQUEST_MODEL: text(call.model),
            AFTER_HANDBACK: call.after_handback,
        }
        self.calls.add(1, made)
        usage = call.usage
        if usage is None:
            return
        inputs = usage.input_tokens + usage.cache_read_input_tokens
        inputs += usage.cache_creation_input_tokens
        self.token_usage.record(inputs, {**where, GEN_AI_TOKEN_TYPE: "input"})
        self.token_usage.record(usage.output_tokens, {**where, GEN_AI_TOKEN_TYPE: "output"})
        price = price_for(call.model)
        if price is not None:
            self.cost_spent.add(price.cost(usage), {GEN_AI_REQUEST_MODEL: text(call.model)})

    def recorded(self, record: RunRecord) -> None:
        if record.event != "replay":
            return
        where = _where(record.trajectory, record.profile)
        self.replays.add(1, {**where, REPLAY_STATUS: record.status})
        if record.status == "completed":
            self.hits.add(1, where)
        calls = max(record.saved_model_calls + record.model_calls, 0)
        tokens = max(record.saved_tokens + record.usage.total_tokens, 0)
        self.calls_avoided.add(calls, where)
        self.tokens_avoided.add(tokens, where)
        price = price_for(record.model)
        if price is not None:
            self.cost_avoided.add(price.saved(tokens), where)
