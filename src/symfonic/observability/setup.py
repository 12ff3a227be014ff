"""OpenTelemetry and structured logs for ``symfonic serve`` and ``symfonic worker``; the library
only ever uses the API.

The library makes its spans and measurements through the *global* providers of
``opentelemetry-api`` and never installs an SDK: that is the job of whoever runs the process.
``symfonic serve`` and ``worker`` are such processes, so they install the SDK, but only when the
standard ``OTEL_*`` variables ask for an export (:func:`requested_signals`): a process nobody asked
to export pays no import of the SDK, and the ``[otel]`` extra stays optional. Asked without the
extra installed, they refuse to start rather than run silently untraced
(:class:`TelemetryExtraMissing`).

Its HTTP server span (:meth:`Telemetry.instrument`) is current while the app handles a request,
so the library's ``invoke_agent`` span of a run is its child, and so is the access log line:
uvicorn writes it from the ``send`` the app calls, inside the span. Log records carry the current
trace and span ids (:class:`TraceContext`) whether or not this module installed the SDK (an app
may install its own), read from ``opentelemetry.trace`` only when something has imported it.

It sits with the spans and measures (:mod:`symfonic.observability`) rather than with the
transports: it sets a process up, whichever transports the process serves. Nothing here is
imported by ``import symfonic``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import logging.config
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, Literal

from symfonic.errors import SymfonicError

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["LOG_FORMAT_VARIABLE", "OTEL_EXTRA", "JsonFormatter", "LogFormat", "Signals", "Telemetry",
           "TelemetryExtraMissing", "TextFormatter", "TraceContext", "configure_logging",
           "configure_telemetry", "logging_config", "require_sdk", "requested_signals"]

OTEL_EXTRA = "pip install 'symfonic-runtime[otel]'"
LOG_FORMAT_VARIABLE = "SYMFONIC_LOG_FORMAT"
DEFAULT_SERVICE_NAME = "symfonic"
LogFormat = Literal["text", "json"]
SDK_MODULES = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http",
               "opentelemetry.instrumentation.asgi")
"""What the ``[otel]`` extra brings beyond the API: all of it is needed to export."""
SECRET_PATH_PARAMETERS = frozenset({"token"})
"""Path parameters kept out of span attributes: a pause token is a bearer capability, and trace
backends are read by more people than the pauses are (the span's name has the route template)."""
URL_ATTRIBUTES = ("http.target", "http.url", "url.path", "url.full")
KNOWN_METHODS = frozenset({"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"})


class TelemetryExtraMissing(SymfonicError, ImportError):
    """The ``OTEL_*`` variables ask for an export, and the ``[otel]`` extra is not installed."""


@dataclass(frozen=True, kw_only=True)
class Signals:
    """What the environment asks ``symfonic serve`` to export over OTLP."""

    traces: bool
    metrics: bool


def requested_signals(environ: Mapping[str, str] | None = None) -> Signals:
    """The signals the standard variables ask for; neither under ``OTEL_SDK_DISABLED=true``.

    A signal is exported when its ``OTEL_<SIGNAL>S_EXPORTER`` says ``otlp`` or, unset, when an
    OTLP endpoint is set for it (``OTEL_EXPORTER_OTLP_ENDPOINT`` or the signal's own): the SDK's
    default exporter is ``otlp`` to localhost, but a server that starts exporting because nothing
    was set would fill its log with failed exports.

    Raises:
        ValueError: an exporter or a protocol this server does not provide (it exports OTLP over
            HTTP/protobuf only, as the ``[otel]`` extra installs).
    """
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return Signals(traces=False, metrics=False)
    return Signals(traces=_wanted(env, "TRACES"), metrics=_wanted(env, "METRICS"))


def _wanted(env: Mapping[str, str], signal: str) -> bool:
    variable = f"OTEL_{signal}_EXPORTER"
    names = {name.strip().lower() for name in env.get(variable, "").split(",") if name.strip()}
    if names - {"otlp", "otlp_proto_http", "none"}:
        raise ValueError(f"${variable}={env[variable]!r}: symfonic serve exports otlp (or none)")
    wanted = bool(names & {"otlp", "otlp_proto_http"}) if names else any(
        env.get(name, "").strip() for name in ("OTEL_EXPORTER_OTLP_ENDPOINT",
                                               f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"))
    for name in (f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = env.get(name, "").strip()
        if wanted and protocol:
            if protocol != "http/protobuf":
                raise ValueError(f"${name}={protocol!r}: symfonic serve exports OTLP over "
                                 "http/protobuf only")
            break  # the signal's own protocol overrides the general one
    return wanted


def require_sdk() -> None:
    """Check that the ``[otel]`` extra is installed, without importing it.

    Raises:
        TelemetryExtraMissing: it is not, with the command that installs it.
    """
    for name in SDK_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:  # a parent package is missing, or an import hook refuses it
            found = False
        if not found:
            raise TelemetryExtraMissing(
                f"the OTEL_* variables ask for an OTLP export, which needs the otel extra ({name} "
                f"is not installed): {OTEL_EXTRA}", name=name)


@dataclass(frozen=True, kw_only=True)
class Telemetry:
    """The SDK providers :func:`configure_telemetry` installed; shut down once, when serving ends.

    Attributes:
        tracer_provider: The global ``TracerProvider``; None when traces are not exported.
        meter_provider: The global ``MeterProvider``; None when metrics are not exported.
    """

    tracer_provider: Any = None
    meter_provider: Any = None

    def instrument(self, app: Starlette) -> Starlette:
        """Serve each request of ``app`` inside a server span, named ``{method} {route template}``.

        The middleware goes *into* the app's stack, not around it: FastAPI versions with tracing
        of their own turn it off when they find this middleware there, where around the app each
        request would get two server spans in two unrelated traces. The ``receive`` and ``send``
        spans it would add per ASGI message are left out: a streamed response (a run's events)
        would make hundreds, and they say nothing the server span does not.
        """
        from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

        app.add_middleware(_RouteNames)
        app.add_middleware(OpenTelemetryMiddleware, default_span_details=_method_only,
                           tracer_provider=self.tracer_provider, meter_provider=self.meter_provider,
                           exclude_spans=["receive", "send"])
        return app

    def shutdown(self) -> None:
        """Export what is still buffered (the last requests' spans, the last metrics), then stop.

        The SDK would also do it at interpreter exit; doing it as soon as the server has stopped
        keeps the export inside the stop a supervisor waits for, while logging still works (a
        collector that cannot be reached is logged, not lost in the interpreter's teardown).
        """
        if self.tracer_provider is not None:
            self.tracer_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()


def configure_telemetry() -> Telemetry | None:
    """Install the SDK's tracer and meter providers as the global ones, exporting over OTLP/HTTP.

    Everything else is the SDK's reading of the standard variables: the endpoints, headers,
    compression and timeouts of the exporters, ``OTEL_BSP_*`` for the batches of spans,
    ``OTEL_METRIC_EXPORT_INTERVAL``, the sampler and the resource attributes. The service is
    ``symfonic`` unless ``OTEL_SERVICE_NAME`` (or ``service.name`` in ``OTEL_RESOURCE_ATTRIBUTES``)
    names it. None, with nothing imported, when no variable asks for an export. Call it once per
    process: the global providers can be set only once.

    Raises:
        TelemetryExtraMissing: an export is asked for, and the ``[otel]`` extra is not installed.
        ValueError: the variables ask for an exporter or protocol this server does not provide.
    """
    signals = requested_signals()
    if not (signals.traces or signals.metrics):
        return None
    require_sdk()
    from opentelemetry import metrics, trace

    resource = _resource()
    tracer_provider = meter_provider = None
    if signals.traces:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(tracer_provider)
    if signals.metrics:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        meter_provider = MeterProvider(
            resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())])
        metrics.set_meter_provider(meter_provider)
    return Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)


def _resource() -> Any:
    from opentelemetry.sdk.resources import Resource

    try:
        release = version("symfonic-runtime")
    except PackageNotFoundError:
        release = "0"
    detected = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, the SDK's own
    # Without a name in the environment the SDK says "unknown_service:python": symfonic's wins.
    named = {key: value for key, value in detected.attributes.items()
             if key != "service.name" or not str(value).startswith("unknown_service")}
    defaults = Resource({"service.name": DEFAULT_SERVICE_NAME, "service.version": release})
    return defaults.merge(Resource(named, detected.schema_url))


def _method_only(scope: Scope) -> tuple[str, dict[str, Any]]:
    """The span's name until the app has routed the request (:class:`_RouteNames`): the route is
    known only then, and the path the middleware would use holds ids and tokens."""
    method = str(scope.get("method", "")).strip().upper()
    return (method if method in KNOWN_METHODS else "HTTP"), {}


class _RouteNames:
    """Names the server span after the route the app matched, once it has matched one.

    It runs right inside the middleware's span and looks at the scope when the response starts,
    where the router has left the route (``scope["route"]``) and the path parameters. The route's
    template makes a span name of low cardinality (``POST /v1/agents/{name}/runs``), as the
    semantic conventions want; a pause token in the path is written over in the span's URL
    attributes (:data:`SECRET_PATH_PARAMETERS`).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from opentelemetry import trace

        span = trace.get_current_span()

        async def named(message: Message) -> None:
            if message["type"] == "http.response.start" and span.is_recording():
                _name_after_route(span, scope)
            await send(message)

        await self.app(scope, receive, named)


def _name_after_route(span: Any, scope: Scope) -> None:
    template = getattr(scope.get("route"), "path_format", None)
    if not isinstance(template, str):
        return  # no route matched (a 404): the method alone is the name
    mounted = str(scope.get("root_path", ""))[len(str(scope.get("app_root_path", ""))):]
    template = f"{mounted}{template}"
    span.update_name(f"{_method_only(scope)[0]} {template}")
    span.set_attribute("http.route", template)
    secrets = [str(value) for name, value in dict(scope.get("path_params", {})).items()
               if name in SECRET_PATH_PARAMETERS and value]
    recorded = getattr(span, "attributes", None) or {}
    for key in URL_ATTRIBUTES:
        value = recorded.get(key)
        if secrets and isinstance(value, str):
            for secret in secrets:
                value = value.replace(secret, "{token}")
            span.set_attribute(key, value)


def current_ids() -> tuple[str, str]:
    """The current span's trace and span ids in hex, or empty strings without a valid span.

    Nothing is imported: if ``opentelemetry.trace`` has not been imported by anyone, no span can
    be current, and a process that exports nothing should not load it for its log lines.
    """
    trace = sys.modules.get("opentelemetry.trace")
    get_current_span = getattr(trace, "get_current_span", None)
    if get_current_span is None:
        return "", ""
    context = get_current_span().get_span_context()
    if not context.is_valid:
        return "", ""
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


class TraceContext(logging.Filter):
    """Puts ``trace_id`` and ``span_id`` on every record its handler handles ('' without a span).

    On the handler, not a logger: records propagated from any logger pass through it. A record
    that already carries the ids (given as ``extra``) keeps them.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "trace_id"):
            record.trace_id, record.span_id = current_ids()
        return True


class TextFormatter(logging.Formatter):
    """``time level logger: message``, then ``trace_id=… span_id=…`` when a span was current."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        trace_id = getattr(record, "trace_id", "")
        return f"{line} trace_id={trace_id} span_id={getattr(record, 'span_id', '')}" if trace_id \
            else line


_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message", "asctime", "taskName", "trace_id", "span_id",
    "color_message"}  # uvicorn's coloured copy of the message
_ACCESS_FIELDS = ("client_addr", "method", "path", "http_version", "status_code")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: what a log pipeline parses without a pattern.

    ``time`` (ISO 8601, UTC), ``level``, ``logger``, ``message``, ``trace_id``, ``span_id``, then
    ``exception`` (its traceback) when there is one, the fields uvicorn's access line is made of
    (``method``, ``path``, ``status_code``...), and whatever ``extra`` the record was given.
    """

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
            "trace_id": getattr(record, "trace_id", ""), "span_id": getattr(record, "span_id", "")}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        if record.name == "uvicorn.access" and isinstance(record.args, tuple) \
                and len(record.args) == len(_ACCESS_FIELDS):
            entry.update(zip(_ACCESS_FIELDS, record.args, strict=True))
        for key, value in record.__dict__.items():
            if key not in _STANDARD and key not in entry:
                entry[key] = value
        return json.dumps(entry, default=str, ensure_ascii=False)


def logging_config(log_format: LogFormat) -> dict[str, Any]:
    """A :func:`logging.config.dictConfig` for the root logger, symfonic's and uvicorn's.

    uvicorn takes it as ``log_config`` and applies it again in each process ``--reload`` starts.
    As uvicorn does, the access log goes to stdout and the rest to stderr. The root logger's level
    is ``WARNING`` (libraries say what goes wrong, not what they do) and symfonic's ``INFO``.
    """
    formatter = {"()": f"{__name__}.{'JsonFormatter' if log_format == 'json' else 'TextFormatter'}"}
    handler = {"class": "logging.StreamHandler", "formatter": "default", "filters": ["trace"]}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"trace": {"()": f"{__name__}.TraceContext"}},
        "formatters": {"default": formatter},
        "handlers": {"default": {**handler, "stream": "ext://sys.stderr"},
                     "access": {**handler, "stream": "ext://sys.stdout"}},
        "loggers": {"uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
                    "uvicorn.error": {"level": "INFO"},
                    "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
                    "symfonic": {"level": "INFO"}},
        "root": {"handlers": ["default"], "level": "WARNING"},
    }


def configure_logging(log_format: str | None = None) -> LogFormat:
    """Configure this process's logging as :func:`logging_config` says; Python's warnings become
    log records too, so that with ``json`` every line on stderr is an object.

    ``log_format`` defaults to ``$SYMFONIC_LOG_FORMAT``, else ``text``; the format used is
    returned.

    Raises:
        ValueError: neither ``text`` nor ``json``.
    """
    chosen = (log_format or os.environ.get(LOG_FORMAT_VARIABLE, "") or "text").strip().lower()
    if chosen not in ("text", "json"):
        raise ValueError(f"the log format must be text or json, not {chosen!r}")
    known: LogFormat = "json" if chosen == "json" else "text"
    logging.config.dictConfig(logging_config(known))
    logging.captureWarnings(True)
    return known
