"""Local stand-ins for the OpenAI (Responses, Chat Completions) and Anthropic (Messages) APIs.

Adapter tests must never reach a provider, yet must meet its wire format and its refusals. So the
official SDKs are pointed at this server on loopback, which answers from a script and checks each
request as the real API would::

    standin.enqueue(
        Turn(Reasoning("plan"), ToolCall("get_weather", {"city": "Oslo"}),
             usage=Usage(input_tokens=120, output_tokens=30, cached_tokens=64)),
        HttpFailure(429, retry_after="0"),
        MidStreamFailure(Turn(Text("partial answer")), after_deltas=2),   # or mode="drop"
    )
    client = openai.AsyncOpenAI(base_url=standin.openai_base_url, api_key="test")
    ...
    standin.requests[-1].body["input"]     # what the adapter sent

Each request that passes the checks takes the oldest entry, whichever API it is sent to.
"""

from tests.support.standin.app import create_app
from tests.support.standin.script import Api, IssuedReasoning, RecordedRequest, Script
from tests.support.standin.server import StandIn, serve_standin
from tests.support.standin.turns import (
    HttpFailure,
    MidStreamFailure,
    Reasoning,
    ScriptEntry,
    Text,
    ToolCall,
    Turn,
    Usage,
)

__all__ = [
    "Api",
    "HttpFailure",
    "IssuedReasoning",
    "MidStreamFailure",
    "Reasoning",
    "RecordedRequest",
    "Script",
    "ScriptEntry",
    "StandIn",
    "Text",
    "ToolCall",
    "Turn",
    "Usage",
    "create_app",
    "serve_standin",
]
