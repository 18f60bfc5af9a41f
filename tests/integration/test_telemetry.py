"""OpenTelemetry (askcache.telemetry): the spans and metrics of real runs, read with the SDK's
in-memory exporter and metric reader.

A login typing a declared secret is recorded on the simulated app through the Messages API
stand-in and the real anthropic client, then replayed as recorded (every step a child span
of the ``Agent.act`` span, the metrics of a hit) and on a changed screen (a hand-back with its
code on the step's span, the run's span and the hand-back counter; the model's turns after it
as ``chat`` spans in the same trace, the anthropic SDK's own span of each call under
them). The secret is in no attribute, event or data point. Besides: a run of the user's own
loop (its span, its steps under it), and a replay on a moved window (its clicks say they were
anchored to the window).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from askcache import telemetry
from askcache.replay.observers import registered
from askcache.testing import WindowedFormApp
from tests.integration.telemetry_runs import MODEL, RECORDED_CALLS, SECRET, act, record
from tests.integration.test_own_loop import _run as _loop_run
from tests.integration.test_window_anchor import _record as _record_windowed
from tests.integration.test_window_anchor import _run as _run_windowed

pytestmark = pytest.mark.integration


class _Otel:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def points(self) -> dict[str, list[tuple[dict[str, Any], Any]]]:
        """Per metric name: each data point's attributes and value (a sum's value, a
        histogram's count and sum)."""
        data = self.reader.get_metrics_data()
        found: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = (point.count, point.sum)  # type: ignore[attr-defined]
                        found.setdefault(metric.name, []).append((dict(point.attributes), value))
        return found


@pytest.fixture
def otel() -> Iterator[_Otel]:
    watched = _Otel()
    telemetry.instrument(
        tracer_provider=watched.tracer_provider, meter_provider=watched.meter_provider
    )
    yield watched
    telemetry.uninstrument()
    assert registered() == ()


def _total(points: list[tuple[dict[str, Any], Any]], **where: Any) -> Any:
    return sum(
        value
        for attributes, value in points
        if all(attributes.get(k) == v for k, v in where.items())
    )


def _no_secret(otel: _Otel) -> None:
    for span in otel.finished():
        texts = [span.name, repr(dict(span.attributes or {}))]
        texts += [f"{event.name} {dict(event.attributes or {})!r}" for event in span.events]
        assert not [text for text in texts if SECRET in text], span.name
    assert SECRET not in repr(otel.points())


def test_a_replay_is_a_span_with_a_child_per_step_and_counts_as_a_hit(
    tmp_path: Path, otel: _Otel
) -> None:
    record(tmp_path)
    recording = [span for span in otel.finished() if span.name.startswith("chat ")]
    assert len(recording) == RECORDED_CALLS  # the recording's model calls are traced too
    otel.spans.clear()
    otel.reader.get_metrics_data()  # (cumulative: the totals below include the recording)

    result, _app = act(tmp_path, "execute")
    assert result.replay is not None
    assert result.replay.status == "completed"
    assert result.model_calls == 0
    spans = otel.finished()
    runs = [span for span in spans if span.name == "invoke_agent askcache"]
    assert len(runs) == 1
    run = runs[0]
    attributes = dict(run.attributes or {})
    assert attributes["askcache.run.kind"] == "act"
    assert attributes["askcache.strategy"] == "execute"
    assert attributes["askcache.trajectory"] == "login.json"
    assert attributes["askcache.replay.status"] == "completed"
    assert attributes["askcache.run.status"] == "done"
    assert attributes["askcache.model_calls.avoided"] == RECORDED_CALLS
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert "askcache.handback.reason_code" not in attributes
    steps = [span for span in spans if span.name == "askcache.replay.step"]
    assert [span.attributes["askcache.step.index"] for span in steps] == [0, 1, 2, 3]  # type: ignore[index]
    assert [span.attributes["askcache.step.action"] for span in steps] == [  # type: ignore[index]
        step.action for step in result.replay.steps
    ]
    assert run.context is not None
    for span in steps:
        assert span.parent is not None
        assert span.parent.span_id == run.context.span_id
        assert span.context is not None
        assert span.context.trace_id == run.context.trace_id
        assert span.start_time is not None
        assert span.end_time is not None
        assert run.start_time is not None
        assert run.end_time is not None
        assert run.start_time <= span.start_time <= span.end_time <= run.end_time
    checked = [
        dict(span.attributes or {}) for span in steps if span.attributes["askcache.check.validated"]
    ]  # type: ignore[index]
    assert len(checked) == result.replay.validated == 3
    for step, check in zip(
        [step for step in result.replay.steps if step.validated], checked, strict=True
    ):
        assert check["askcache.check.matched"] is True
        assert check["askcache.check.distance"] == step.distance
        assert check["askcache.check.threshold"] == step.threshold
        assert check["askcache.step.waited_seconds"] == step.waited_seconds
    assert not [span for span in spans if span.name.startswith("chat ")]

    points = otel.points()
    assert _total(points["askcache.replays"], **{"askcache.replay.status": "completed"}) == 1
    hit = points["askcache.replay.hits"]
    assert result.replay.profile is not None
    where = {"askcache.trajectory": "login.json", "askcache.screen.profile": result.replay.profile}
    assert hit == [(where, 1)]
    assert _total(points["askcache.model_calls.avoided"]) == RECORDED_CALLS
    assert _total(points["askcache.tokens.avoided"]) > 0
    assert _total(points["askcache.cost.avoided"]) > 0
    assert _total(points["askcache.model_calls"]) == RECORDED_CALLS  # the recording's
    durations = points["askcache.step.duration"]
    assert sum(count for _, (count, _sum) in durations) == 4 + 0  # the replay's four steps
    _no_secret(otel)


def test_a_hand_back_has_its_code_and_the_model_turns_after_it_share_the_trace(
    tmp_path: Path, otel: _Otel
) -> None:
    record(tmp_path)
    otel.spans.clear()
    # the anthropic SDK traces its own API calls: on the same provider, its spans nest
    sdk_traces = {"tracer_provider": otel.tracer_provider}
    result, app = act(tmp_path, "execute", layout="banner", open_telemetry=sdk_traces)
    replay = result.replay
    assert replay is not None
    assert replay.status == "handed_back"
    assert replay.reason_code is not None
    assert app.saved[-1]["name"] == SECRET  # the model typed the secret after the hand-back
    assert result.model_calls > 0
    spans = otel.finished()
    (run,) = [span for span in spans if span.name == "invoke_agent askcache"]
    assert run.context is not None
    attributes = dict(run.attributes or {})
    assert attributes["askcache.handback.reason_code"] == replay.reason_code
    assert attributes["askcache.replay.status"] == "handed_back"
    (event,) = [event for event in run.events if event.name == "askcache.handback"]
    assert dict(event.attributes or {}) == {
        "askcache.step.index": replay.stopped_at_step,
        "askcache.handback.reason_code": replay.reason_code,
    }
    steps = [span for span in spans if span.name == "askcache.replay.step"]
    refused = [span for span in steps if "askcache.handback.reason_code" in (span.attributes or {})]
    assert len(refused) == 1
    assert refused[0].attributes["askcache.step.index"] == replay.stopped_at_step  # type: ignore[index]
    assert refused[0].attributes["askcache.handback.reason_code"] == replay.reason_code  # type: ignore[index]
    assert refused[0].attributes["askcache.check.matched"] is False  # type: ignore[index]

    calls = [span for span in spans if span.name == f"chat {MODEL}"]
    assert len(calls) == result.model_calls
    for call in calls:
        assert call.context is not None
        assert call.context.trace_id == run.context.trace_id
        assert call.parent is not None
        assert call.parent.span_id == run.context.span_id
        call_attributes = dict(call.attributes or {})
        assert call_attributes["gen_ai.operation.name"] == "chat"
        assert call_attributes["gen_ai.request.model"] == MODEL
        assert call_attributes["askcache.after_handback"] is True
        assert call_attributes["gen_ai.usage.input_tokens"] > 0  # type: ignore[operator]
        assert call_attributes["gen_ai.usage.output_tokens"] > 0  # type: ignore[operator]
    sdk_calls = [span for span in spans if span.name == "anthropic.messages.create"]
    assert len(sdk_calls) == len(calls)
    assert {span.parent.span_id for span in sdk_calls if span.parent} == {
        call.context.span_id for call in calls if call.context
    }
    assert refused[0].end_time is not None
    assert calls[0].start_time is not None
    assert refused[0].end_time <= calls[0].start_time  # the model's turns come after

    points = otel.points()
    assert (
        _total(
            points["askcache.handbacks"], **{"askcache.handback.reason_code": replay.reason_code}
        )
        == replay.handbacks
    )
    assert _total(points["askcache.replays"], **{"askcache.replay.status": "handed_back"}) == 1
    assert _total(points["askcache.model_calls"], **{"askcache.after_handback": True}) == len(calls)
    assert _total(points["askcache.cost.spent"]) > 0
    _no_secret(otel)


def test_uninstrumented_runs_make_no_span(tmp_path: Path, otel: _Otel) -> None:
    telemetry.uninstrument()
    assert not telemetry.instrumented()
    record(tmp_path)
    act(tmp_path, "execute")
    assert otel.finished() == []


def test_a_run_of_the_users_own_loop_is_a_span_with_its_steps(tmp_path: Path, otel: _Otel) -> None:
    recorded, _, _ = _loop_run(tmp_path, "original", "alice")
    assert recorded.strategy == "record"
    otel.spans.clear()
    result, app, requests = _loop_run(tmp_path, "original", "bob")
    assert requests == []
    assert app.saved == [{"name": "bob", "email": ""}]
    assert result.replay is not None
    assert result.replay.status == "completed"
    spans = otel.finished()
    (run,) = [span for span in spans if span.name == "askcache.loop"]
    assert run.context is not None
    attributes = dict(run.attributes or {})
    assert attributes["askcache.run.kind"] == "loop"
    assert attributes["askcache.trajectory"] == "login.json"
    assert attributes["askcache.replay.status"] == "completed"
    assert attributes["askcache.run.status"] == "done"
    assert "askcache.model_calls" not in attributes  # the loop's model calls are its own
    steps = [span for span in spans if span.name == "askcache.replay.step"]
    assert len(steps) == result.replay.steps_total
    assert {span.parent.span_id for span in steps if span.parent} == {run.context.span_id}
    assert len([span for span in steps if span.parent]) == len(steps)
    points = otel.points()
    assert _total(points["askcache.replay.hits"], **{"askcache.trajectory": "login.json"}) == 1


def test_a_step_acted_on_a_moved_window_says_how_it_was_found(tmp_path: Path, otel: _Otel) -> None:
    _record_windowed(tmp_path)
    otel.spans.clear()
    result = _run_windowed(tmp_path, WindowedFormApp(at=(300, 250)))
    assert result.replay is not None
    assert result.replay.status == "completed"
    steps = [span for span in otel.finished() if span.name == "askcache.replay.step"]
    assert [
        span.attributes["askcache.step.anchor"]  # type: ignore[index]
        for span in steps
        if span.attributes and span.attributes["askcache.step.action"] == "left_click"
    ] == ["window", "window"]  # the Name and the Save click, on the moved window
