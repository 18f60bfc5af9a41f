"""The spans of one run: the run's own (an ``Agent.act`` call, or a run of the user's
loop), a child per replayed step, a child per model call (``chat {model}``, the GenAI
conventions' inference span), and an event on the run's span per hand-back.

An ``Agent.act`` call's span is the current context while the call runs (its thread), so
what the call does that is instrumented elsewhere (the HTTP client) nests under it too. A
loop's span is not: the user's code runs between askcache's calls; its steps name it as
their parent.
"""

from __future__ import annotations

from contextvars import Token

from opentelemetry import context, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from askcache.replay.observers import (
    HandedBack,
    ModelCall,
    ModelRequest,
    ReplayedStep,
    RunStart,
)
from askcache.storage.ledger import RunRecord
from askcache.telemetry.otel_names import (
    ACT_SPAN,
    AFTER_HANDBACK,
    ANCHOR,
    CHECK_DECIDED_BY,
    CHECK_DETAIL_DISTANCE,
    CHECK_DETAIL_THRESHOLD,
    CHECK_DISTANCE,
    CHECK_MATCHED,
    CHECK_THRESHOLD,
    CHECK_VALIDATED,
    ERROR_TYPE,
    GEN_AI_AGENT_NAME,
    GEN_AI_FINISH_REASONS,
    GEN_AI_INPUT_TOKENS,
    GEN_AI_MAX_TOKENS,
    GEN_AI_OPERATION,
    GEN_AI_OUTPUT_TOKENS,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_USAGE_CACHE_CREATION,
    GEN_AI_USAGE_CACHE_READ,
    HANDBACK_EVENT,
    HANDBACK_REASON_CODE,
    LOOP_SPAN,
    PROFILE,
    REPLAY_STATUS,
    RUN_KIND,
    RUN_STATUS,
    STEP_ACTION,
    STEP_EFFECT,
    STEP_EFFECT_WAITED,
    STEP_INDEX,
    STEP_SECONDS,
    STEP_SPAN,
    STEP_WAITED,
    STRATEGY,
    TRAJECTORY,
    text,
)

__all__ = ["RunSpans"]

AttributeValue = str | bool | int | float | list[str]


class RunSpans:
    """The spans of the run ``run`` on ``tracer`` (see the module docstring)."""

    def __init__(self, tracer: Tracer, run: RunStart) -> None:
        attributes: dict[str, AttributeValue] = {
            RUN_KIND: run.kind,
            STRATEGY: run.strategy,
        }
        if run.trajectory is not None:
            attributes[TRAJECTORY] = text(run.trajectory)
        if run.model is not None:
            attributes[GEN_AI_REQUEST_MODEL] = text(run.model)
        if run.kind == "act":
            attributes[GEN_AI_OPERATION] = "invoke_agent"
            attributes[GEN_AI_AGENT_NAME] = "askcache"
            attributes[GEN_AI_PROVIDER] = "anthropic"
        self.span: Span = tracer.start_span(
            ACT_SPAN if run.kind == "act" else LOOP_SPAN,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        self.tracer = tracer
        self.context = trace.set_span_in_context(self.span)
        """The context the run's children are made in."""
        self._token = context.attach(self.context) if run.current else None
        self._model_calls = 0
        self._kind = run.kind
        self._call: tuple[Span, Token[Context]] | None = None
        """The model call under way: its span and the token of its context."""

    def step(self, step: ReplayedStep) -> None:
        record = step.record
        attributes: dict[str, AttributeValue] = {
            TRAJECTORY: text(step.trajectory),
            STEP_INDEX: record.step_index,
            STEP_ACTION: text(record.action),
            CHECK_VALIDATED: record.validated,
            STEP_WAITED: record.waited_seconds,
            STEP_EFFECT_WAITED: record.effect_waited_seconds,
        }
        optional: dict[str, AttributeValue | None] = {
            PROFILE: text(step.profile) if step.profile is not None else None,
            CHECK_MATCHED: record.matched,
            CHECK_DISTANCE: record.distance,
            CHECK_THRESHOLD: record.threshold,
            CHECK_DETAIL_DISTANCE: record.detail_distance,
            CHECK_DETAIL_THRESHOLD: record.detail_threshold,
            CHECK_DECIDED_BY: text(record.decided_by) if record.decided_by else None,
            ANCHOR: text(step.anchor) if step.anchor is not None else None,
            STEP_EFFECT: record.effect,
            STEP_SECONDS: record.seconds,
            HANDBACK_REASON_CODE: step.handback_code,
        }
        attributes.update({key: value for key, value in optional.items() if value is not None})
        span = self.tracer.start_span(
            STEP_SPAN, context=self.context, attributes=attributes, start_time=step.started_ns
        )
        span.end(end_time=step.ended_ns)

    def handed_back(self, event: HandedBack) -> None:
        self.span.add_event(
            HANDBACK_EVENT,
            {STEP_INDEX: event.step, HANDBACK_REASON_CODE: event.code},
        )
        self.span.set_attribute(HANDBACK_REASON_CODE, event.code)

    def calling(self, request: ModelRequest) -> None:
        model = text(request.model)
        attributes: dict[str, AttributeValue] = {
            GEN_AI_OPERATION: "chat",
            GEN_AI_PROVIDER: "anthropic",
            GEN_AI_REQUEST_MODEL: model,
            GEN_AI_MAX_TOKENS: request.max_tokens,
            AFTER_HANDBACK: request.after_handback,
        }
        span = self.tracer.start_span(
            f"chat {model}", context=self.context, kind=SpanKind.CLIENT, attributes=attributes
        )
        self._call = (span, context.attach(trace.set_span_in_context(span, self.context)))

    def model_call(self, call: ModelCall) -> None:
        self._model_calls += 1
        if self._call is None:  # told without its start: a span of its times alone
            self.calling(ModelRequest(call.model, call.max_tokens, call.after_handback))
            assert self._call is not None
        span, token = self._call
        self._call = None
        context.detach(token)
        usage = call.usage
        if usage is not None:
            span.set_attribute(
                GEN_AI_INPUT_TOKENS,
                usage.input_tokens
                + usage.cache_read_input_tokens
                + usage.cache_creation_input_tokens,
            )
            span.set_attribute(GEN_AI_OUTPUT_TOKENS, usage.output_tokens)
            span.set_attribute(GEN_AI_USAGE_CACHE_READ, usage.cache_read_input_tokens)
            span.set_attribute(GEN_AI_USAGE_CACHE_CREATION, usage.cache_creation_input_tokens)
        if call.stop_reason is not None:
            span.set_attribute(GEN_AI_FINISH_REASONS, [text(call.stop_reason)])
        if call.error is not None:
            span.set_attribute(ERROR_TYPE, call.error)
            span.set_status(Status(StatusCode.ERROR))
        span.end()

    def recorded(self, record: RunRecord) -> None:
        if record.event != "replay":
            return
        self.span.set_attribute(TRAJECTORY, text(record.trajectory))
        self.span.set_attribute(REPLAY_STATUS, record.status)
        if record.profile is not None:
            self.span.set_attribute(PROFILE, text(record.profile))
        if record.reason_code is not None:
            self.span.set_attribute(HANDBACK_REASON_CODE, record.reason_code)
        calls = record.saved_model_calls + record.model_calls
        self.span.set_attribute("askcache.model_calls.avoided", max(calls, 0))
        tokens = record.saved_tokens + record.usage.total_tokens
        self.span.set_attribute("askcache.tokens.avoided", max(tokens, 0))

    def ended(self, status: str, error: BaseException | None) -> None:
        self.span.set_attribute(RUN_STATUS, status)
        if self._kind == "act":  # a loop's model calls are the user's own
            self.span.set_attribute("askcache.model_calls", self._model_calls)
        if error is not None:
            self.span.set_attribute(ERROR_TYPE, type(error).__qualname__)
            self.span.set_status(Status(StatusCode.ERROR))
        if self._token is not None:
            context.detach(self._token)
            self._token = None
        self.span.end()
