"""The inbox's live stream, who answered, and ``/docs`` offline, over real HTTP."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from symfonic import Host, Scope
from symfonic.examples.support import support_agent
from symfonic.transports.http import inbox_events
from tests.support.agents import SECRET
from tests.support.clients import paused_run, sign_in
from tests.support.servers import LiveServer


class Events:
    """The frames of an open ``/inbox/events`` stream, read as they come."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines = response.aiter_lines()

    async def next(self, within: float = 10.0) -> tuple[str, dict[str, Any]]:
        return await asyncio.wait_for(self._frame(), within)

    async def _frame(self) -> tuple[str, dict[str, Any]]:
        name, data = "", ""
        async for line in self._lines:
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = line.removeprefix("data: ")
            elif line == "" and name:
                return name, json.loads(data)
        raise AssertionError("the stream ended")


@pytest.fixture
async def signed_in(server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as browser:
        await sign_in(browser, server)
        yield browser


def key_id(server: LiveServer, name: str) -> str:
    key = server.keys.authenticate(server.secrets[name])
    assert key is not None
    return key.id


async def test_the_stream_needs_an_inbox_session(client: httpx.AsyncClient,
                                                 server: LiveServer) -> None:
    anonymous = await client.get("/inbox/events")
    assert anonymous.status_code == 401 and anonymous.json()["error"] == "unauthorized"
    with_a_key = await client.get("/inbox/events", headers=server.auth("acme"))  # not a session
    assert with_a_key.status_code == 401
    forged = await client.get("/inbox/events", headers={"Cookie": "symfonic_inbox=made-up"})
    assert forged.status_code == 401


@pytest.mark.e2e
async def test_the_stream_sends_the_tenants_new_and_answered_pauses_only(
        signed_in: httpx.AsyncClient, client: httpx.AsyncClient, server: LiveServer) -> None:
    before = await paused_run(client, server, text="Refund order 7.")
    async with signed_in.stream("GET", "/inbox/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = Events(response)
        name, snapshot = await events.next()
        assert name == "snapshot" and len(snapshot["pending"]) == 1

        foreign = await paused_run(client, server, tenant="globex")
        mine = await paused_run(client, server, text="Refund order 1234.")
        name, new = await events.next()
        assert name == "pause" and new["token"] == mine
        assert f'data-token="{mine}"' in new["html"] and 'name="csrf"' in new["html"]
        assert "Refund order 1234." in new["html"]  # its conversation comes with it

        resumed = await client.post(f"/v1/pauses/{before}/resume", headers=server.auth("acme"),
                                    json={"answer": {"approved": False, "reason": "<b>no</b>"}})
        assert resumed.json()["status"] == "completed"
        name, gone = await events.next()
        assert name == "gone" and gone["token"] == before and gone["status"] == "completed"
        assert "Rejected: &lt;b&gt;no&lt;/b&gt;" in gone["row"]  # escaped, like the page
        assert f'data-key-id="{key_id(server, "acme")}"' in gone["row"]
        assert 'data-decision="rejected"' in gone["card"]
    seen = json.dumps([snapshot, new, gone])
    foreign_id = foreign.split(".")[1]
    assert foreign not in seen and foreign_id not in seen


@pytest.mark.e2e
async def test_the_stream_hears_pauses_made_by_other_processes(
        signed_in: httpx.AsyncClient, server: LiveServer, tmp_path: Path) -> None:
    """A pause stored by another host on the database (no ``on_pause`` here) arrives by the poll."""
    async with signed_in.stream("GET", "/inbox/events") as response:
        events = Events(response)
        assert (await events.next())[0] == "snapshot"
        async with Host.open(f"sqlite:///{tmp_path / 'symfonic.db'}", agents=[support_agent()],
                             secret=SECRET, clock=server.clock) as elsewhere:
            outcome = await elsewhere.agent("support", Scope(tenant="acme")).run(
                "Refund order 42.", session_id="worker-1")
        assert outcome.interrupt is not None
        name, new = await events.next(within=10)
        assert name == "pause" and new["token"] == outcome.interrupt.token


@pytest.mark.e2e
async def test_signing_out_ends_the_stream(signed_in: httpx.AsyncClient,
                                           server: LiveServer) -> None:
    page = (await signed_in.get("/inbox")).text
    csrf = re.findall(r'name="csrf" value="([^"]+)"', page)[0]
    async with signed_in.stream("GET", "/inbox/events") as response:
        events = Events(response)
        assert (await events.next())[0] == "snapshot"
        async with httpx.AsyncClient(base_url=server.url, cookies=signed_in.cookies) as other:
            assert (await other.post("/inbox/logout", data={"csrf": csrf})).status_code == 303
        assert (await events.next())[0] == "signed_out"


async def test_who_answered_is_stored_from_the_api_and_from_the_inbox(
        signed_in: httpx.AsyncClient, client: httpx.AsyncClient, server: LiveServer) -> None:
    by_api = await paused_run(client, server, text="Refund order 7.")
    by_inbox = await paused_run(client, server, text="Refund order 42.")
    writer = server.keys.issue("acme", label="ops desk")
    answered = await client.post(f"/v1/pauses/{by_api}/resume", json={"answer": {"approved": True}},
                                 headers={"Authorization": f"Bearer {writer}"})
    assert answered.status_code == 200
    csrf = re.findall(r'name="csrf" value="([^"]+)"', (await signed_in.get("/inbox")).text)[0]
    sent = await signed_in.post(f"/inbox/pauses/{by_inbox}", data={"decision": "approve",
                                                                   "csrf": csrf})
    assert sent.status_code == 303

    tickets = {t: server.served.call(server.host.continuation.ticket(t)) for t in (by_api, by_inbox)}
    writer_id = writer.split("_")[1]
    assert tickets[by_api].answered_by == writer_id
    assert tickets[by_inbox].answered_by == "inbox:" + key_id(server, "acme")  # its channel, its key
    history = (await signed_in.get("/inbox")).text.split('id="history"')[1]
    assert f'by <strong class="answerer" data-key-id="{writer_id}" title="API key {writer_id}">' \
           "ops desk</strong>" in history  # the label, the id kept on the element for an audit
    acme = key_id(server, "acme")
    assert f'data-key-id="{acme}" title="API key {acme}">key {acme}</strong>' in history


@pytest.mark.e2e
async def test_a_pause_pages_stream_follows_that_pause_until_its_turn_ends(
        signed_in: httpx.AsyncClient, client: httpx.AsyncClient, server: LiveServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    followed = await paused_run(client, server, text="Refund order 42.")
    other = await paused_run(client, server, text="Refund order 7.")
    async with signed_in.stream("GET", "/inbox/events", params={"pause": followed}) as response:
        assert response.status_code == 200
        events = Events(response)
        name, snapshot = await events.next()
        assert name == "snapshot" and len(snapshot["pending"]) == 1
        await client.post(f"/v1/pauses/{other}/resume", json={"answer": {"approved": True}},
                          headers=server.auth("acme"))  # another pause: not this stream's news
        await client.post(f"/v1/pauses/{followed}/resume", headers=server.auth("acme"),
                          json={"answer": {"approved": False, "reason": "a gift"}})
        name, gone = await events.next()
        assert name == "gone" and gone["token"] == followed and gone["status"] == "completed"
        assert gone["id"] == snapshot["pending"][0]
        assert "Rejected: a gift" in gone["card"] and "answered by <strong" in gone["card"]
        assert 'class="conversation"' in gone["card"] and "<details class=\"context\"" not in \
            gone["card"]  # the card as the pause's own page shows it: its conversation open

    monkeypatch.setattr(inbox_events, "POLL_SECONDS", 60.0)  # only the bell can wake it now
    rung = await paused_run(client, server, text="Refund order 1234.")
    async with signed_in.stream("GET", "/inbox/events", params={"pause": rung}) as response:
        events = Events(response)
        assert (await events.next())[0] == "snapshot"
        csrf = re.findall(r'name="csrf" value="([^"]+)"', (await signed_in.get("/inbox")).text)[0]
        async with httpx.AsyncClient(base_url=server.url, cookies=signed_in.cookies) as tab_a:
            sent = await tab_a.post(f"/inbox/pauses/{rung}", data={"decision": "approve",
                                                                    "csrf": csrf})
        assert sent.status_code == 303
        name, gone = await events.next(within=5)  # well before the next poll
        assert name == "gone" and gone["token"] == rung and gone["status"] != "outstanding"


async def test_a_pause_pages_stream_is_refused_for_another_tenants_pause(
        signed_in: httpx.AsyncClient, client: httpx.AsyncClient, server: LiveServer) -> None:
    foreign = await paused_run(client, server, tenant="globex")
    refused = await signed_in.get("/inbox/events", params={"pause": foreign})
    assert refused.status_code == 404 and refused.json()["error"] == "unknown_pause"
    garbage = await signed_in.get("/inbox/events", params={"pause": "garbage"})
    assert garbage.status_code == 400 and garbage.json()["error"] == "malformed_token"


@pytest.mark.e2e
async def test_a_pause_pages_stream_says_when_its_pause_expires(
        signed_in: httpx.AsyncClient, client: httpx.AsyncClient, server: LiveServer) -> None:
    token = await paused_run(client, server)
    async with signed_in.stream("GET", "/inbox/events", params={"pause": token}) as response:
        events = Events(response)
        assert (await events.next())[0] == "snapshot"
        server.clock.advance(25 * 3600)
        name, gone = await events.next()
        assert name == "gone" and gone["status"] == "expired" and gone["card"] is None
    again = await signed_in.get("/inbox/events", params={"pause": token})
    assert again.status_code == 410 and again.json()["error"] == "pause_expired"


async def test_the_api_docs_reference_nothing_outside_the_service(client: httpx.AsyncClient) -> None:
    docs = await client.get("/docs")
    assert docs.status_code == 200
    assert "http://" not in docs.text and "https://" not in docs.text and "//cdn" not in docs.text
    assets = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    assert any(a.endswith("swagger-ui.css") for a in assets)
    for asset in assets:
        assert asset.startswith("/"), asset
        fetched = await client.get(asset)
        assert fetched.status_code == 200, asset
        assert len(fetched.content) > 0
    assert "'/openapi.json'" in docs.text
    assert (await client.get("/openapi.json")).status_code == 200
    assert (await client.get("/redoc")).status_code == 404  # no offline ReDoc: not served
