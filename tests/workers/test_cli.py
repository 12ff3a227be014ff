"""The commands: ``symfonic serve`` runs background turns itself on the SQLite default (no separate
worker), and ``symfonic worker`` refuses what it cannot run with one plain line and its exit
code (``symfonic.cli.exits``)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx

from tests.support.apps import APPS
from tests.support.processes import SYMFONIC, Server, refund_entries, refused, symfonic
from tests.support.servers import free_port

NO_DBOS = [SYMFONIC[0], "-c", "import sys; sys.modules['dbos'] = None; "
           "from symfonic.cli import main; main()"]


def test_serve_on_sqlite_runs_background_turns_without_a_worker(tmp_path: Path) -> None:
    port = free_port()
    server = Server(tmp_path, "serve", "--port", str(port))
    try:
        key = server.wait_for(r"inbox:\s+\S+#key=(sfk_\S+)").group(1)
        server.wait_for("Uvicorn running on")
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers,
                          timeout=30) as client:
            started = client.post("/v1/agents/support/runs", json={
                "input": "Please refund order 42.", "session_id": "s1", "background": True})
            assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            client.get(f"/v1/runs/{run_id}/events")  # ends with the run
            run = client.get(f"/v1/runs/{run_id}").json()
            assert run["status"] == "paused", run
            token = run["outcome"]["interrupt"]["token"]
            resumed = client.post(f"/v1/pauses/{token}/resume", json={
                "answer": {"approved": True}, "background": True})
            assert resumed.status_code == 202, resumed.text
            resumed_id = resumed.json()["run_id"]
            client.get(f"/v1/runs/{resumed_id}/events")
            # The last event is published just before DBOS records the workflow's end: on a
            # loaded machine the status may still say running for a moment after the stream.
            deadline = time.monotonic() + 10
            while (done := client.get(f"/v1/runs/{resumed_id}").json())["status"] == "running":
                assert time.monotonic() < deadline, done
                time.sleep(0.05)
            assert done["status"] == "completed", done
    finally:
        assert server.stop() in (0, 130), server.output
    assert (tmp_path / ".symfonic" / "symfonic.dbos.sqlite").exists()
    assert len(refund_entries(tmp_path)) == 1


def test_worker_refusals_are_one_line_with_their_exit_code(tmp_path: Path) -> None:
    (tmp_path / "apps.py").write_text(APPS)
    refused(symfonic(tmp_path, "worker", command=NO_DBOS, check=False), 3,
            "pip install 'symfonic-runtime[workers]'")
    refused(symfonic(tmp_path, "worker", "--url", "memory://", check=False), 3,
            "needs a SQLite or PostgreSQL database", "memory://")
    refused(symfonic(tmp_path, "worker", "--url", "mysql://db/x", check=False), 3,
            "unsupported database URL")
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    refused(symfonic(tmp_path, "worker", "--url",
                     f"postgresql://nobody@127.0.0.1:{port}/x?timeout=1", check=False), 6,
            "the store is unreachable")
    refused(symfonic(tmp_path, "worker", "--app", "apps:missing", check=False), 3,
            "has no attribute 'missing'")
