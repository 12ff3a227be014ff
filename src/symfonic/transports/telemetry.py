"""Moved to :mod:`symfonic.observability.setup`, beside the spans and measures it exports: setting
up a process's telemetry is observability, not a transport. Importable from here as before."""

from __future__ import annotations

from symfonic.observability.setup import (
    LOG_FORMAT_VARIABLE,
    OTEL_EXTRA,
    JsonFormatter,
    LogFormat,
    Signals,
    Telemetry,
    TelemetryExtraMissing,
    TextFormatter,
    TraceContext,
    configure_logging,
    configure_telemetry,
    logging_config,
    requested_signals,
    require_sdk,
)

__all__ = ["LOG_FORMAT_VARIABLE", "OTEL_EXTRA", "JsonFormatter", "LogFormat", "Signals", "Telemetry",
           "TelemetryExtraMissing", "TextFormatter", "TraceContext", "configure_logging",
           "configure_telemetry", "logging_config", "require_sdk", "requested_signals"]
