"""The contract between the generic request pipeline (``app``) and each wire protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from tests.support.standin.script import Api, Script
from tests.support.standin.turns import MidStreamFailure, Turn
from tests.support.standin.wire import SseFrame


@dataclass(frozen=True)
class Rendered:
    """One turn in both of a protocol's forms, built together so they cannot disagree."""

    body: dict[str, object]
    """The non-streaming JSON reply."""
    frames: list[SseFrame]
    """The complete SSE stream, terminator included."""


class WireProtocol(Protocol):
    api: Api

    def check_request(self, body: dict[str, object], headers: Mapping[str, str], script: Script) -> None:
        """Raise ``Rejected`` where the real API refuses the request."""

    def error_body(self, status: int, message: str | None, *, request_id: str, error_type: str | None = None,
                   param: str | None = None, code: str | None = None) -> dict[str, object]:
        """The provider's JSON error body for an HTTP error."""

    def render(self, turn: Turn, body: dict[str, object], script: Script) -> Rendered:
        """Build the reply to ``body``, remembering any reasoning it hands out."""

    def stream_error(self, failure: MidStreamFailure, sent: Sequence[SseFrame]) -> list[SseFrame]:
        """The provider's in-stream error frames, sent after ``sent``."""

    def response_headers(self, request_id: str) -> dict[str, str]:
        """Headers the provider puts on every reply: its request id, under the provider's name."""
