"""Background runs over HTTP: 202 and a run id, the run read and watched (SSE, resumable), the
pause answered in the background, cancel, and the tenant boundary."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from tests.workers.agents import lines

SECRET = "a-long-random-secret-for-http"


def frames(text: str) -> list[dict[str, str]]:
    parsed = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        parsed.append(fields)
    return parsed


async def test_a_background_run_is_queued_watched_answered_and_completes(
        served: tuple[str, dict[str, dict[str, str]]]) -> None:
    url, headers = served
    acme, globex = headers["acme"], headers["globex"]
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        started = await client.post("/v1/agents/support/runs", headers=acme, json={
            "input": "refund order 42", "session_id": "s1", "background": True})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        assert started.json()["run_url"] == f"{url}/v1/runs/{run_id}"

        # the whole stream, then again from the second event on (Last-Event-ID)
        watched = await client.get(f"/v1/runs/{run_id}/events", headers=acme)
        events = frames(watched.text)
        assert events[0]["event"] == "run_started"
        assert events[-2]["event"] == "paused" and events[-1]["event"] == "status"
        again = frames((await client.get(f"/v1/runs/{run_id}/events", headers={
            **acme, "Last-Event-ID": "1"})).text)
        assert [e.get("id") for e in again[:-1]] == [e.get("id") for e in events[1:-1]]

        run = (await client.get(f"/v1/runs/{run_id}", headers=acme)).json()
        assert run["status"] == "paused" and run["agent"] == "support"
        token = run["outcome"]["interrupt"]["token"]
        assert json.loads(events[-1]["data"])["status"] == "paused"

        # another tenant knows nothing of the run
        for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/events"):
            assert (await client.get(path, headers=globex)).status_code == 404
        assert (await client.post(f"/v1/runs/{run_id}/cancel", headers=globex)).status_code == 404

        invalid = await client.post(f"/v1/pauses/{token}/resume", headers=acme,
                                    json={"answer": {"approved": "maybe"}, "background": True})
        assert invalid.status_code == 422  # checked before anything is queued
        resumed = await client.post(f"/v1/pauses/{token}/resume", headers=acme,
                                    json={"answer": {"approved": True}, "background": True})
        assert resumed.status_code == 202, resumed.text
        twice = await client.post(f"/v1/pauses/{token}/resume", headers=acme,
                                  json={"answer": {"approved": True}, "background": True})
        assert twice.status_code == 409
        resumed_id = resumed.json()["run_id"]
        done = frames((await client.get(f"/v1/runs/{resumed_id}/events", headers=acme)).text)
        assert done[-2]["event"] == "completed"
        final = (await client.get(f"/v1/runs/{resumed_id}", headers=acme)).json()
        assert final["status"] == "completed"
        assert final["outcome"]["output"] == "Done: refunded 59.90 on 42"
        assert (await client.post(f"/v1/runs/{resumed_id}/cancel", headers=acme)).json() == {
            "cancelled": False}
    assert lines("tools") == ["lookup 42", "refund 42"]


async def test_a_queued_run_is_cancelled(served: tuple[str, dict[str, dict[str, str]]],
                                         tmp_path: Path) -> None:
    url, headers = served
    (tmp_path / "gate").touch()
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        ids = []
        for n in range(3):  # two run (the worker's two slots), the third waits
            response = await client.post("/v1/agents/slow/runs", headers=headers["acme"], json={
                "input": f"n{n}", "session_id": f"s{n}", "background": True})
            ids.append(response.json()["run_id"])
        states = [(await client.get(f"/v1/runs/{i}", headers=headers["acme"])).json()["status"]
                  for i in ids]
        queued = ids[states.index("queued")] if "queued" in states else ids[-1]
        cancel = await client.post(f"/v1/runs/{queued}/cancel", headers=headers["acme"])
        assert cancel.json() == {"cancelled": True}
        (tmp_path / "gate").unlink()
        run = (await client.get(f"/v1/runs/{queued}", headers=headers["acme"])).json()
        assert run["status"] == "cancelled"
        for other in (i for i in ids if i != queued):
            frames((await client.get(f"/v1/runs/{other}/events", headers=headers["acme"])).text)
            # The stream ends once the turn is stored; DBOS records the workflow's end just after.
            for _ in range(300):
                status = (await client.get(f"/v1/runs/{other}", headers=headers["acme"])).json()[
                    "status"]
                if status != "running":
                    break
                await asyncio.sleep(0.05)
            assert status == "completed"
