"""Resuming a paused turn from its token alone: the contracts.

The kernel already ends a paused run with :class:`~symfonic.kernel.events.Paused`; this module is
the other half, continuing what a pause stopped. It is a service of the host rather than a method
of :class:`~symfonic.Agent`: resuming needs the token verified, the scope recovered from it and
the agent for that scope found, and only the host has all three.

The scope comes from the token, never from the caller. A pause is issued inside a scope and the
token carries it signed; an API that also took a scope would have two answers to "which tenant is
this", and whoever could name another one could resume another tenant's turn with its token.

Refusals, told apart by type so a transport never parses a message::

    UnknownPauseToken(LookupError)        the token names no resumable turn
    ├── PauseExpired                      ordinary: "this conversation moved on" (404/410)
    ├── MalformedPauseToken               a bug in whoever minted or carried it (400)
    │   ├── ForgedPauseToken              the signature does not verify (tampered, or another key)
    │   └── UnknownSigningKey             signed under a key id this host does not hold
    ├── PauseAlreadyResumed               a second resume (409); ``.status`` is the first's outcome
    └── PauseRevoked                      withdrawn by an operator or superseded
    ContinuationUnavailable(RuntimeError) this host cannot continue turns (no durable wiring)
    └── AgentNotServed                    the pausing agent is not registered on this host
    IncompatibleDefinition(RuntimeError)  the agent changed since it paused, and does not accept it
    AnswerInvalid(ValueError)             the answer fails the pause's schema; nothing was claimed
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from symfonic.agent import RunOutcome
from symfonic.capabilities.human.errors import AnswerInvalid
from symfonic.kernel.events import RunEvent
from symfonic.kernel.scope import Scope

__all__ = [
    "AgentNotServed", "AnswerInvalid", "ContinuationService", "ContinuationUnavailable",
    "ForgedPauseToken", "IncompatibleDefinition", "MalformedPauseToken", "PauseAlreadyResumed",
    "PauseExpired", "PauseRevoked", "PauseTicket", "UnknownPauseToken", "UnknownSigningKey",
]


class UnknownPauseToken(LookupError):
    """The token names no resumable turn.

    One family, several types, because the right response differs: an expired token is an
    ordinary outcome, a malformed one is somebody's bug worth waking a person for.
    """


class PauseExpired(UnknownPauseToken):
    """The pause outlived its TTL; the conversation moved on.

    Attributes:
        scope: The tenant claim of the token when its signature verified (an expired token of
            ours), else None; a transport uses it to answer another tenant as if the token were
            unknown.
    """

    def __init__(self, message: str, *, scope: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.scope = scope


class MalformedPauseToken(UnknownPauseToken):
    """Not a token this host minted: garbage, truncated, oversize or wrongly signed."""


class ForgedPauseToken(MalformedPauseToken):
    """The signature does not verify: the token was altered, or signed with another secret."""


class UnknownSigningKey(MalformedPauseToken):
    """Signed under a key id this host does not hold (a retired or foreign secret)."""


class PauseAlreadyResumed(UnknownPauseToken):
    """The pause was resumed before; this attempt ran nothing.

    Attributes:
        status: What became of the first resume: ``claimed`` (still running, or died mid-way),
            ``completed``, ``paused_again`` or ``failed``.
        outcome: The first resume's recorded outcome, when it has one.
    """

    def __init__(self, message: str, *, status: str,
                 outcome: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.outcome = outcome


class PauseRevoked(UnknownPauseToken):
    """The pause was revoked; it can no longer be answered."""


class ContinuationUnavailable(RuntimeError):
    """The host was not composed with durable continuation wiring."""


class AgentNotServed(ContinuationUnavailable):
    """The agent that paused is not registered on this host."""


class IncompatibleDefinition(RuntimeError):
    """The agent's definition changed since the pause and does not declare itself compatible.

    Attributes:
        paused_pin: The definition that paused (``name@digest``).
        current_pin: The definition this host serves.
    """

    def __init__(self, paused_pin: str, current_pin: str) -> None:
        super().__init__(
            f"the pause was made by {paused_pin}, this host serves {current_pin}; add "
            f"{paused_pin!r} to the AgentSpec's compatible_with if it may resume such pauses")
        self.paused_pin = paused_pin
        self.current_pin = current_pin


@dataclass(frozen=True, kw_only=True)
class PauseTicket:
    """A paused turn as its token names it. Everything but the token is recovered, not supplied.

    Attributes:
        token: The opaque handle to give back to whoever must answer.
        scope: The scope the pause was issued under.
        question: What the turn stopped to ask (for an approval: the call's arguments).
        status: ``outstanding`` while answerable; otherwise what became of it.
        answer_schema: The JSON schema an answer must satisfy.
        outcome: The recorded outcome of the resume, once finished.
    """

    token: str
    scope: Scope
    question: Any
    name: str
    kind: str
    session_id: str
    tool_call_id: str
    issued_at: float
    expires_at: float
    status: str
    answer_schema: dict[str, Any] | None
    outcome: dict[str, Any] | None = None


class ContinuationService(Protocol):
    """Continues what a pause stopped, over the host's own agents and stores."""

    async def ticket(self, token: str) -> PauseTicket:
        """The paused turn ``token`` names.

        Raises:
            UnknownPauseToken: it names none, or has expired or been revoked.
        """
        ...

    async def resume(self, token: str, answer: Any) -> RunOutcome:
        """Continue the paused turn with ``answer``, at most once, and return its outcome.

        A person answering twice or a client retrying must never run the rest of the turn
        twice. The supported adapter refuses the second attempt by name
        (:class:`PauseAlreadyResumed`), whatever became of the first; it prepares the scoped
        agent and validates the answer *before* the durable claim, so an invalid answer leaves
        the pause answerable; and if the resumed run fails, nothing is replayed.

        Raises:
            UnknownPauseToken: the token names no resumable turn (see the subclasses).
            AnswerInvalid: the answer fails the pause's schema; the pause is untouched.
        """
        ...

    async def resume_stream(self, token: str, answer: Any) -> AsyncIterator[RunEvent]:
        """Like :meth:`resume`, returning the resumed run's events.

        Every refusal is raised by the ``await``; once it returns, the pause is claimed and the
        events must be consumed: a stream abandoned half-way leaves the pause ``claimed`` and its
        turn unfinished, never run twice.
        """
        ...
