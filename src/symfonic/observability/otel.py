"""OpenTelemetry's API, imported at the first turn rather than with ``symfonic``, or not at all.

Only ``opentelemetry-api`` is used here, through the global tracer and meter providers: whoever
runs the process (``symfonic serve`` with ``OTEL_*`` variables, or the application) installs an
SDK, and until then every span and measurement is the API's no-op. Without the package installed,
:func:`api` is None and callers skip their instrumentation whole, so a host without it pays one
failed import per process.
"""

from __future__ import annotations

import importlib
import os
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["API", "CONTENT_VARIABLE", "active", "api", "capture_content", "instruments", "is_default"]

SCOPE = "symfonic"
"""The instrumentation scope of every span and instrument symfonic makes."""
CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Set to ``true`` to record tool arguments and results on spans (off by default: they may hold
personal data, and a trace backend is rarely where that should go)."""


@dataclass(frozen=True)
class API:
    """The modules of ``opentelemetry`` symfonic uses, imported once."""

    trace: Any
    metrics: Any
    context: Any
    propagator: Any
    """W3C trace context, for the ``traceparent`` a pause stores."""
    metrics_state: Any = None
    """``opentelemetry.metrics._internal``, where the API keeps the provider set, if any."""

    def unset(self) -> bool:
        """True when no provider was ever set, read off the API's own globals: the public getters
        look the environment up on every call (a microsecond each, twice per segment and per
        measurement), and this is asked on every turn of a process that exports nothing. False
        when those globals are not where this version of the API keeps them (then the getters
        decide)."""
        tracer = getattr(self.trace, "_TRACER_PROVIDER", False)
        meter = getattr(self.metrics_state, "_METER_PROVIDER", False)
        return tracer is None and meter is None and _NO_PROVIDER_VARIABLES


_LOADED: list[API | None] = []
_NO_PROVIDER_VARIABLES = not {"OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER"} & set(os.environ)
"""The API builds a provider from these variables on first use, without setting its globals."""


def api() -> API | None:
    """OpenTelemetry's API, or None when it is not installed."""
    if not _LOADED:
        try:
            from opentelemetry import context, metrics, trace
            from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
        except ImportError:
            _LOADED.append(None)
        else:
            state = importlib.import_module("opentelemetry.metrics._internal")
            _LOADED.append(API(trace=trace, metrics=metrics, context=context,
                               propagator=TraceContextTextMapPropagator(), metrics_state=state))
    return _LOADED[0]


def active() -> API | None:
    """The API, when an SDK is installed as a global tracer or meter provider; None while both
    are the API's own no-ops (or the package is absent). Asked per segment, so an SDK installed
    later is used from the next turn on, and a process that exports nothing pays nothing: no
    wrapper, no span object, no attribute dictionary."""
    loaded = api()
    if loaded is None or loaded.unset() or (is_default(loaded.trace.get_tracer_provider())
                                            and is_default(loaded.metrics.get_meter_provider())):
        return None
    return loaded


def is_default(provider: object) -> bool:
    """True for the API's own providers (proxies until an SDK is set, or explicit no-ops)."""
    return type(provider).__module__.startswith(("opentelemetry.trace", "opentelemetry.metrics"))


def capture_content() -> bool:
    """True when spans may carry tool arguments and results (:data:`CONTENT_VARIABLE`)."""
    return os.environ.get(CONTENT_VARIABLE, "").strip().lower() in ("true", "1", "yes")


def tracer(loaded: API) -> Any:
    """The global provider's tracer, asked for each time: an SDK installed after the first turn
    (a test, an application that configures telemetry late) is then used from the next span on."""
    return loaded.trace.get_tracer(SCOPE)


@dataclass(frozen=True)
class Instruments:
    """Every metric symfonic records, made once per meter provider."""

    token_usage: Any
    operation_duration: Any
    tool_duration: Any
    answer_time: Any
    resumes: Any
    refusals: Any
    pauses_issued: Any
    outstanding: Any


_INSTRUMENTS: dict[int, Instruments] = {}


class Outstanding(Protocol):
    """What the outstanding-pauses gauge reads: the last counts of one host's pauses."""

    @property
    def counts(self) -> Mapping[tuple[str, str], int]: ...


WATCHED: weakref.WeakSet[Outstanding] = weakref.WeakSet()
"""The hosts' readings the gauge reports (``measures.OutstandingPauses`` add themselves): kept
here, with the gauge, so that the gauge needs nothing of the modules that measure."""


def observe_outstanding(_options: Any) -> Iterator[Any]:
    """The gauge's callback (run by the SDK's reader, on its thread): the hosts' last readings."""
    loaded = api()
    if loaded is None:
        return
    for watched in list(WATCHED):
        for (tenant, agent), count in list(watched.counts.items()):
            yield loaded.metrics.Observation(count, {"symfonic.tenant": tenant,
                                                     "gen_ai.agent.name": agent})


def instruments(loaded: API) -> Instruments:
    """The instruments of the current global meter provider."""
    provider = loaded.metrics.get_meter_provider()
    made = _INSTRUMENTS.get(id(provider))
    if made is None:
        meter = provider.get_meter(SCOPE)
        made = Instruments(
            token_usage=meter.create_histogram(
                "gen_ai.client.token.usage", unit="{token}",
                description="Tokens used per model call, by type (input, output)."),
            operation_duration=meter.create_histogram(
                "gen_ai.client.operation.duration", unit="s",
                description="Time a model call took, to its whole reply."),
            tool_duration=meter.create_histogram(
                "gen_ai.execute_tool.duration", unit="s", description="Time a tool call took."),
            answer_time=meter.create_histogram(
                "symfonic.pause.answer_time", unit="s",
                description="Time from a pause to its answer (the claim of its resume)."),
            resumes=meter.create_counter(
                "symfonic.pause.resumes", unit="{resume}",
                description="Resumed turns by outcome (completed, paused_again, failed, "
                            "interrupted)."),
            refusals=meter.create_counter(
                "symfonic.pause.refusals", unit="{refusal}",
                description="Resumes refused, by error type."),
            pauses_issued=meter.create_counter(
                "symfonic.pause.issued", unit="{pause}", description="Pauses stored."),
            outstanding=meter.create_observable_gauge(
                "symfonic.pauses.outstanding", callbacks=[observe_outstanding], unit="{pause}",
                description="Pauses waiting for a person, per tenant and agent."),
        )
        _INSTRUMENTS.clear()  # one provider at a time: a replaced one is not used again
        _INSTRUMENTS[id(provider)] = made
    return made
