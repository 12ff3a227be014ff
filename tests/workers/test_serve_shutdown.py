"""``SIGTERM`` on ``symfonic serve`` with workers on PostgreSQL, for real: the background runs it
was running end within the grace, and DBOS records them before it stops, so the log holds no
traceback (stopped first, DBOS logged "cannot schedule new futures after shutdown" for each)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.support.processes import Server
from tests.support.servers import free_port
from tests.workers.agents import FOLDER_VARIABLE, lines

REPO = Path(__file__).resolve().parents[2]
RUNS = 2


def stopped_output(server: Server) -> str:
    """Everything the server wrote, once it stopped (``SIGTERM`` already sent)."""
    try:
        assert server.process.wait(60) == 0, server.output
        while (line := server.lines.get(timeout=10)) is not None:
            server.output += line
    finally:
        server.stop()  # kills it if it still runs; closes its output either way
    return server.output


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_sigterm_with_runs_going_drains_them_and_logs_no_traceback(
        tmp_path: Path, postgres_url: str) -> None:
    (tmp_path / "gate").touch()  # the slow agent's runs wait while it exists
    port = free_port()
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    server = Server(tmp_path, "serve", "--app", "tests.workers.agents:app", "--port", str(port),
                    "--grace", "20",
                    env={"SYMFONIC_DATABASE_URL": postgres_url, "PYTHONPATH": path,
                         FOLDER_VARIABLE: str(tmp_path)})
    key = server.wait_for(r"API key:\s+(sfk_\S+)").group(1)
    server.wait_for("Uvicorn running on")
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                      headers={"Authorization": f"Bearer {key}"}) as client:
        for n in range(RUNS):
            started = client.post("/v1/agents/slow/runs", json={
                "input": f"run {n}", "session_id": f"s{n}", "background": True})
            assert started.status_code == 202, started.text
    deadline = time.monotonic() + 30
    while len(lines("running", tmp_path)) < RUNS:
        assert time.monotonic() < deadline, server.output
        time.sleep(0.05)
    server.process.send_signal(signal.SIGTERM)
    server.wait_for("Waiting for application shutdown")
    (tmp_path / "gate").unlink()  # the runs end while the server stops
    output = stopped_output(server)
    assert sorted(lines("ran", tmp_path)) == [f"run {n}" for n in range(RUNS)], output
    assert "Traceback" not in output, output
    assert "cannot schedule new futures" not in output, output
