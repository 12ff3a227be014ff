"""An OpenTelemetry SDK for the process, once: the global providers can be set only once, so every
test here shares them, and reads what its own turns recorded (the exporters are emptied before each
test). Spans are kept in memory; metrics are read on demand."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.observability.telemetry import Telemetry

_INSTALLED: list[Telemetry] = []


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    if not _INSTALLED:
        exporter = InMemorySpanExporter()
        reader = InMemoryMetricReader(preferred_temporality={  # each read: what came since the last
            Counter: AggregationTemporality.DELTA, Histogram: AggregationTemporality.DELTA})
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _INSTALLED.append(Telemetry(exporter, reader))
    installed = _INSTALLED[0]
    installed.spans.clear()
    installed.metrics.get_metrics_data()  # delta: what earlier tests recorded is read away
    yield installed
    installed.spans.clear()
