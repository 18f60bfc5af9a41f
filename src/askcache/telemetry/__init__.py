"""OpenTelemetry for askcache (the ``otel`` extra: ``pip install 'askcache[otel]'``).

Call :func:`instrument` once, after the application set up its OpenTelemetry SDK (or under
``opentelemetry-instrument``): every later run makes a span (an ``Agent.act`` call, or a run of
the user's own loop), a child span per replayed step and per model call, and the metrics of
:mod:`askcache.telemetry.otel_metrics`. docs/fleet.md, "OpenTelemetry", shows the names.

Without this extra nothing imports OpenTelemetry: importing this package then raises an
``ImportError`` that says what to install.
"""

from __future__ import annotations

try:
    import opentelemetry.metrics
    import opentelemetry.trace  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError(
        "askcache.telemetry needs OpenTelemetry's API and SDK: pip install 'askcache[otel]'"
    ) from exc

from askcache.telemetry.instrumentation import (
    Telemetry,
    instrument,
    instrumented,
    uninstrument,
)

__all__ = ["Telemetry", "instrument", "instrumented", "uninstrument"]
