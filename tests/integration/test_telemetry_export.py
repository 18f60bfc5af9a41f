"""OpenTelemetry over the wire, and its absence.

- Without OpenTelemetry installed (its imports blocked in a fresh interpreter) a record and a
  replay run as before; with it installed but not turned on, a replay imports none of it.
- docs/fleet.md's set-up, run as the page shows it in a worker process with the page's
  environment variables (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``), exports over
  OTLP/HTTP to a collector stand-in this test runs on 127.0.0.1; decoded with
  ``opentelemetry-proto``, the spans and metrics of a replay are there.
- A Prometheus scrape over HTTP on 127.0.0.1 (the Prometheus exporter's own server) shows the
  replay and hand-back counters.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import start_http_server
from prometheus_client.parser import text_string_to_metric_families

from askcache import telemetry
from tests.integration.telemetry_runs import RECORDED_CALLS, SECRET, act, record

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

_RUN = """
import sys
from pathlib import Path
import anthropic  # the anthropic SDK itself imports OpenTelemetry's API (its own tracing)
before = {name for name in sys.modules if name.startswith("opentelemetry")}
import importlib.abc
class _NoMoreOpenTelemetry(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NoMoreOpenTelemetry())
from tests.integration.telemetry_runs import act, record
folder = Path(sys.argv[1])
record(folder)
result, _ = act(folder, "execute")
assert result.replay is not None and result.replay.status == "completed", result.replay
after = {name for name in sys.modules if name.startswith("opentelemetry")}
print("LOADED", sorted(after - before))
print("TELEMETRY", sorted(name for name in sys.modules if name.startswith("askcache.telemetry")))
try:
    import askcache.telemetry
except ImportError as exc:
    print("IMPORT", exc)
"""


def test_without_the_extra_a_replay_runs_and_imports_nothing_of_opentelemetry(
    tmp_path: Path,
) -> None:
    """A fresh interpreter where no OpenTelemetry module can be loaded beyond those the
    anthropic SDK loads itself (as without the ``otel`` extra: no SDK, no metrics API): a
    record and a replay run, load nothing more, and ``askcache.telemetry`` says what to
    install."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN, str(tmp_path)],
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stdout
    assert "TELEMETRY []" in done.stdout
    assert "IMPORT askcache.telemetry needs OpenTelemetry's API and SDK" in done.stdout
    assert "pip install 'askcache[otel]'" in done.stdout


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: keeps each POST's path and body, answers 200."""

    received: list[tuple[str, bytes]]
    arrived: threading.Condition

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        with self.arrived:
            self.received.append((self.path, body))
            self.arrived.notify_all()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    received: list[tuple[str, bytes]] = []
    handler = type(
        "Collector", (_Collector,), {"received": received, "arrived": threading.Condition()}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", received
    server.shutdown()
    server.server_close()


def _values(attributes: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in attributes:
        assert isinstance(item, KeyValue)
        kind = item.value.WhichOneof("value")
        value = getattr(item.value, kind) if kind else None
        if kind == "array_value":
            value = [getattr(v, v.WhichOneof("value")) for v in value.values]
        found[item.key] = value
    return found


def _fleet_setup() -> str:
    """docs/fleet.md's OpenTelemetry set-up, as the page shows it."""
    section = (ROOT / "docs" / "fleet.md").read_text().split("## OpenTelemetry", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


_WORKER = """
{setup}
import sys
from pathlib import Path
from tests.integration.telemetry_runs import act, record
folder = Path(sys.argv[1])
record(folder)
result, _ = act(folder, "execute")
assert result.replay is not None and result.replay.status == "completed", result.replay
print("REPLAYED")
"""


def test_the_fleet_pages_set_up_exports_over_otlp_http_to_the_collector_it_names(
    tmp_path: Path, collector: tuple[str, list[tuple[str, bytes]]]
) -> None:
    """A worker process runs docs/fleet.md's set-up as it is, with the page's environment
    variables naming a collector stand-in on 127.0.0.1, records and replays; what the
    collector received (sent when the worker exits: the SDK flushes then) is decoded."""
    endpoint, received = collector
    done = subprocess.run(
        [sys.executable, "-c", _WORKER.format(setup=_fleet_setup()), str(tmp_path)],
        cwd=ROOT,
        env={
            "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}",
            "PATH": "/usr/bin:/bin",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_SERVICE_NAME": "form-fleet",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test",
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "REPLAYED" in done.stdout

    spans: list[tuple[dict[str, Any], Any]] = []
    metrics: dict[str, list[Any]] = {}
    paths = [path for path, _ in received]
    assert "/v1/traces" in paths
    assert "/v1/metrics" in paths
    last_metrics = max(i for i, path in enumerate(paths) if path == "/v1/metrics")
    for position, (path, body) in enumerate(received):
        if path == "/v1/traces":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource_spans in request.resource_spans:
                resource = _values(resource_spans.resource.attributes)
                spans += [
                    (resource, span) for scope in resource_spans.scope_spans for span in scope.spans
                ]
        elif position == last_metrics:  # cumulative: the last export holds the totals
            assert path == "/v1/metrics"
            metric_request = ExportMetricsServiceRequest()
            metric_request.ParseFromString(body)
            for resource_metrics in metric_request.resource_metrics:
                resource = _values(resource_metrics.resource.attributes)
                assert resource["service.name"] == "form-fleet"
                for scope_metrics in resource_metrics.scope_metrics:
                    if scope_metrics.scope.name != "askcache":
                        continue
                    for metric in scope_metrics.metrics:
                        kind = metric.WhichOneof("data")
                        metrics.setdefault(metric.name, []).extend(
                            getattr(metric, kind).data_points
                        )
    assert {where["service.name"] for where, _ in spans} == {"form-fleet"}
    assert {where["deployment.environment"] for where, _ in spans} == {"test"}
    runs = [
        span
        for _, span in spans
        if span.name == "invoke_agent askcache"
        and _values(span.attributes)["askcache.strategy"] == "execute"
    ]
    assert len(runs) == 1
    run = runs[0]
    assert _values(run.attributes)["askcache.replay.status"] == "completed"
    steps = [span for _, span in spans if span.name == "askcache.replay.step"]
    replayed = [span for span in steps if span.trace_id == run.trace_id]
    assert [_values(span.attributes)["askcache.step.index"] for span in replayed] == [0, 1, 2, 3]
    assert {span.parent_span_id for span in replayed} == {run.span_id}
    typed = [s for s in replayed if _values(s.attributes)["askcache.step.action"] == "type"]
    assert len(typed) == 1
    assert _values(typed[0].attributes)["askcache.check.matched"] is True
    recording = [span for _, span in spans if span.name.startswith("chat ")]
    assert len(recording) == RECORDED_CALLS  # the recording's model calls, and
    sdk_calls = [span for _, span in spans if span.name == "anthropic.messages.create"]
    assert {span.parent_span_id for span in sdk_calls} == {span.span_id for span in recording}
    assert SECRET.encode() not in b"".join(body for _, body in received)

    completed = [
        point
        for point in metrics["askcache.replays"]
        if _values(point.attributes)["askcache.replay.status"] == "completed"
    ]
    assert [point.as_int for point in completed] == [1]
    assert sum(point.as_int for point in metrics["askcache.model_calls.avoided"]) == RECORDED_CALLS
    assert sum(point.count for point in metrics["askcache.step.duration"]) == 4


@pytest.fixture
def prometheus() -> Iterator[tuple[str, MeterProvider]]:
    reader = PrometheusMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    server, thread = start_http_server(0, addr="127.0.0.1")
    yield f"http://127.0.0.1:{server.server_port}/metrics", provider
    server.shutdown()
    server.server_close()
    thread.join()
    provider.shutdown()


def test_a_prometheus_scrape_shows_replays_hits_and_hand_backs_by_code(
    tmp_path: Path, prometheus: tuple[str, MeterProvider]
) -> None:
    url, meter_provider = prometheus
    telemetry.instrument(tracer_provider=TracerProvider(), meter_provider=meter_provider)
    try:
        record(tmp_path)
        hit, _ = act(tmp_path, "execute")
        handed, _ = act(tmp_path, "execute", layout="banner")
    finally:
        telemetry.uninstrument()
    assert hit.replay is not None
    assert hit.replay.status == "completed"
    assert handed.replay is not None
    assert handed.replay.status == "handed_back"
    with urllib.request.urlopen(url, timeout=30) as response:
        page = response.read().decode()
    assert SECRET not in page
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(page)
        for sample in family.samples
    }

    def total(name: str, **labels: str) -> float:
        return sum(
            value
            for (sample, found), value in samples.items()
            if sample == name and set(labels.items()) <= set(found)
        )

    assert total("askcache_replays_total", askcache_replay_status="completed") == 1
    assert total("askcache_replays_total", askcache_replay_status="handed_back") == 1
    assert total("askcache_replay_hits_total", askcache_trajectory="login.json") == 1
    code = handed.replay.reason_code
    assert code is not None
    assert total("askcache_handbacks_total", askcache_handback_reason_code=code) == 1
    assert total("askcache_model_calls_avoided_total") >= RECORDED_CALLS
    assert total("askcache_step_duration_seconds_count") >= 4
