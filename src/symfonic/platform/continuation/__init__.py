"""Resuming a paused turn from its token alone: the contracts.

The kernel already ends a paused run with :class:`~symfonic.kernel.events.Paused`, a terminal that
is neither an error nor a completion; this module is the other half, continuing what a pause
stopped. It is a service of the host rather than a method of :class:`~symfonic.Agent`: an agent is
bound to one scope and knows nothing of which of its turns are waiting, while resuming needs the
token looked up, the scope recovered from it and the agent for that scope found, three things only
the host has. The ports the host resumes over (sessions, transcripts, checkpoints, the ledger) are
declared in :mod:`symfonic.services`; nothing here re-declares them.

The scope comes from the token, never from the caller. A pause is issued inside a scope and the
token carries it signed; an API that also took a scope would have two answers to "which tenant is
this", and whoever could name another one could resume another tenant's turn with its token.

:class:`ContinuationService` and :class:`PauseTicket` are the seed's protocols, exactly; the host's
implementation (:class:`.resuming.LedgerContinuation`) adds ``resume_stream`` and returns richer
tickets. The refusals are told apart by type, so a transport never parses a message; the whole
tree is drawn in :mod:`symfonic.errors`.

The flow lives beside its contracts, one job a module, in the order a resume takes them:

- :mod:`.resuming`: verify the token, validate the answer, claim the pause, run the rest of the
  turn, store its outcome (``LedgerContinuation``);
- :mod:`.refusals`: why a pause cannot be resumed, as the typed errors above;
- :mod:`.recovery`: rebuilding an interrupted round from its stored turn state;
- :mod:`.claimed`: running a claimed turn under its lease, storing each tool's result as it ends;
- :mod:`.conversations`: a session's history as far as one pause.

This package imports none of them, so naming a contract (``from symfonic.platform.continuation
import PauseExpired``) loads nothing of the flow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from symfonic.capabilities.human.errors import AnswerInvalid
from symfonic.errors import SymfonicError
from symfonic.kernel.scope import Scope

__all__ = [
    "AgentNotServed", "AnswerInvalid", "ContinuationService", "ContinuationUnavailable",
    "ClaimLost", "ForgedPauseToken", "IncompatibleDefinition", "MalformedPauseToken",
    "OutcomeUnknown", "PauseAlreadyResumed", "PauseExpired", "PauseRevoked", "PauseTicket",
    "RecoveryRefused", "UnknownPauseToken", "UnknownSigningKey",
]


class UnknownPauseToken(SymfonicError, LookupError):
    """The token names no resumable turn.

    One family, several types, because the right response differs: an expired token is an
    ordinary outcome, a malformed one is somebody's bug worth waking a person for.
    """


class PauseExpired(UnknownPauseToken):
    """The pause outlived its TTL; the conversation moved on.

    Attributes:
        scope: The scope of the token when its signature verified (an expired token of ours),
            else None; a transport uses it to answer another tenant as if the token were unknown.
    """

    def __init__(self, message: str, *, scope: Scope | None = None) -> None:
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


class ContinuationUnavailable(SymfonicError, RuntimeError):
    """The host was not composed with durable continuation wiring."""


class AgentNotServed(ContinuationUnavailable):
    """The agent that paused (or that a run names) is not registered on this host.

    A case of :class:`ContinuationUnavailable` because it is exactly that for a resume: this host
    was composed without the agent, so it cannot continue the turn; another host that serves the
    agent can, and the pause stays outstanding for it.
    """


class OutcomeUnknown(SymfonicError, RuntimeError):
    """The answer was applied and the turn ran, but its outcome could not be stored.

    Never reported as ``failed``: tools may have run, and a person reading "failed" could redo an
    irreversible action. The pause is ``interrupted`` (at once when the store allows, else when
    its lease lapses): list it, and continue it with ``host.recover(token)``.

    Attributes:
        jti: The pause whose turn this was.
    """

    def __init__(self, message: str, *, jti: str) -> None:
        super().__init__(message)
        self.jti = jti


class ClaimLost(SymfonicError, RuntimeError):
    """This process's claim on a pause lapsed while its turn ran (its lease could not be renewed):
    the turn stopped so that a recovery elsewhere cannot run it twice."""


class RecoveryRefused(SymfonicError, RuntimeError):
    """Only an interrupted turn can be recovered; this pause is not one.

    Attributes:
        status: What the pause is instead (``outstanding``: resume it; ``claimed``: its resumer
            still holds a live lease).
    """

    def __init__(self, message: str, *, status: str) -> None:
        super().__init__(message)
        self.status = status


class IncompatibleDefinition(SymfonicError, RuntimeError):
    """The agent's definition changed since the pause and does not declare itself compatible.

    A pause is resumed by any definition that keeps its *contract*: the paused interaction (its
    name, kind and answer schema) and the tools of its round (their parameter schemas). Anything
    else may change between a pause and its answer. A pause stored before contracts existed is
    judged by its pin, as it was then: the very definition, or one that names it in
    ``compatible_with``.

    Attributes:
        paused_pin: The definition that paused (``name@digest``).
        current_pin: The definition this host serves.
    """

    def __init__(self, paused_pin: str, current_pin: str,
                 changes: Sequence[str] = ()) -> None:
        if changes:
            message = (f"the pause was made by {paused_pin}, and this host's {current_pin} "
                       f"changed what resuming it depends on: {'; '.join(changes)}")
        else:
            message = (f"the pause was made by {paused_pin}, this host serves {current_pin}; add "
                       f"{paused_pin!r} to the AgentSpec's compatible_with if it may resume such "
                       "pauses")
        super().__init__(message)
        self.paused_pin = paused_pin
        self.current_pin = current_pin
        self.changes = tuple(changes)
        """What changed in the pause's contract (the paused interaction, its round's tools),
        each said plainly; empty for a pause stored before contracts, judged by its pin."""


@runtime_checkable
class PauseTicket(Protocol):
    """What a paused turn hands back, and what resuming it needs.

    The token is the whole of the caller's half. Everything else is recovered from it, never
    supplied: a caller that could supply the scope or the question could contradict the token,
    and the contradiction would have to be settled by trusting one of them.
    """

    @property
    def token(self) -> str:
        """The opaque handle a transport gives back to whoever must answer."""
        ...

    @property
    def scope(self) -> Any:
        """The scope the pause was issued under. Recovered, never supplied."""
        ...

    @property
    def question(self) -> Any:
        """What the turn stopped to ask, shaped by whoever registered the pause point."""
        ...


@runtime_checkable
class ContinuationService(Protocol):
    """Continues what a pause stopped, over the host's own agents and stores."""

    async def ticket(self, token: str) -> PauseTicket:
        """The paused turn ``token`` names.

        Raises:
            UnknownPauseToken: it names none, or has expired or been revoked.
        """
        ...

    async def resume(self, token: str, answer: Any) -> Any:
        """Continue the paused turn with ``answer`` and return its result.

        A person answering twice or a client retrying must never run the rest of the turn
        twice, and the caller must be able to tell a first answer from a repeated one. The host's
        implementation chooses *at most once*: it prepares the scoped agent, compiles its plan and
        validates the answer before the durable claim (so a refused answer leaves the pause
        answerable), refuses any later attempt by name (:class:`PauseAlreadyResumed`), and does
        not replay anything if the resumed run fails.

        Raises:
            UnknownPauseToken: the token names no resumable turn (see the subclasses).
        """
        ...
