"""The one mapping from the OpenAI SDK's failures to symfonic's model errors, per status and per
way a stream can fail, for both adapters."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from symfonic import Message
from symfonic.kernel.model import Model, complete
from symfonic.models import (
    ModelAuthFailed,
    ModelRateLimited,
    ModelRejected,
    ModelUnavailable,
    ProviderError,
    TextChunk,
)
from symfonic.models.openai import OpenAIChatModel, OpenAIResponsesModel
from symfonic.models.openai.chat import read_chat_stream
from symfonic.models.openai.common import ClientSlot, model_error, stream_cut, stream_error
from symfonic.models.openai.responses import read_response_stream
from tests.support.standin import HttpFailure, MidStreamFailure, StandIn, Text, Turn

HELLO = [Message("user", "Hello")]
ADAPTERS: dict[str, Callable[[openai.AsyncOpenAI], Model]] = {
    "responses": lambda client: OpenAIResponsesModel("gpt-5", client=client),
    "chat": lambda client: OpenAIChatModel("gpt-4.1", client=client),
}
PROVIDER_NAMES = {"responses": "openai", "chat": "openai-chat"}
EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
REQUEST = httpx2.Request("POST", "https://api.openai.com/v1/responses")


@pytest.mark.parametrize("api", ["responses", "chat"])
@pytest.mark.parametrize(("status", "expected"), [
    (400, ModelRejected), (401, ModelAuthFailed), (403, ModelAuthFailed), (404, ModelRejected),
    (408, ModelUnavailable), (409, ModelRejected), (413, ModelRejected), (422, ModelRejected),
    (429, ModelRateLimited), (500, ModelUnavailable), (502, ModelUnavailable), (503, ModelUnavailable),
    (529, ModelUnavailable),
])
async def test_each_status_maps_to_its_error(standin: StandIn, openai_client: openai.AsyncOpenAI, api: str,
                                             status: int, expected: type[ProviderError]) -> None:
    standin.enqueue(HttpFailure(status, message=f"failed with {status}"))
    with pytest.raises(ProviderError) as raised:
        await complete(ADAPTERS[api](openai_client), HELLO, [])
    assert type(raised.value) is expected
    assert raised.value.status_code == status
    assert raised.value.provider == PROVIDER_NAMES[api]
    assert f"failed with {status}" in str(raised.value)
    assert isinstance(raised.value.__cause__, openai.APIStatusError)


@pytest.mark.parametrize("api", ["responses", "chat"])
@pytest.mark.parametrize(("status", "expected"), [(500, ModelUnavailable), (503, ModelUnavailable),
                                                  (429, ModelRateLimited), (400, ModelRejected)])
async def test_an_error_event_mid_stream_maps_by_its_type(standin: StandIn, openai_client: openai.AsyncOpenAI,
                                                          api: str, status: int,
                                                          expected: type[ProviderError]) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdef", pieces=3)), after_deltas=1, status=status))
    chunks: list[str] = []
    with pytest.raises(ProviderError) as raised:
        async for item in ADAPTERS[api](openai_client).stream(HELLO, []):
            if isinstance(item, TextChunk):
                chunks.append(item.text)
    assert type(raised.value) is expected
    assert raised.value.status_code is None  # the HTTP status was 200: the failure came later
    assert chunks == ["ab"]


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_a_dropped_stream_is_unavailable(standin: StandIn, openai_client: openai.AsyncOpenAI,
                                               api: str) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdef", pieces=3)), after_deltas=2, mode="drop"))
    with pytest.raises(ModelUnavailable, match="Connection error"):
        await complete(ADAPTERS[api](openai_client), HELLO, [])


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_a_server_that_is_not_there_is_unavailable(api: str) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago, and nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="test", max_retries=0)
    try:
        with pytest.raises(ModelUnavailable):
            await complete(ADAPTERS[api](client), HELLO, [])
    finally:
        await client.close()


def test_timeouts_and_connection_failures_are_unavailable() -> None:
    timeout = model_error(openai.APITimeoutError(request=REQUEST), provider="openai")
    assert type(timeout) is ModelUnavailable and "timed out" in str(timeout)
    connection = model_error(openai.APIConnectionError(request=REQUEST), provider="openai")
    assert type(connection) is ModelUnavailable


@pytest.mark.parametrize(("code", "kind", "expected"), [
    ("rate_limit_exceeded", None, ModelRateLimited), (None, "tokens", ModelRateLimited),
    ("insufficient_quota", "insufficient_quota", ModelRateLimited),
    ("invalid_api_key", "invalid_request_error", ModelAuthFailed),
    ("context_length_exceeded", "invalid_request_error", ModelRejected),
    ("invalid_prompt", None, ModelRejected),
    ("server_error", None, ModelUnavailable), ("vector_store_timeout", None, ModelUnavailable),
    (None, None, ModelUnavailable), ("something_new", "mystery", ModelUnavailable),
])
def test_stream_failures_map_by_code_and_type(code: str | None, kind: str | None,
                                              expected: type[ProviderError]) -> None:
    error = model_error(stream_error(REQUEST, "broke", code=code, kind=kind), provider="openai")
    assert type(error) is expected and error.status_code is None and "broke" in str(error)
    cut = model_error(stream_cut(REQUEST, "ended early"), provider="openai")
    assert type(cut) is ModelUnavailable and "ended early" in str(cut)


def test_other_sdk_errors_are_rejections() -> None:
    assert type(model_error(openai.OpenAIError("misconfigured"), provider="openai")) is ModelRejected


async def events(*payloads: dict[str, Any]) -> AsyncIterator[Any]:
    for number, payload in enumerate(payloads):
        yield EVENTS.validate_python({"sequence_number": number, **payload})


def response(status: str, **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-5", "output": [],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "status": status, **extra}


TEXT_DELTA = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
              "delta": "Hi", "logprobs": []}


@pytest.mark.parametrize(("code", "expected"), [("rate_limit_exceeded", ModelRateLimited),
                                                ("server_error", ModelUnavailable),
                                                ("invalid_prompt", ModelRejected)])
async def test_a_failed_response_event_maps_by_its_code(code: str, expected: type[ProviderError]) -> None:
    failed = {"type": "response.failed",
              "response": response("failed", error={"code": code, "message": "no"})}
    chunks: list[Any] = []
    with pytest.raises(openai.APIError) as raised:
        async for item in read_response_stream(events(TEXT_DELTA, failed), REQUEST):
            chunks.append(item)
    assert chunks == [TextChunk("Hi")]
    assert type(model_error(raised.value, provider="openai")) is expected


async def test_a_flat_error_event_and_a_stream_without_its_end_are_unavailable() -> None:
    flat = {"type": "error", "code": "server_error", "message": "boom", "param": None}
    with pytest.raises(openai.APIError) as raised:
        [item async for item in read_response_stream(events(TEXT_DELTA, flat), REQUEST)]
    assert type(model_error(raised.value, provider="openai")) is ModelUnavailable
    with pytest.raises(openai.APIConnectionError, match="before the response completed") as cut:
        [item async for item in read_response_stream(events(TEXT_DELTA), REQUEST)]
    assert type(model_error(cut.value, provider="openai")) is ModelUnavailable


async def test_a_chat_stream_without_a_finish_reason_is_unavailable() -> None:
    async def chunks() -> AsyncIterator[ChatCompletionChunk]:
        yield ChatCompletionChunk.model_validate({
            "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]})

    with pytest.raises(openai.APIConnectionError, match="before the reply finished") as raised:
        [item async for item in read_chat_stream(chunks(), REQUEST)]
    assert type(model_error(raised.value, provider="openai-chat")) is ModelUnavailable


async def test_a_missing_key_is_an_auth_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelAuthFailed, match="OPENAI_API_KEY"):
        ClientSlot(None, provider="openai").get()
    with pytest.raises(ModelAuthFailed):
        await complete(OpenAIChatModel("llama3.1"), HELLO, [])


async def test_a_client_built_from_the_environment_is_closed_by_the_adapter(
        standin: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", standin.openai_base_url)
    standin.enqueue(Turn(Text("Hi.")))
    model = OpenAIResponsesModel("gpt-5")
    try:
        assert (await complete(model, HELLO, [])).text == "Hi."
    finally:
        await model.close()
    assert standin.last_request.headers["authorization"] == "Bearer from-env"


def test_without_the_sdk_the_import_names_the_extra() -> None:
    probe = ("import sys; sys.modules['openai'] = None\n"
             "import symfonic\n"
             "try:\n    import symfonic.models.openai\n"
             "except ImportError as e:\n    print('import:', e)\n"
             "try:\n    symfonic.models.infer_model('openai:gpt-5')\n"
             "except ImportError as e:\n    print('name:', e)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    line = "the OpenAI adapters need their extra: pip install 'symfonic-runtime[openai]'"
    assert result.stdout.splitlines() == [f"import: {line}", f"name: {line}"]
