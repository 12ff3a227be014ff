"""Fixtures of the model tests: the provider stand-in on loopback, and SDK clients pointed at it.

One server serves the whole session (starting uvicorn per test would only add time); each test
gets it with an empty script, an empty request log and no remembered reasoning.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anthropic
import openai
import pytest

from tests.support.standin import StandIn, serve_standin

CLIENT_TIMEOUT = 30.0


@pytest.fixture(scope="session")
def standin_server() -> Iterator[StandIn]:
    with serve_standin() as server:
        yield server


@pytest.fixture
def standin(standin_server: StandIn) -> Iterator[StandIn]:
    """The stand-in, reset for this test: ``standin.enqueue(...)``, then read ``standin.requests``."""
    standin_server.script.reset()
    yield standin_server
    standin_server.script.reset()


@pytest.fixture
async def openai_client(standin: StandIn) -> AsyncIterator[openai.AsyncOpenAI]:
    """An official client on the stand-in; no retries, so each scripted failure is seen once."""
    client = openai.AsyncOpenAI(base_url=standin.openai_base_url, api_key="test", max_retries=0,
                                timeout=CLIENT_TIMEOUT)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def anthropic_client(standin: StandIn) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """An official client on the stand-in; no retries, so each scripted failure is seen once."""
    client = anthropic.AsyncAnthropic(base_url=standin.anthropic_base_url, api_key="test", max_retries=0,
                                      timeout=CLIENT_TIMEOUT)
    try:
        yield client
    finally:
        await client.close()
