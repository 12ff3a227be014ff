"""``symfonic serve`` exports OTLP when the ``OTEL_*`` variables ask: one server span per request,
named after its route, continuing the caller's trace, parent of what the library traces inside it.

Real processes, a real OTLP/HTTP receiver on loopback (:mod:`tests.support.otlp_receiver`), real requests.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import httpx
import pytest

from tests.support.otlp_receiver import (
    SPAN_KIND_SERVER,
    OtlpReceiver,
    everything_written,
    exporting_to,
    forget_otel_variables,
    log_records,
)
from tests.support.processes import Server
from tests.support.servers import free_port

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
LIVE = '''
from symfonic import AgentSpec, Host, ModelReply
from symfonic.models import FunctionModel


def app():
    reply = ModelReply(text="live")
    return Host.open(agents=[AgentSpec(name="live", model=FunctionModel(lambda m, t: reply))])
'''


@pytest.fixture(autouse=True)
def _no_ambient_otel(monkeypatch: pytest.MonkeyPatch) -> None:
    forget_otel_variables(monkeypatch)


@pytest.mark.e2e
def test_serve_exports_a_server_span_per_request(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        port = free_port()
        server = Server(tmp_path, "serve", "--port", str(port), "--url",
                        f"sqlite:///{tmp_path / 'served.db'}",
                        env=exporting_to(receiver.endpoint, every_ms=100))
        try:
            key = server.ready()
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                              headers={"Authorization": f"Bearer {key}"}) as client:
                started = client.post("/v1/agents/support/runs", json={"input": "Please refund order 42."},
                                      headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"})
                assert started.status_code == 200, started.text
                token = started.json()["interrupt"]["token"]
                assert client.get(f"/v1/pauses/{token}").status_code == 200
            run = receiver.wait_for_span(lambda span: span.name == "POST /v1/agents/{name}/runs")
            read = receiver.wait_for_span(lambda span: span.name == "GET /v1/pauses/{token}")
            receiver.wait_for_metric(lambda name: name.startswith("http.server."))
        finally:
            assert server.stop() in (0, 130), server.output
    assert run.kind == SPAN_KIND_SERVER
    assert (run.trace_id, run.parent_id) == (CALLER_TRACE, CALLER_SPAN)  # the caller's trace goes on
    assert run.attributes["http.route"] == "/v1/agents/{name}/runs"
    assert 200 in (run.attributes.get("http.status_code"), run.attributes.get("http.response.status_code"))
    assert run.resource["service.name"] == "symfonic"
    assert run.resource["service.version"] == version("symfonic-runtime")
    assert read.trace_id != run.trace_id and read.parent_id == ""  # a request of its own
    assert token not in repr(read.attributes) and "/v1/pauses/{token}" in repr(read.attributes)
    # one server span per request: none from a framework's own tracing beside it
    assert sorted(span.name for span in receiver.spans if span.kind == SPAN_KIND_SERVER) == [
        "GET /v1/pauses/{token}", "POST /v1/agents/{name}/runs"]
    # the spans the library made while handling the run (if any) are the request's children
    agent = [span for span in receiver.spans if span.name.startswith("invoke_agent")]
    assert all((span.trace_id, span.parent_id) == (run.trace_id, run.span_id) for span in agent), agent


@pytest.mark.e2e
def test_reloaded_workers_export_and_log_as_told(tmp_path: Path) -> None:
    (tmp_path / "live.py").write_text(LIVE)
    with OtlpReceiver() as receiver:
        port = free_port()
        server = Server(tmp_path, "serve", "--reload", "--app", "live:app", "--port", str(port),
                        env={**exporting_to(receiver.endpoint, every_ms=100), "SYMFONIC_LOG_FORMAT": "json"})
        try:
            key = server.ready("Application startup complete")
            started = httpx.post(f"http://127.0.0.1:{port}/v1/agents/live/runs", json={"input": "hi"},
                                 headers={"Authorization": f"Bearer {key}"}, timeout=30)
            assert started.json()["output"] == "live", started.text
            run = receiver.wait_for_span(lambda span: span.name == "POST /v1/agents/{name}/runs")
        finally:
            assert server.stop() in (0, 130), server.output
    records = log_records(everything_written(server))
    access = [record for record in records if record["logger"] == "uvicorn.access"]
    assert [(record["path"], record["trace_id"], record["span_id"]) for record in access] == [
        ("/v1/agents/live/runs", run.trace_id, run.span_id)]
    messages = [record["message"] for record in records]
    assert any(message.startswith("Started reloader process") for message in messages)  # the parent
    assert any(message.startswith("Started server process") for message in messages)  # the worker
