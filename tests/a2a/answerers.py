"""A process that answers one A2A task several times at once, through its own server.

``python -m tests.a2a.answerers DATABASE CLOCK KEY TASK COUNT``: serves the support agent on
``DATABASE`` (the keys are the database's; the hosts' clock stands at ``CLOCK``), prints
``ready`` once listening, waits for a line on stdin (so that every process answers at the same
moment), sends ``COUNT`` concurrent answers to ``TASK`` through the official client, prints each
outcome (the task's final state, or the A2A error's ``data.error``) as one JSON list, and stops.
"""

from __future__ import annotations

import asyncio
import json
import sys

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import TaskState
from a2a.utils.errors import A2AError

from symfonic import Host
from symfonic.examples.support import support_agent
from symfonic.transports.http import ApiKeys, create_app
from tests.a2a.helpers import data_message, send
from tests.support.agents import SECRET
from tests.support.servers import Served, loopback_socket


async def answer(url: str, key: str, task_id: str, count: int) -> list[str]:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        factory = ClientFactory(ClientConfig(httpx_client=http, streaming=False))
        clients = [await factory.create_from_url(f"{url}/a2a/support") for _ in range(count)]

        async def one(n: int) -> str:
            try:
                task = await send(clients[n], data_message({"approved": True}, task_id=task_id))
            except A2AError as refused:
                return str((refused.data or {}).get("error", type(refused).__name__))
            return str(TaskState.Name(task.status.state))

        try:
            return list(await asyncio.gather(*(one(n) for n in range(count))))
        finally:
            for client in clients:
                await client.close()


def main(database: str, clock: str, key: str, task_id: str, count: str) -> None:
    now = float(clock)
    host = Host.open(database, agents=[support_agent()], secret=SECRET, clock=lambda: now)
    served = Served(create_app(host, ApiKeys(), grace=5), loopback_socket())
    try:
        print("ready", flush=True)
        sys.stdin.readline()
        print(json.dumps(asyncio.run(answer(served.url, key, task_id, int(count)))), flush=True)
    finally:
        served.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
