"""Keys live in the store: a running server accepts a key added elsewhere on its first request,
and refuses one revoked elsewhere within a second."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import httpx
import pytest

from tests.support.processes import SYMFONIC_SCRIPT
from tests.support.servers import Serving, free_port, spawn

SEEN_WITHIN = 1.5
"""The refresh polls every 0.5 s; a second and a half leaves room for a loaded test machine."""


@pytest.fixture
def env(tmp_path: Path, refunds: Path) -> dict[str, str]:
    clean = {**os.environ, "COLUMNS": "400"}
    for name in ("SYMFONIC_DATABASE_URL", "SYMFONIC_SECRET", "SYMFONIC_API_KEYS",
                 "SYMFONIC_WEBHOOK_URLS", "SYMFONIC_WEBHOOK_SECRET"):
        clean.pop(name, None)
    return clean


async def cli(cwd: Path, env: dict[str, str], *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        SYMFONIC_SCRIPT, *args, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, (out + err).decode()
    return out.decode().strip()


async def status_of(server: Serving, key: str) -> int:
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        answer = await client.get("/v1/pauses", headers={"Authorization": f"Bearer {key}"})
        return answer.status_code


async def seconds_until(servers: list[Serving], key: str, status: int) -> float:
    """Seconds until every server answers ``key`` with ``status``; fails past the bound."""
    started = time.monotonic()
    while True:
        if [await status_of(s, key) for s in servers] == [status] * len(servers):
            return time.monotonic() - started
        assert time.monotonic() - started < SEEN_WITHIN, f"not {status} within {SEEN_WITHIN}s"
        await asyncio.sleep(0.05)


@pytest.mark.e2e
async def test_a_key_added_by_the_cli_counts_at_once_and_revoked_within_a_second(
        tmp_path: Path, env: dict[str, str]) -> None:
    server = await spawn([SYMFONIC_SCRIPT, "serve", "--port", str(free_port())], tmp_path, env)
    try:
        assert await status_of(server, server.key) == 200
        key = await cli(tmp_path, env, "keys", "add", "--tenant", "acme")
        assert await status_of(server, key) == 200  # at once: an unknown key reloads the view
        assert "revoked" in await cli(tmp_path, env, "keys", "revoke", key.split("_")[1])
        await seconds_until([server], key, 401)
        assert await status_of(server, server.key) == 200  # the others stay
    finally:
        await server.stop()


@pytest.mark.e2e
async def test_a_key_never_added_stays_refused(tmp_path: Path, env: dict[str, str]) -> None:
    server = await spawn([SYMFONIC_SCRIPT, "serve", "--port", str(free_port())], tmp_path, env)
    try:
        with pytest.raises(AssertionError, match="within"):
            await seconds_until([server], "sfk_000000000000_" + "x" * 43, 200)
    finally:
        await server.stop()


@pytest.mark.e2e
@pytest.mark.postgres
async def test_two_servers_on_one_postgresql_see_the_same_keys(
        tmp_path: Path, env: dict[str, str], postgres_url: str) -> None:
    env = {**env, "SYMFONIC_DATABASE_URL": postgres_url}
    servers = [await spawn([SYMFONIC_SCRIPT, "serve", "--port", str(free_port())], tmp_path, env)
               for _ in range(2)]
    try:
        key = await cli(tmp_path, env, "keys", "add", "--tenant", "acme", "--url", postgres_url)
        assert [await status_of(s, key) for s in servers] == [200, 200]
        await cli(tmp_path, env, "keys", "revoke", key.split("_")[1], "--url", postgres_url)
        await seconds_until(servers, key, 401)
        # Each server's development key is in the store too, so both accept both, until one stops.
        await seconds_until(servers, servers[0].key, 200)
        await seconds_until(servers, servers[1].key, 200)
        await servers[0].stop()
        await seconds_until(servers[1:], servers[0].key, 401)
    finally:
        for server in servers:
            await server.stop()
