"""Without ``OTEL_*`` variables ``symfonic serve`` loads nothing of the OpenTelemetry SDK; with
them and without the ``[otel]`` extra, it refuses to start, naming the install command."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from symfonic.observability.setup import Signals, configure_telemetry, requested_signals
from tests.support import processes
from tests.support.otlp_receiver import everything_written, forget_otel_variables
from tests.support.processes import Server, refund_run, refused, symfonic
from tests.support.servers import free_port

SDK = ("opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.instrumentation")
REPORT_AT_EXIT = f"""
import atexit, sys
atexit.register(lambda: print("sdk modules:", sorted(m for m in sys.modules if m.startswith({SDK!r}))))
"""
NO_SDK = """
import sys


class NoSdk:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoSdk())
"""
ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}  # never reached: refused first


@pytest.fixture(autouse=True)
def _no_ambient_otel(monkeypatch: pytest.MonkeyPatch) -> None:
    forget_otel_variables(monkeypatch)


def symfonic_after(prelude: str) -> list[str]:
    return [sys.executable, "-c", f"{prelude}\nfrom symfonic.cli import main\nmain()"]


@pytest.mark.e2e
def test_serve_loads_no_sdk_without_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "SYMFONIC", symfonic_after(REPORT_AT_EXIT))
    port = free_port()
    server = Server(tmp_path, "serve", "--port", str(port))
    try:
        key = server.ready()
        started = refund_run(port, key)
        assert started.status_code == 200, started.text
    finally:
        assert server.stop() in (0, 130), server.output
    output = everything_written(server)
    assert "sdk modules: []" in output, output
    assert "trace_id=" not in output  # nothing traced, so no line names a trace


def test_no_variables_configure_nothing() -> None:
    assert configure_telemetry() is None


@pytest.mark.e2e
@pytest.mark.parametrize("reload", [False, True])
def test_variables_without_the_sdk_are_refused(tmp_path: Path, reload: bool) -> None:
    (tmp_path / "live.py").write_text("from symfonic import Host\n\ndef app():\n"
                                      "    return Host.open(agents=[])\n")
    args = ["--reload", "--app", "live:app"] if reload else []
    done = symfonic(tmp_path, "serve", "--port", str(free_port()), *args, command=symfonic_after(NO_SDK),
                    env=ENDPOINT, check=False)
    refused(done, 3, "pip install 'symfonic-runtime[otel]'", "OTEL_")
    assert done.stdout == ""  # no banner, no key issued


@pytest.mark.e2e
def test_an_exporter_serve_lacks_is_refused(tmp_path: Path) -> None:
    done = symfonic(tmp_path, "serve", "--port", str(free_port()), check=False,
                    env={**ENDPOINT, "OTEL_TRACES_EXPORTER": "zipkin"})
    refused(done, 3, "$OTEL_TRACES_EXPORTER", "otlp")
    assert done.stdout == ""


@pytest.mark.parametrize(("environ", "signals"), [
    ({}, Signals(traces=False, metrics=False)),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, Signals(traces=True, metrics=True)),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces"}, Signals(traces=True, metrics=False)),
    ({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c/v1/metrics"}, Signals(traces=False, metrics=True)),
    ({"OTEL_TRACES_EXPORTER": "otlp"}, Signals(traces=True, metrics=False)),
    ({"OTEL_TRACES_EXPORTER": "otlp_proto_http"}, Signals(traces=True, metrics=False)),
    ({"OTEL_METRICS_EXPORTER": "otlp", "OTEL_TRACES_EXPORTER": "none"}, Signals(traces=False, metrics=True)),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_METRICS_EXPORTER": "none"},
     Signals(traces=True, metrics=False)),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"},
     Signals(traces=False, metrics=False)),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_METRICS_EXPORTER": "none"},
     Signals(traces=True, metrics=False)),
])
def test_the_variables_that_ask_for_an_export(environ: dict[str, str], signals: Signals) -> None:
    assert requested_signals(environ) == signals


@pytest.mark.parametrize("environ", [
    {"OTEL_TRACES_EXPORTER": "console"},
    {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
    {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"},
])
def test_what_serve_cannot_export_is_refused(environ: dict[str, str]) -> None:
    with pytest.raises(ValueError, match=r"otlp|OTLP"):
        requested_signals(environ)
