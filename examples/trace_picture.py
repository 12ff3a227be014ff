"""Draw the trace of a paused and resumed turn, for docs/observability.md.

A turn that looks an order up and pauses for a person's approval runs on one host, inside a span
standing for the HTTP request that started it; a second host, a moment later, resumes it inside
its own request's span. The spans come from the OpenTelemetry SDK (kept in memory), exactly as
an exporter would send them; they are drawn as a waterfall per trace, the two traces joined by the
link the second segment carries, and photographed with Chromium::

    python examples/trace_picture.py docs/images/paused-and-resumed-trace.png

Needs the ``[otel]`` extra, Playwright for Python and Debian's ``chromium`` package.
"""

from __future__ import annotations

import asyncio
import html
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic import AgentSpec, Host, HumanInteraction, ModelReply, Scope, ToolCall
from symfonic.kernel.messages import Message, Usage
from symfonic.models import FunctionModel
from symfonic.tools import ToolSchema, tool


@tool
async def lookup_order(order_id: int) -> str:
    """Look an order up."""
    await asyncio.sleep(0.012)
    return f"order {order_id}: 59.90, refundable"


@tool
async def issue_refund(order_id: int) -> str:
    """Refund an order (a person approves it first)."""
    await asyncio.sleep(0.02)
    return f"refunded order {order_id}"


async def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    await asyncio.sleep(0.03)  # a model's time, scaled down
    last, used = messages[-1], Usage(input_tokens=412, output_tokens=38)
    if last.role == "user":
        return ModelReply(tool_calls=[ToolCall(id="lookup-42", name="lookup_order",
                                               arguments={"order_id": 42})], usage=used)
    if last.tool_call_id == "lookup-42":
        return ModelReply(tool_calls=[ToolCall(id="refund-42", name="issue_refund",
                                               arguments={"order_id": 42})], usage=used)
    return ModelReply(text="Refunded 59.90 on order 42.", usage=used)


DESK = AgentSpec(name="support", model=FunctionModel(policy, name="gpt-5.1"),
                 tools=[lookup_order, issue_refund],
                 capabilities=[HumanInteraction(approvals=["issue_refund"])])


async def story(folder: Path) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    tracer = trace.get_tracer("http")
    url = f"sqlite:///{folder / 'desk.db'}"
    async with Host.open(url, agents=[DESK], secret="a-long-random-secret-for-pictures") as first:
        with tracer.start_as_current_span("POST /v1/agents/support/runs (host A)"):
            paused = await first.agent("support", Scope(tenant="acme")).run(
                "Please refund order 42.", session_id="order-42")
    assert paused.interrupt is not None
    await asyncio.sleep(0.4)  # the person reads the question in the inbox
    async with Host.open(url, agents=[DESK], secret="a-long-random-secret-for-pictures") as second:
        with tracer.start_as_current_span("POST /v1/pauses/{token}/resume (host B)"):
            await second.continuation.resume(paused.interrupt.token, {"approved": True})
    return list(exporter.get_finished_spans())


def _pause_name(event: Any) -> str:
    return str(dict(event.attributes or {}).get("symfonic.pause.name", ""))


def _row(span: ReadableSpan, start: int, scale: float, depth: int) -> str:
    assert span.start_time is not None and span.end_time is not None
    left = (span.start_time - start) * scale
    width = max(2.0, (span.end_time - span.start_time) * scale)
    kind = span.name.split(" ")[0]
    attributes: dict[str, Any] = dict(span.attributes or {})
    shown = ("gen_ai.usage", "gen_ai.tool.call.id", "symfonic.outcome")
    facts = [f"{k.removeprefix('gen_ai.')}={v}" for k, v in attributes.items() if k.startswith(shown)]
    marks = "".join(f'<span class="event" style="left:{(e.timestamp - start) * scale:.1f}px">'
                    f'&#9646;&#9646; pause: {html.escape(str(_pause_name(e)))}</span>'
                    for e in span.events if e.name == "symfonic.pause")
    return (f'<div class="row"><div class="name" style="padding-left:{depth * 14}px">'
            f'{html.escape(span.name)}</div><div class="lane"><div class="bar {kind}" '
            f'style="left:{left:.1f}px;width:{width:.1f}px"></div>{marks}</div>'
            f'<div class="facts">{(span.end_time - span.start_time) / 1e6:.1f} ms '
            f'{html.escape(" ".join(facts))}</div></div>')


def _trace(spans: list[ReadableSpan], title: str) -> str:
    starts = [s.start_time or 0 for s in spans]
    start, end = min(starts), max(s.end_time or 0 for s in spans)
    scale = 520 / max(1, end - start)
    by_id = {s.context.span_id: s for s in spans}

    def depth(span: ReadableSpan) -> int:
        return 0 if span.parent is None or span.parent.span_id not in by_id else (
            1 + depth(by_id[span.parent.span_id]))

    ordered = sorted(spans, key=lambda s: s.start_time or 0)
    rows = "".join(_row(s, start, scale, depth(s)) for s in ordered)
    return f'<section><h2>{html.escape(title)}</h2>{rows}</section>'


def page(spans: list[ReadableSpan]) -> str:
    traces: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        traces.setdefault(span.context.trace_id, []).append(span)
    first, second = sorted(traces.values(), key=lambda t: min(s.start_time or 0 for s in t))
    resumed = next(s for s in second if s.name.startswith("invoke_agent"))
    paused = next(s for s in first if s.name.startswith("invoke_agent"))
    gap = ((resumed.start_time or 0) - (paused.end_time or 0)) / 1e9
    link = resumed.links[0].context
    style = """
    body{font:13px system-ui,sans-serif;margin:18px;background:#fff;color:#1b1f24;width:1180px}
    h1{font-size:17px;margin:0 0 10px} h2{font-size:13px;color:#57606a;margin:12px 0 4px}
    .row{display:flex;align-items:center;height:24px;border-bottom:1px solid #eef0f2}
    .name{flex:none;box-sizing:border-box;width:330px;white-space:nowrap;overflow:hidden;
          font-family:ui-monospace,monospace;font-size:12px}
    .lane{flex:none;position:relative;width:540px;height:18px}
    .bar{position:absolute;top:3px;height:12px;border-radius:3px}
    .POST{background:#8c959f} .invoke_agent{background:#6639ba} .chat{background:#0969da}
    .execute_tool{background:#1a7f37}
    .facts{flex:1;padding-left:10px;color:#57606a;font-size:11px;white-space:nowrap;overflow:hidden}
    .event{position:absolute;top:1px;font-size:11px;color:#bc4c00;font-weight:600;white-space:nowrap;
           transform:translateX(-104%);background:rgba(255,255,255,.9);padding:0 3px}
    .link{margin:10px 0;padding:8px 10px;border-left:3px dashed #bc4c00;background:#fff8f0;font-size:12px}
    """
    return (f"<html><head><style>{style}</style></head><body>"
            "<h1>One turn, two traces: paused on host A, resumed on host B</h1>"
            + _trace(first, f"trace {first[0].context.trace_id:032x} (host A: the run, until the "
                            "pause)")
            + f'<div class="link">&#10551; answered {gap:.1f} s later; host B\'s <b>invoke_agent</b> '
              f"span links to span {link.span_id:016x} of trace {link.trace_id:032x} (the pause "
              "stored its context)</div>"
            + _trace(second, f"trace {second[0].context.trace_id:032x} (host B: the resume)")
            + "</body></html>")


def main() -> None:
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images/paused-and-resumed-trace.png")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        spans = asyncio.run(story(Path(folder)))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            tab = browser.new_page(viewport={"width": 1220, "height": 400})
            tab.set_content(page(spans))
            target.parent.mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=str(target), full_page=True)
            browser.close()
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
