"""Who may answer a pause: its audience, the requester rule, and the approvals that set them.

A pause without an audience is answered as before: by any key of its tenant, a service key
included. A pause *with* an audience is answered by people only, and only by those it names:
``person:ID`` entries name one person, ``group:NAME`` entries everyone whose groups hold NAME. The
person who started the run (its *requester*) may not answer their own pause unless the policy
says so, since "four eyes" means somebody else's.

The policy is decided when the pause is made, from the declaration (:class:`Approval`, an
:class:`~symfonic.capabilities.human.typed_interrupts.Interrupt`'s ``audience``, the
``HumanInteraction``'s default) and, for an approval whose approvers are a function, from the
call's arguments, so a refund of 50,000 can be routed to ``group:finance-leads``. It is stored with
the pause, in the pause's transaction, and is never read from a request: what is checked at the
answer is what was decided at the question.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from symfonic.capabilities.human.entries import audience_of
from symfonic.capabilities.human.follow_up import FollowUp, follow_up_of
from symfonic.errors import SymfonicError
from symfonic.kernel.people import Person
from symfonic.kernel.tool_contract import Tool

__all__ = ["OPEN", "AlreadyAnswered", "AnswerPolicy", "Approval", "Approvers", "NotAnApprover",
           "PauseAssigned", "Refusal", "audience_of"]

Approvers = Sequence[str] | Callable[[dict[str, Any]], Iterable[str]] | None
"""Audience entries, or a function of the call's arguments returning them; None for none."""
Refusal = Literal["service_key", "outside_audience", "requester"]
"""Why somebody may not answer: a key that is no person's, a person the audience does not name,
or the person who asked."""


_WHY: dict[str, str] = {
    "service_key": "a caller that acts as no person (a service key, code) may not answer a pause "
                   "that names its audience",
    "outside_audience": "the pause's audience does not include this person",
    "requester": "the person who asked may not answer their own request",
}


class NotAnApprover(SymfonicError, PermissionError):
    """The caller may not answer this pause; nothing was claimed, the pause still waits.

    Attributes:
        reason: ``service_key``, ``outside_audience`` or ``requester`` (:data:`Refusal`).
        pause_id: The pause refused.
    """

    def __init__(self, reason: Refusal, pause_id: str) -> None:
        super().__init__(f"pause {pause_id}: {_WHY[reason]}")
        self.reason: Refusal = reason
        self.pause_id = pause_id


class AlreadyAnswered(SymfonicError, RuntimeError):
    """The person already approved this pause's current arguments; their vote counts once.

    Attributes:
        pause_id: The pause.
        person: Who voted again.
    """

    def __init__(self, pause_id: str, person: str) -> None:
        super().__init__(f"pause {pause_id}: {person} already approved it; another approver "
                         "must complete it")
        self.pause_id = pause_id
        self.person = person


class PauseAssigned(SymfonicError, RuntimeError):
    """Another person took the pause for review; until their assignment lapses or they give it
    back, only they may answer, vote on or reassign it. Nothing was changed.

    Attributes:
        pause_id: The pause.
        assignee: The person who holds it.
        until: When their assignment lapses (epoch seconds).
    """

    def __init__(self, pause_id: str, assignee: str, until: float) -> None:
        super().__init__(f"pause {pause_id} is assigned to {assignee} until {until:.0f}; only "
                         "they may answer it until then")
        self.pause_id = pause_id
        self.assignee = assignee
        self.until = until


def _check_quorum(quorum: object) -> None:
    if not isinstance(quorum, int) or isinstance(quorum, bool) or quorum < 1:
        raise ValueError(f"a quorum is a whole number of people, at least 1: {quorum!r}")


@dataclass(frozen=True, kw_only=True)
class AnswerPolicy:
    """Who may answer one pause, as stored with it.

    Attributes:
        audience: ``person:``/``group:`` entries; empty for a pause anyone of its tenant may
            answer (service keys included), as every pause was before audiences.
        quorum: How many distinct people of the audience must approve.
        requester_may_answer: Whether the person who started the run may answer it.
    """

    audience: tuple[str, ...] = ()
    quorum: int = 1
    requester_may_answer: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "audience", audience_of(self.audience))
        _check_quorum(self.quorum)
        if self.quorum > 1 and not self.audience:
            raise ValueError("a quorum counts people of an audience: give approvers")

    @property
    def open(self) -> bool:
        """No audience: today's behaviour, any key of the tenant answers."""
        return not self.audience

    def admits(self, person: Person) -> bool:
        return (f"person:{person.id}" in self.audience
                or any(f"group:{group}" in self.audience for group in person.groups))

    def refusal(self, person: Person | None, requester: str | None) -> Refusal | None:
        """Why ``person`` (None: a service key) may not answer; None when they may."""
        if self.open:
            return None
        if person is None:
            return "service_key"
        if not self.admits(person):
            return "outside_audience"
        if requester is not None and person.id == requester and not self.requester_may_answer:
            return "requester"
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"audience": list(self.audience), "quorum": self.quorum,
                "requester_may_answer": self.requester_may_answer}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> AnswerPolicy:
        """The stored shape back; the open policy for None (a pause written before audiences).

        Raises:
            ValueError: the mapping is not a policy this library wrote.
        """
        if data is None:
            return OPEN
        try:
            return cls(audience=tuple(data["audience"]), quorum=data["quorum"],
                       requester_may_answer=bool(data["requester_may_answer"]))
        except (KeyError, TypeError) as wrong:
            raise ValueError(f"not an answer policy: {data!r}") from wrong


OPEN = AnswerPolicy()
"""Anyone of the tenant answers, the requester included: how a pause without an audience reads."""


@dataclass(frozen=True)
class Approval:
    """A tool that waits for approval, and who must give it.

    ``HumanInteraction(approvals=[...])`` takes these beside plain tool names and predicates.

    Attributes:
        tool: The tool's name, or a predicate given each tool (see ``HumanInteraction``).
        approvers: Audience entries (``"group:finance"``, ``"person:ada"``), or a function of
            the call's arguments returning them; None for the ``HumanInteraction``'s default
            audience (none: anyone of the tenant).
        quorum: How many distinct people of the audience must approve (needs approvers).
        when: A predicate over the call's arguments; when it is false the call runs without a
            pause. None: every call waits.
        requester_may_answer: Whether the person who started the run may approve their own call.
        ttl: How long the pause waits; the ``HumanInteraction``'s when None.
        on_expiry: The answer the system gives when nobody answered in time (``{"approved":
            False, "reason": "no answer in time"}``), checked against the approval's answer
            schema when the agent is defined; the turn then goes on with it, at most once, and
            a late answer is refused. None: the pause just expires.
        remind_after, escalate_after, escalate_to: Reminders to the people who have not
            answered, and an escalation that widens the audience
            (:mod:`~symfonic.capabilities.human.follow_up`); the ``HumanInteraction``'s when none
            is declared here.
    """

    tool: str | Callable[[Tool], bool]
    approvers: Approvers = None
    quorum: int = 1
    when: Callable[[dict[str, Any]], bool] | None = None
    requester_may_answer: bool = False
    ttl: timedelta | None = None
    on_expiry: Any = None
    remind_after: timedelta | Sequence[timedelta] | None = None
    escalate_after: timedelta | None = None
    escalate_to: Sequence[str] = ()

    def __post_init__(self) -> None:
        if isinstance(self.approvers, str):
            raise TypeError(f"approvers is a list of entries, not one string: [{self.approvers!r}]")
        if self.approvers is not None and not callable(self.approvers):
            object.__setattr__(self, "approvers", audience_of(self.approvers))
            if not self.approvers:
                # An empty audience reads as "anyone": refused rather than opened by accident.
                raise ValueError("approvers names nobody; leave it None for the capability's "
                                 "audience")
        _check_quorum(self.quorum)
        self.follow_up  # noqa: B018 - refused here, when declared, rather than at a pause

    def policy_for(self, arguments: dict[str, Any], default: Sequence[str]) -> AnswerPolicy:
        """The policy of one call: its approvers (computed from ``arguments`` when a function).

        Raises:
            ValueError: the function returned entries that are not an audience.
        """
        approvers = self.approvers
        entries = (default if approvers is None
                   else approvers(dict(arguments)) if callable(approvers) else approvers)
        audience = audience_of(entries)
        if approvers is not None and not audience:
            # A routing function that names nobody must not open the pause to everyone.
            raise ValueError(f"the approvers of {self.tool!r} named nobody for this call")
        return AnswerPolicy(audience=audience, quorum=self.quorum,
                            requester_may_answer=self.requester_may_answer)

    def waits_for(self, arguments: dict[str, Any]) -> bool:
        return self.when is None or bool(self.when(dict(arguments)))

    def describe(self) -> dict[str, Any]:
        """For the agent definition's digest: a change of policy is a new definition."""
        approvers = self.approvers
        return {"approvers": (f"<{named(approvers)}>" if callable(approvers)
                              else None if approvers is None else list(approvers)),
                "quorum": self.quorum, "when": None if self.when is None else f"<{named(self.when)}>",
                "requester_may_answer": self.requester_may_answer,
                "ttl": None if self.ttl is None else self.ttl.total_seconds(),
                # Only when declared: a definition without it describes itself as before.
                **({} if self.on_expiry is None else {"on_expiry": self.on_expiry}),
                **({"follow_up": self.follow_up.describe()} if self.follow_up.declared else {})}

    @property
    def follow_up(self) -> FollowUp:
        return follow_up_of(self.remind_after, self.escalate_after, self.escalate_to,
                            f"the approval of {self.tool!r}")


def named(function: object) -> str:
    """A function's name in a definition's digest: its code cannot be described, its module and
    qualified name can."""
    return f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', '?')}"
