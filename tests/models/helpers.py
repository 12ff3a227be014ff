"""Reading a stream as raw SSE through the SDKs' ``with_streaming_response``, to check the wire
itself (event order, field shapes) rather than what a stream helper made of it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel

from symfonic import Agent, RunEvent, tool
from tests.support.standin import ToolCall


async def sse_events(lines: AsyncIterator[str]) -> list[tuple[str | None, Any]]:
    """``(event name, parsed data)`` per SSE event; ``[DONE]`` comes back as the string itself."""
    events: list[tuple[str | None, Any]] = []
    name: str | None = None
    async for line in lines:
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data = line[len("data: "):]
            events.append((name, data if data == "[DONE]" else json.loads(data)))
            name = None
    return events


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def get_time(zone: str) -> str:
    """The time in a zone."""
    return f"noon in {zone}"


@tool
def get_news(topic: str) -> str:
    """The news on a topic."""
    return f"calm on {topic}"


class NotJsonCall(ToolCall):
    """A call whose arguments the model botched: the stand-in streams ``written`` as they are."""

    written: str = '{"city": "Par'

    @property
    def arguments_json(self) -> str:
        return self.written


class Forecast(BaseModel):
    """A forecast for one city."""

    city: str
    celsius: float


async def events_of(agent: Agent, text: str = "Weather in Paris?",
                    session: str = "s1") -> list[RunEvent]:
    """Every event of one turn of ``agent``."""
    return [event async for event in agent.stream(text, session_id=session)]
