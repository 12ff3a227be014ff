"""``symfonic serve --reload`` serves the user's app and restarts it when its code changes."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.support.processes import Server, symfonic
from tests.support.servers import free_port

LIVE = '''
from symfonic import AgentSpec, Host, ModelReply
from symfonic.models import FunctionModel


def app():
    reply = ModelReply(text="{text}")
    return Host.open(agents=[AgentSpec(name="live", model=FunctionModel(lambda m, t: reply))])
'''


@pytest.mark.e2e
def test_serve_reload_picks_up_a_change_to_the_app(tmp_path: Path) -> None:
    (tmp_path / "live.py").write_text(LIVE.format(text="version one"))
    port = free_port()
    server = Server(tmp_path, "serve", "--reload", "--app", "live:app", "--port", str(port))
    try:
        a2a = server.wait_for(r"A2A:\s+(\S+) ")
        assert a2a.group(1) == f"http://127.0.0.1:{port}/a2a/live", server.output
        key = server.ready("Application startup complete")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                          headers={"Authorization": f"Bearer {key}"}) as client:
            card = client.get("/a2a/live/.well-known/agent-card.json").json()
            assert card["supportedInterfaces"][0]["url"] == a2a.group(1), card
            first = client.post("/v1/agents/live/runs", json={"input": "hi"})
            assert first.json()["output"] == "version one", first.text

            (tmp_path / "live.py").write_text(LIVE.format(text="version two"))
            server.wait_for(r"detected changes in '?live\.py'?")
            server.wait_for("Application startup complete")
            second = client.post("/v1/agents/live/runs", json={"input": "hi"})
            assert second.json()["output"] == "version two", second.text

            # the reloaded process runs background turns too (an in-process worker, on SQLite)
            queued = client.post("/v1/agents/live/runs", json={"input": "hi", "background": True})
            assert queued.status_code == 202, queued.text
            run_url = queued.json()["run_url"]
            for _ in range(300):
                run = client.get(run_url).json()
                if run["status"] not in ("queued", "running"):
                    break
                time.sleep(0.05)
            assert (run["status"], run["outcome"]["output"]) == ("completed", "version two"), run
    finally:
        assert server.stop() in (0, 130), server.output
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        try:
            client.get("/v1/pauses")
        except httpx.ConnectError:
            pass
        else:
            raise AssertionError("the server still answers after it was stopped")
    assert "revoked" in symfonic(tmp_path, "keys", "list", "--tenant", "demo").stdout
