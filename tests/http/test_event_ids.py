"""A background run's event stream takes any ``Last-Event-ID``: one it cannot have sent (another
script's digits, a number past what the store can hold) streams from the start, and every stream
still ends with its ``status`` frame. Over real HTTP, on SQLite and on PostgreSQL (whose 32-bit
stream offsets were the ones to overflow)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from symfonic import Host
from symfonic.examples.support import support_agent
from symfonic.transports.http import ApiKeys, create_app
from symfonic.transports.http.sse import MAX_EVENT_ID, last_event_id
from symfonic.workers import WorkerOptions
from tests.support.agents import SECRET
from tests.support.servers import LiveServer, Served, loopback_socket

HOSTILE = ["²", "9223372036854775808", str(MAX_EVENT_ID + 1), "-1", "1e3", "12 3", "٣"]
"""Read as a server reads header bytes (Latin-1), ``²`` is the byte a client sends; ``٣`` (an Arabic
three) only comes as UTF-8, so the parser is checked with it directly."""


def _frames(text: str) -> list[dict[str, str]]:
    return [dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            for block in text.strip().split("\n\n")]


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: object,
           refunds: object) -> Iterator[tuple[str, dict[str, str]]]:
    """The service with an in-process worker on either store: its URL and an API key's headers."""
    url = (request.getfixturevalue("postgres_url") if request.param == "postgres"
           else f"sqlite:///{tmp_path}/symfonic.db")
    sock = loopback_socket()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    host = Host.open(url, agents=[support_agent()], secret=SECRET,
                     workers=WorkerOptions(concurrency=2))
    keys = ApiKeys()
    headers = {"Authorization": f"Bearer {keys.issue('acme')}"}
    server = Served(create_app(host, keys, public_url=base, grace=5), sock)
    try:
        yield base, headers
    finally:
        server.stop()


@pytest.mark.e2e
async def test_a_hostile_last_event_id_streams_from_the_start(
        served: tuple[str, dict[str, str]]) -> None:
    base, headers = served
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        started = await client.post("/v1/agents/support/runs", headers=headers, json={
            "input": "Please refund order 42.", "background": True})
        assert started.status_code == 202, started.text
        events = f"/v1/runs/{started.json()['run_id']}/events"
        whole = _frames((await client.get(events, headers=headers)).text)
        assert whole[0]["event"] == "run_started" and whole[-1]["event"] == "status"
        for hostile in [text.encode("latin-1") for text in HOSTILE[:-1]] + ["٣".encode()]:
            answered = await client.get(events, headers=[
                *[(name.encode(), value.encode()) for name, value in headers.items()],
                (b"Last-Event-ID", hostile)])
            assert answered.status_code == 200, (hostile, answered.text)
            assert _frames(answered.text) == whole, hostile
        # the largest id taken is past the run's end: nothing but the status frame
        last = _frames((await client.get(events, headers={
            **headers, "Last-Event-ID": str(MAX_EVENT_ID)})).text)
        assert [frame["event"] for frame in last] == ["status"]
        assert json.loads(last[0]["data"])["status"] == "paused"


@pytest.mark.parametrize(("header", "position"), [
    (None, 0), ("", 0), ("7", 7), (" 7 ", 7), (str(MAX_EVENT_ID), MAX_EVENT_ID),
    *[(hostile, 0) for hostile in HOSTILE]])
def test_only_ascii_digits_within_the_bound_are_a_position(header: str | None, position: int) -> None:
    assert last_event_id(header) == position


@pytest.mark.parametrize("header", [b"\xb2", b"9223372036854775808", b"1"])
async def test_the_mcp_stream_starts_over_rather_than_failing_on_any_last_event_id(
        server: LiveServer, header: bytes) -> None:
    """MCP's event stream keeps no events to replay (the server is stateless): any id opens it
    from the start; the SDK alone answered none (a 500)."""
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client, client.stream(
            "GET", "/mcp", headers=[(b"Authorization", server.auth("acme")["Authorization"].encode()),
                                    (b"Accept", b"text/event-stream"), (b"Last-Event-ID", header)],
    ) as opened:
        assert opened.status_code == 200
        assert opened.headers["content-type"].startswith("text/event-stream")
