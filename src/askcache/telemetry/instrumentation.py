"""Turning askcache's OpenTelemetry on: :func:`instrument` and :func:`uninstrument`.

As OpenTelemetry's instrumentation libraries do, askcache makes its spans and metrics with
the OpenTelemetry API, on the tracer and meter providers it is given or, by default, on the
global ones: the application (or ``opentelemetry-instrument``) installs the SDK and its
exporters, and without an SDK the API does nothing. Nothing is made until
:func:`instrument` is called: it registers an
:class:`~askcache.replay.observers.Instrumentation` that every later run tells
(:mod:`askcache.replay.observers`).
"""

from __future__ import annotations

import threading
from importlib.metadata import PackageNotFoundError, version

from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from askcache.replay.observers import (
    HandedBack,
    ModelCall,
    ModelRequest,
    ReplayedStep,
    RunObserver,
    RunStart,
    register,
    unregister,
)
from askcache.storage.ledger import RunRecord
from askcache.telemetry.otel_metrics import ReplayMetrics
from askcache.telemetry.otel_names import METER_NAME
from askcache.telemetry.otel_spans import RunSpans

__all__ = ["Telemetry", "instrument", "instrumented", "uninstrument"]


def _version() -> str:
    try:
        return version("askcache")
    except PackageNotFoundError:  # run from a source tree
        return "0"


class _RunTelemetry:
    """One run's spans and the shared metrics."""

    def __init__(self, spans: RunSpans, metrics: ReplayMetrics) -> None:
        self.spans = spans
        self.metrics = metrics

    def step(self, step: ReplayedStep) -> None:
        self.spans.step(step)
        self.metrics.step(step)

    def handed_back(self, event: HandedBack) -> None:
        self.spans.handed_back(event)
        self.metrics.handed_back(event)

    def calling(self, request: ModelRequest) -> None:
        self.spans.calling(request)

    def model_call(self, call: ModelCall) -> None:
        self.spans.model_call(call)
        self.metrics.model_call(call)

    def recorded(self, record: RunRecord) -> None:
        self.spans.recorded(record)
        self.metrics.recorded(record)

    def ended(self, status: str, error: BaseException | None) -> None:
        self.spans.ended(status, error)


class Telemetry:
    """askcache's spans and metrics on a tracer and a meter (see the module docstring)."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        release = _version()
        self.tracer = trace.get_tracer(METER_NAME, release, tracer_provider=tracer_provider)
        self.meter = metrics.get_meter(METER_NAME, release, meter_provider=meter_provider)
        self.metrics = ReplayMetrics(self.meter)

    def run_started(self, run: RunStart) -> RunObserver:
        return _RunTelemetry(RunSpans(self.tracer, run), self.metrics)


_lock = threading.Lock()
_active: list[Telemetry] = []


def instrument(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> Telemetry:
    """Trace and measure every run from now on (``Agent.act`` and the user's own loop), on
    these providers; ``None``: OpenTelemetry's global ones (set by the application, or by
    ``opentelemetry-instrument``). Calling it again replaces the earlier providers."""
    telemetry = Telemetry(tracer_provider, meter_provider)
    with _lock:
        for old in _active:
            unregister(old)
        _active[:] = [telemetry]
        register(telemetry)
    return telemetry


def uninstrument() -> None:
    """Stop tracing and measuring runs (runs under way finish their spans)."""
    with _lock:
        for old in _active:
            unregister(old)
        _active.clear()


def instrumented() -> bool:
    """True between :func:`instrument` and :func:`uninstrument`."""
    with _lock:
        return bool(_active)
