"""A real OTLP/HTTP receiver on loopback, for what ``symfonic serve`` exports.

It accepts what an OpenTelemetry collector's ``otlp`` receiver accepts over HTTP (protobuf bodies,
gzip or not, on ``/v1/traces`` and ``/v1/metrics``) and decodes them with ``opentelemetry.proto``:
a test checks the bytes the exporter actually sent, not calls to a mock of it. JSON bodies are
refused (415), so an exporter that sent them would show up as a failure rather than pass unseen.

Also here: the environment that points ``symfonic serve`` at a receiver, and the reading of what
a served process wrote (its log lines, the banner aside).
"""

from __future__ import annotations

import gzip
import json
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.processes import Server
from tests.support.servers import Served, loopback_socket

PROTOBUF = "application/x-protobuf"
SPAN_KIND_SERVER = 2
"""``Span.SpanKind.SPAN_KIND_SERVER`` in the OTLP protobuf."""


@dataclass(frozen=True, kw_only=True)
class ReceivedSpan:
    """One span as it arrived; ids in lowercase hex, ``parent_id`` empty for a root span."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    resource: dict[str, Any] = field(default_factory=dict)
    """The attributes of the resource that sent it (``service.name``...)."""


def value_of(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as the Python value it holds."""
    match value.WhichOneof("value"):
        case "array_value":
            return [value_of(item) for item in value.array_value.values]
        case "kvlist_value":
            return attributes_of(value.kvlist_value.values)
        case None:
            return None
        case kind:
            return getattr(value, kind)


def attributes_of(pairs: Any) -> dict[str, Any]:
    items: list[KeyValue] = list(pairs)
    return {pair.key: value_of(pair.value) for pair in items}


class OtlpReceiver:
    """Serves ``/v1/traces`` and ``/v1/metrics`` on 127.0.0.1 while used as a context manager.

    Attributes:
        spans: Every span received, in arrival order.
        metrics: The name of every metric received, once per export that carried it.
    """

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.metrics: list[str] = []
        self._changed = threading.Condition()
        self._served: Served | None = None
        self.app = Starlette(routes=[Route("/v1/traces", self._traces, methods=["POST"]),
                                     Route("/v1/metrics", self._metrics, methods=["POST"])])

    def __enter__(self) -> OtlpReceiver:
        self._served = Served(self.app, loopback_socket())
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._served is not None:
            self._served.stop()

    @property
    def endpoint(self) -> str:
        """For ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the exporters add ``/v1/traces``, ``/v1/metrics``)."""
        assert self._served is not None, "use the receiver in a with block"
        return self._served.url

    def wait_for_span(self, matches: Callable[[ReceivedSpan], bool], within: float = 30.0) -> ReceivedSpan:
        """The first span received that ``matches``, waiting up to ``within`` seconds for it."""
        found: list[ReceivedSpan] = []

        def arrived() -> bool:
            found[:] = [span for span in self.spans if matches(span)][:1]
            return bool(found)

        with self._changed:
            assert self._changed.wait_for(arrived, within), \
                f"no such span in {within}s; received: {[span.name for span in self.spans]}"
        return found[0]

    def wait_for_metric(self, matches: Callable[[str], bool], within: float = 30.0) -> str:
        """The name of the first metric received that ``matches``, waiting for it."""
        with self._changed:
            assert self._changed.wait_for(lambda: any(map(matches, self.metrics)), within), \
                f"no such metric in {within}s; received: {sorted(set(self.metrics))}"
            return next(name for name in self.metrics if matches(name))

    async def _traces(self, request: Request) -> Response:
        body = await _body(request)
        if body is None:
            return Response(status_code=415)
        export = ExportTraceServiceRequest.FromString(body)
        spans = [ReceivedSpan(name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                              parent_id=span.parent_span_id.hex(), kind=span.kind,
                              attributes=attributes_of(span.attributes),
                              resource=attributes_of(batch.resource.attributes))
                 for batch in export.resource_spans for scope in batch.scope_spans
                 for span in scope.spans]
        with self._changed:
            self.spans.extend(spans)
            self._changed.notify_all()
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type=PROTOBUF)

    async def _metrics(self, request: Request) -> Response:
        body = await _body(request)
        if body is None:
            return Response(status_code=415)
        export = ExportMetricsServiceRequest.FromString(body)
        names = [metric.name for batch in export.resource_metrics for scope in batch.scope_metrics
                 for metric in scope.metrics]
        with self._changed:
            self.metrics.extend(names)
            self._changed.notify_all()
        return Response(ExportMetricsServiceResponse().SerializeToString(), media_type=PROTOBUF)


async def _body(request: Request) -> bytes | None:
    """The protobuf body, inflated; None when it is not protobuf."""
    if request.headers.get("content-type", "").split(";")[0].strip() != PROTOBUF:
        return None
    body = await request.body()
    return gzip.decompress(body) if request.headers.get("content-encoding") == "gzip" else body


def exporting_to(endpoint: str, *, every_ms: int) -> dict[str, str]:
    """The variables that make ``symfonic serve`` export to ``endpoint``, batches of spans and
    metrics every ``every_ms`` milliseconds."""
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": str(every_ms),
            "OTEL_METRIC_EXPORT_INTERVAL": str(every_ms)}


def forget_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the ``OTEL_*`` variables of the test's own environment from the processes it starts
    (they copy ``os.environ``): a test says which ones a server gets."""
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        monkeypatch.delenv(name)


def everything_written(server: Server) -> str:
    """All a stopped server wrote: what ``wait_for`` read, and the rest."""
    while True:
        try:
            line = server.lines.get(timeout=10)
        except queue.Empty:
            raise AssertionError(f"the server's output did not end:\n{server.output}") from None
        if line is None:
            return server.output
        server.output += line


def log_records(output: str) -> list[dict[str, Any]]:
    """Every line of ``output`` but the banner ``serve`` prints, each one a JSON object."""
    lines = output.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("symfonic: serving"))
    last = next(i for i, line in enumerate(lines) if line.startswith("  try:"))
    records = []
    for line in lines[:first] + lines[last + 1:]:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON log line: {line!r}\n{output}") from None
        assert isinstance(record, dict), line
        records.append(record)
    return records
