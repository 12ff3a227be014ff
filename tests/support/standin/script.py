"""The stand-in's shared state: the queue of scripted replies, the request log, and its memory.

The app runs on the server thread while a test enqueues and reads from its own thread, so every
access goes through one lock. The memory of issued reasoning is what lets the server refuse a
tampered or invented reasoning item the way the real APIs refuse a bad signature.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tests.support.standin.turns import ScriptEntry

Api = Literal["responses", "chat", "anthropic"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it, whatever it answered."""

    api: Api
    path: str
    headers: Mapping[str, str]
    """Header names lower-cased; the last value wins when a name repeats."""
    body: Mapping[str, Any]
    """The parsed JSON object (empty when the body was not one); ``Any`` because it is what the
    client sent, for tests to index freely."""
    status: int
    """The HTTP status the server answered (200 even for a stream that later failed)."""


@dataclass(frozen=True)
class IssuedReasoning:
    """An OpenAI reasoning item as issued: what must come back, byte for byte."""

    item_id: str
    encrypted_content: str
    stored: bool
    """Whether the response was created with ``store`` on: only then may the item come back by id alone."""


class Script:
    """What the server answers next, what it received, and the reasoning it handed out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[ScriptEntry] = deque()
        self._requests: list[RecordedRequest] = []
        self._reasoning: dict[str, IssuedReasoning] = {}
        self._thinking: dict[str, str] = {}

    def enqueue(self, *entries: ScriptEntry) -> None:
        """Append replies; each request that passes the checks takes the oldest one, whatever its API."""
        with self._lock:
            self._queue.extend(entries)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, api: Api) -> list[RecordedRequest]:
        return [request for request in self.requests if request.api == api]

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self._requests:
                raise LookupError("the stand-in has received no request")
            return self._requests[-1]

    def reset(self) -> None:
        """Forget everything, so a server shared by several tests starts each one clean."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._reasoning.clear()
            self._thinking.clear()

    # Used by the app, on the server thread.

    def take(self) -> ScriptEntry | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def issue_reasoning(self, issued: IssuedReasoning) -> None:
        with self._lock:
            self._reasoning[issued.item_id] = issued

    def issued_reasoning(self, item_id: str) -> IssuedReasoning | None:
        with self._lock:
            return self._reasoning.get(item_id)

    def issue_thinking(self, signature: str, thinking: str) -> None:
        with self._lock:
            self._thinking[signature] = thinking

    def issued_thinking(self, signature: str) -> str | None:
        """The thinking text a signature was issued for, or ``None`` if this server never issued it."""
        with self._lock:
            return self._thinking.get(signature)
