"""The spans of a turn segment, after the OpenTelemetry GenAI conventions (latest experimental).

- ``invoke_agent {agent}`` per *segment*: a run up to its pause or end, or a resume (or recovery)
  from its claim to its pause or end. ``gen_ai.conversation.id`` is the session, so the segments
  of one conversation are found together.
- ``chat {model}`` per model call (kind client), with the provider, the model, the tokens used
  and the finish reason.
- ``execute_tool {tool}`` per tool call, with its name and call id; its arguments and result only
  when content capture is on (:data:`~.otel.CONTENT_VARIABLE`).

A pause is an event (``symfonic.pause``) on its segment's span, with the pause's name, kind, id
and expiry, never its token. The pause stores that span's context (a W3C ``traceparent``, in the
turn state), and the segment that resumes it, on whatever host and however much later, *links*
to it: a backend shows the two halves of one turn together although neither is the other's
parent (the resume's parent is the request that answered).

A segment's events are produced lazily, each ``__anext__`` running a piece of the turn. The
segment's span is made current around each of those pieces only, never across a ``yield``: the
consumer's code between two events (an HTTP response being written, another turn's events) must
not run inside this turn's span, and a context token must be detached in the context it was
attached in.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from symfonic.kernel.events import (
    Completed,
    Failed,
    ModelCallCompleted,
    Paused,
    RunEvent,
)
from symfonic.kernel.messages import Message, ModelReply, StreamItem
from symfonic.kernel.model import Model, OutputSpec, stream_of
from symfonic.kernel.plan import Plan
from symfonic.kernel.stages import TurnRequest
from symfonic.kernel.tool_contract import ToolInputRequired, ToolInvocation, ToolSchema, WrappedTool
from symfonic.observability.otel import API, active, api, capture_content, instruments, tracer

__all__ = ["TracedModel", "TracedTool", "current_trace_parent", "describe_model", "instrumented",
           "traced_segment"]

_PROVIDERS = {"OpenAIResponsesModel": "openai", "OpenAIChatModel": "openai",
              "AnthropicModel": "anthropic"}


def describe_model(model: Model) -> tuple[str, str]:
    """``(provider, model name)`` for the ``gen_ai.*`` attributes. Wrappers (the workers' steps,
    these spans) are looked through; a model of the application's own is named after its class."""
    inner: Any = model
    while not isinstance(getattr(inner, "model", ""), str):
        inner = inner.model
    name = getattr(inner, "model", None) or getattr(inner, "name", None) or type(inner).__name__
    provider = getattr(inner, "provider_name", None) or _PROVIDERS.get(type(inner).__name__,
                                                                        "symfonic")
    return str(provider), str(name)


def current_trace_parent() -> str | None:
    """The current span's context as a W3C ``traceparent``; None without a recording span (no
    SDK installed, or the span sampled out: nothing to link to)."""
    loaded = active()
    if loaded is None:
        return None
    span = loaded.trace.get_current_span()
    if not span.get_span_context().is_valid or not span.is_recording():
        return None
    carrier: dict[str, str] = {}
    loaded.propagator.inject(carrier)
    return carrier.get("traceparent")


def traced_segment(loaded: API | None, events: AsyncIterator[RunEvent], *, agent: str,
                   model: Model, request: TurnRequest,
                   continues: str | None) -> AsyncIterator[RunEvent]:
    """``events``, inside an ``invoke_agent`` span (see the module); ``continues`` is the
    ``traceparent`` of the segment whose pause this one resumes. ``events`` itself when nothing
    is exported (``loaded``, from :func:`~.otel.active`, is None)."""
    if loaded is None:
        return events
    return _segment(loaded, events, agent=agent, model=model, request=request, continues=continues)


async def _segment(loaded: API, events: AsyncIterator[RunEvent], *, agent: str, model: Model,
                   request: TurnRequest, continues: str | None) -> AsyncIterator[RunEvent]:
    provider, model_name = describe_model(model)
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
                  "gen_ai.conversation.id": request.session_id, "gen_ai.provider.name": provider,
                  "gen_ai.request.model": model_name, "symfonic.run.id": request.run_id,
                  "symfonic.root_run.id": request.root_run_id,
                  "symfonic.tenant": request.scope.tenant}
    if request.resumed_from is not None:
        attributes["symfonic.resumed_from"] = request.resumed_from
    span = tracer(loaded).start_span(f"invoke_agent {agent}", attributes=attributes,
                                     links=_links(loaded, continues))
    try:
        async for event in _within(loaded, span, events):
            _observe(loaded, span, event)
            yield event
    except Exception as error:
        _failed(loaded, span, error)
        raise
    finally:
        span.end()


def _links(loaded: API, traceparent: str | None) -> list[Any]:
    if not traceparent:
        return []
    context = loaded.propagator.extract({"traceparent": traceparent})
    paused = loaded.trace.get_current_span(context).get_span_context()
    if not paused.is_valid:
        return []
    return [loaded.trace.Link(paused, {"symfonic.link": "paused_segment"})]


async def _within(loaded: API, span: Any, items: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``items``, each produced with ``span`` current (and only while it is produced)."""
    context = loaded.trace.set_span_in_context(span)
    iterator = items.__aiter__()
    try:
        while True:
            token = loaded.context.attach(context)
            try:
                item = await iterator.__anext__()
            except StopAsyncIteration:
                return
            finally:
                loaded.context.detach(token)
            yield item
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()


def _observe(loaded: API, span: Any, event: RunEvent) -> None:
    if isinstance(event, Paused):
        pause = event.interrupt
        span.add_event("symfonic.pause", {
            "symfonic.pause.name": pause.name, "symfonic.pause.kind": pause.kind,
            "symfonic.pause.interrupt_id": pause.interrupt_id,
            "symfonic.pause.expires_at": float(pause.expires_at or 0.0),
            "symfonic.pause.resumable": pause.resumable, "gen_ai.tool.call.id": pause.tool_call_id})
        span.set_attribute("symfonic.outcome", "paused")
    elif isinstance(event, Completed):
        span.set_attribute("symfonic.outcome", "completed")
        span.set_status(loaded.trace.StatusCode.OK)
    elif isinstance(event, Failed):
        span.set_attribute("symfonic.outcome", "failed")
        span.set_attribute("error.type", event.error_type or "Failed")
        span.set_status(loaded.trace.Status(loaded.trace.StatusCode.ERROR, event.error))
    if isinstance(event, Completed | Failed | Paused) and event.usage is not None:
        span.set_attribute("gen_ai.usage.input_tokens", event.usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", event.usage.output_tokens)
    elif isinstance(event, ModelCallCompleted) and event.finish_reason:
        span.add_event("gen_ai.model_call", {"gen_ai.response.finish_reasons":
                                             [event.finish_reason]})


def _failed(loaded: API, span: Any, error: BaseException) -> None:
    span.record_exception(error)
    span.set_attribute("error.type", type(error).__name__)
    span.set_status(loaded.trace.Status(loaded.trace.StatusCode.ERROR, str(error)))


class TracedModel:
    """A model whose every call is a ``chat {model}`` span and a duration and token measurement."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.provider, self.name = describe_model(model)

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSchema], *,
                     output: OutputSpec | None = None) -> AsyncIterator[StreamItem]:
        items = stream_of(self.model, messages, tools, output)
        loaded = api()
        if loaded is None:
            async for item in items:
                yield item
            return
        common = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": self.provider,
                  "gen_ai.request.model": self.name}
        span = tracer(loaded).start_span(f"chat {self.name}", kind=loaded.trace.SpanKind.CLIENT,
                                         attributes=common)
        started, error_type = time.perf_counter(), None
        try:
            async for item in _within(loaded, span, items):
                if isinstance(item, ModelReply):
                    _replied(loaded, span, item, common)
                yield item
        except Exception as error:
            error_type = type(error).__name__
            _failed(loaded, span, error)
            raise
        finally:
            span.end()
            measured = common if error_type is None else {**common, "error.type": error_type}
            instruments(loaded).operation_duration.record(time.perf_counter() - started, measured)


def _replied(loaded: API, span: Any, reply: ModelReply, common: Mapping[str, str]) -> None:
    if reply.finish_reason:
        span.set_attribute("gen_ai.response.finish_reasons", [reply.finish_reason])
    if reply.usage is None:
        return
    span.set_attribute("gen_ai.usage.input_tokens", reply.usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", reply.usage.output_tokens)
    usage = instruments(loaded).token_usage
    usage.record(reply.usage.input_tokens, {**common, "gen_ai.token.type": "input"})
    usage.record(reply.usage.output_tokens, {**common, "gen_ai.token.type": "output"})


class TracedTool(WrappedTool):
    """A tool whose every call is an ``execute_tool {tool}`` span and a duration measurement."""

    async def invoke(self, arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        loaded = api()
        if loaded is None:
            return await self.tool.invoke(arguments, invocation)
        name = self.tool.schema.name
        common = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        attributes = {**common, "gen_ai.tool.call.id": invocation.call_id,
                      "gen_ai.tool.type": "function"}
        content = capture_content()
        if content:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(arguments, default=str)
        started, error_type = time.perf_counter(), None
        with tracer(loaded).start_as_current_span(f"execute_tool {name}", attributes=attributes,
                                                  record_exception=False,
                                                  set_status_on_exception=False) as span:
            try:
                result = await self.tool.invoke(arguments, invocation)
            except ToolInputRequired:
                # Not a failure: the call waits for a person, and the turn pauses there.
                span.add_event("symfonic.tool.input_required")
                raise
            except Exception as error:
                error_type = type(error).__name__
                _failed(loaded, span, error)
                raise
            finally:
                measured = common if error_type is None else {**common, "error.type": error_type}
                instruments(loaded).tool_duration.record(time.perf_counter() - started, measured)
            if content:
                span.set_attribute("gen_ai.tool.call.result", result)
            return result


def instrumented(loaded: API | None, model: Model, plan: Plan) -> tuple[Model, Plan]:
    """``model`` and ``plan``'s tools traced and measured when something is exported (``loaded``,
    from :func:`~.otel.active`); as they are else."""
    if loaded is None:
        return model, plan
    tools = {name: tool if isinstance(tool, TracedTool) else TracedTool(tool)
             for name, tool in plan.tools.items()}
    traced = model if isinstance(model, TracedModel) else TracedModel(model)
    return traced, dataclasses.replace(plan, tools=tools)
