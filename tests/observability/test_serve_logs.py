"""``symfonic serve --log-format json``: every log line a JSON object, and a line written while a
request was handled carries the trace and span ids of that request's server span.

The formatters are also checked in-process, with a span context made here (the API alone, no SDK).
"""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace

from symfonic.observability.setup import (
    JsonFormatter,
    TextFormatter,
    TraceContext,
    configure_logging,
    current_ids,
    logging_config,
)
from tests.support.otlp_receiver import (
    OtlpReceiver,
    everything_written,
    exporting_to,
    forget_otel_variables,
    log_records,
)
from tests.support.processes import Server, refund_run, symfonic
from tests.support.servers import free_port

TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
SPAN_ID = 0xB7AD6B7169203331


@pytest.fixture(autouse=True)
def _no_ambient_otel(monkeypatch: pytest.MonkeyPatch) -> None:
    forget_otel_variables(monkeypatch)


@pytest.mark.e2e
def test_json_lines_carry_the_trace_of_their_request(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        port = free_port()
        # nothing is due for export while it runs: what arrives, the stop flushed
        env = {**exporting_to(receiver.endpoint, every_ms=600_000), "OTEL_SERVICE_NAME": "desk-api"}
        server = Server(tmp_path, "serve", "--port", str(port), "--log-format", "json", "--url",
                        f"sqlite:///{tmp_path / 'served.db'}", env=env)
        try:
            key = server.ready()
            started = refund_run(port, key)
            assert started.status_code == 200, started.text
            assert receiver.spans == []
        finally:
            assert server.stop() in (0, 130), server.output
        run = receiver.wait_for_span(lambda span: span.name == "POST /v1/agents/{name}/runs", within=5)
    assert run.resource["service.name"] == "desk-api"
    records = log_records(everything_written(server))
    access = [record for record in records if record["logger"] == "uvicorn.access"]
    assert len(access) == 1, access
    assert access[0] | {"time": "", "client_addr": ""} == {
        "time": "", "level": "INFO", "logger": "uvicorn.access", "client_addr": "",
        "message": access[0]["message"], "method": "POST", "path": "/v1/agents/support/runs",
        "http_version": "1.1", "status_code": 200, "trace_id": run.trace_id, "span_id": run.span_id}
    listening = next(record for record in records if record["message"].startswith("Uvicorn running on"))
    assert (listening["level"], listening["trace_id"], listening["span_id"]) == ("INFO", "", "")
    assert listening["time"].endswith("Z") and "T" in listening["time"]


def test_an_unknown_log_format_is_a_usage_error(tmp_path: Path) -> None:
    done = symfonic(tmp_path, "serve", "--log-format", "yaml", check=False)
    assert done.returncode == 2, done.stderr
    assert "yaml" in done.stderr and "Traceback" not in done.stderr


@pytest.fixture
def logged() -> Iterator[tuple[logging.Logger, io.StringIO, logging.Handler]]:
    """A logger of its own whose one handler writes to a string, through :class:`TraceContext`."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(TraceContext())
    logger = logging.getLogger("tests.observability.serve")
    logger.propagate, logger.level = False, logging.INFO
    logger.addHandler(handler)
    yield logger, stream, handler
    logger.removeHandler(handler)


def inside_a_span() -> trace.Span:
    return trace.NonRecordingSpan(trace.SpanContext(trace_id=TRACE_ID, span_id=SPAN_ID, is_remote=False))


def test_json_lines_hold_the_ids_the_exception_and_the_extras(
        logged: tuple[logging.Logger, io.StringIO, logging.Handler]) -> None:
    logger, stream, handler = logged
    handler.setFormatter(JsonFormatter())
    logger.info("outside")
    with trace.use_span(inside_a_span()):
        try:
            raise ValueError("boom\nsecond line")
        except ValueError:
            logger.exception("refund %s failed", 42, extra={"tenant": "acme", "attempt": 2})
    outside, inside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert (outside["trace_id"], outside["span_id"], outside["message"]) == ("", "", "outside")
    assert inside["trace_id"] == f"{TRACE_ID:032x}" and inside["span_id"] == f"{SPAN_ID:016x}"
    assert (inside["level"], inside["logger"], inside["message"]) == (
        "ERROR", "tests.observability.serve", "refund 42 failed")
    assert inside["exception"].startswith("Traceback") and "ValueError: boom" in inside["exception"]
    assert (inside["tenant"], inside["attempt"]) == ("acme", 2)


def test_text_lines_show_the_ids_within_a_span_only(
        logged: tuple[logging.Logger, io.StringIO, logging.Handler]) -> None:
    logger, stream, handler = logged
    handler.setFormatter(TextFormatter())
    logger.warning("outside")
    with trace.use_span(inside_a_span()):
        logger.warning("inside")
    outside, inside = stream.getvalue().splitlines()
    assert outside.endswith(" WARNING tests.observability.serve: outside")
    assert inside.endswith(f": inside trace_id={TRACE_ID:032x} span_id={SPAN_ID:016x}")


def test_ids_given_as_extra_are_kept(logged: tuple[logging.Logger, io.StringIO, logging.Handler]) -> None:
    logger, stream, handler = logged
    handler.setFormatter(TextFormatter())
    with trace.use_span(inside_a_span()):
        logger.warning("replayed", extra={"trace_id": "1" * 32, "span_id": "2" * 16})
    assert stream.getvalue().rstrip().endswith(f"trace_id={'1' * 32} span_id={'2' * 16}")


def test_no_ids_without_opentelemetry_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    with trace.use_span(inside_a_span()):
        assert current_ids() == (f"{TRACE_ID:032x}", f"{SPAN_ID:016x}")
        monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
        assert current_ids() == ("", "")


def test_the_log_formats() -> None:
    assert logging_config("json")["formatters"]["default"]["()"].endswith(".JsonFormatter")
    assert logging_config("text")["formatters"]["default"]["()"].endswith(".TextFormatter")
    with pytest.raises(ValueError, match="text or json"):
        configure_logging("yaml")  # refused before anything is configured
