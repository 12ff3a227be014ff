"""Every way a Messages API call fails, mapped onto symfonic's typed model errors.

HTTP errors are classed by status; an ``error`` event in the middle of a stream (which arrives on
an HTTP 200) by its error type; transport failures and a stream cut short are unavailability.
"""

from __future__ import annotations

import socket
from pathlib import Path

import anthropic
import httpx2
import pytest

from symfonic import Agent, AgentSpec, Message, Scope
from symfonic.models import (
    ModelAuthFailed,
    ModelRateLimited,
    ModelRejected,
    ModelUnavailable,
    ProviderError,
    complete,
)
from symfonic.models.anthropic import AnthropicModel, to_model_error
from symfonic.models.anthropic.stream import StreamReader
from tests.support.standin import HttpFailure, MidStreamFailure, StandIn, Text, Turn

MODEL = "claude-standin"
HELLO = [Message("user", "hello")]
Client = anthropic.AsyncAnthropic


async def _ask(client: Client) -> None:
    await complete(AnthropicModel(MODEL, client=client), HELLO, [])


@pytest.mark.parametrize(("status", "expected"), [
    (400, ModelRejected), (401, ModelAuthFailed), (402, ModelRejected), (403, ModelAuthFailed),
    (404, ModelRejected), (413, ModelRejected), (429, ModelRateLimited), (500, ModelUnavailable),
    (503, ModelUnavailable), (504, ModelUnavailable), (529, ModelUnavailable),
])
async def test_an_http_error_is_classed_by_its_status(standin: StandIn, anthropic_client: Client, status: int,
                                                      expected: type[ProviderError]) -> None:
    standin.enqueue(HttpFailure(status))
    with pytest.raises(ProviderError) as failed:
        await _ask(anthropic_client)
    assert type(failed.value) is expected
    assert (failed.value.status_code, failed.value.provider) == (status, "anthropic")
    assert str(status) in str(failed.value)


async def test_a_context_too_long_is_rejected(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(HttpFailure(400, message="prompt is too long: 210000 tokens > 200000 maximum"))
    with pytest.raises(ModelRejected, match="prompt is too long"):
        await _ask(anthropic_client)


@pytest.mark.parametrize(("status", "expected"), [
    (529, ModelUnavailable), (500, ModelUnavailable), (504, ModelUnavailable),
    (429, ModelRateLimited), (400, ModelRejected), (401, ModelAuthFailed),
])
async def test_an_error_event_mid_stream_is_classed_by_its_type(
        standin: StandIn, anthropic_client: Client, status: int, expected: type[ProviderError]) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdef", pieces=3)), after_deltas=1, status=status))
    with pytest.raises(ProviderError) as failed:
        await _ask(anthropic_client)
    assert type(failed.value) is expected
    assert failed.value.status_code is None  # the HTTP status was 200; the error came in the body
    assert "mid-stream" in str(failed.value)


async def test_a_dropped_connection_mid_stream_is_unavailable(standin: StandIn,
                                                              anthropic_client: Client) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdef", pieces=3)), after_deltas=1, mode="drop"))
    with pytest.raises(ModelUnavailable, match="broke mid-stream") as failed:
        await _ask(anthropic_client.with_options(max_retries=2))
    transport = failed.value.__cause__  # raw before SDK 2.17, wrapped as APIConnectionError from then on
    if isinstance(transport, anthropic.APIConnectionError):
        transport = transport.__cause__
    assert isinstance(transport, httpx2.HTTPError)
    assert len(standin.requests) == 1  # nothing is sent again once output has streamed


async def test_an_unreachable_server_is_unavailable() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with anthropic.AsyncAnthropic(base_url=f"http://127.0.0.1:{port}", api_key="test",
                                        max_retries=0) as client:
        with pytest.raises(ModelUnavailable, match="could not be reached"):
            await _ask(client)


async def test_missing_credentials_fail_as_auth(standin: StandIn, monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_CONFIG_DIR",
                 "ANTHROPIC_FEDERATION_RULE_ID", "ANTHROPIC_IDENTITY_TOKEN", "ANTHROPIC_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", standin.anthropic_base_url)
    model = AnthropicModel(MODEL)  # no key needed to construct it
    try:
        with pytest.raises(ModelAuthFailed, match="ANTHROPIC_API_KEY"):
            await complete(model, HELLO, [])
    finally:
        await model.aclose()
    assert standin.requests == []


async def test_a_failed_run_names_the_error_type(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(HttpFailure(400), HttpFailure(401),
                    MidStreamFailure(Turn(Text("abcdef")), after_deltas=1, status=529))
    agent = Agent(AgentSpec(name="desk", model=AnthropicModel(MODEL, client=anthropic_client)),
                  scope=Scope(tenant="acme"))
    outcomes = [await agent.run("hi", session_id=f"s{n}") for n in range(3)]
    assert [(o.status, o.error_type) for o in outcomes] == [
        ("failed", "ModelRejected"), ("failed", "ModelAuthFailed"), ("failed", "ModelUnavailable")]


def _request() -> httpx2.Request:
    return httpx2.Request("POST", "https://api.anthropic.com/v1/messages")


def test_timeouts_and_connection_errors_are_unavailable() -> None:
    assert isinstance(to_model_error(anthropic.APITimeoutError(request=_request())), ModelUnavailable)
    assert isinstance(to_model_error(anthropic.APIConnectionError(request=_request())), ModelUnavailable)
    assert isinstance(to_model_error(httpx2.ReadTimeout("read timed out")), ModelUnavailable)


def test_an_unknown_error_type_mid_stream_is_unavailable() -> None:
    response = httpx2.Response(200, request=_request())
    body = {"type": "error", "error": {"type": "something_new", "message": "?"}}
    error = anthropic.APIStatusError("mid-stream", response=response, body=body)
    assert type(to_model_error(error)) is ModelUnavailable


def test_errors_that_are_not_the_providers_are_left_alone() -> None:
    assert to_model_error(ValueError("a bug")) is None
    assert to_model_error(TypeError("unsupported operand")) is None


def test_a_stream_that_ends_before_message_stop_is_unavailable() -> None:
    with pytest.raises(ModelUnavailable, match="ended before the message was complete"):
        StreamReader().reply()
