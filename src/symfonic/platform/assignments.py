"""Taking a pause for review: one person holds it for a while, and the others see who.

Two reviewers who open the same card should not both read it to the end only for one of them to
find that the other was faster. A person of the pause's audience *takes* it (or gives it to
another person of the audience); until the assignment lapses (``host.assignments.ttl``, 30 minutes
by default) or the holder gives it back, only the holder may answer, vote on or reassign it, and
everyone else is refused with :class:`~symfonic.capabilities.human.audience.PauseAssigned`, which
names the holder and the time it lapses.

The ledger decides who holds a pause in one conditional statement (:meth:`PauseLedger.assign`),
as it decides a claim, and audits it in that statement's transaction; the checks here only say
why somebody may not take it before anything is written.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

from symfonic.capabilities.human.audience import NotAnApprover
from symfonic.kernel.people import Person
from symfonic.platform.continuation.reading import reachable
from symfonic.platform.continuation.refusals import (
    refuse,
    refuse_if_assigned,
    refuse_unless_answerer,
    unknown,
)
from symfonic.platform.continuation.resuming import LedgerContinuation
from symfonic.platform.tickets import LedgerTicket, counted_ticket
from symfonic.services.audit import Actor
from symfonic.services.ledger import PauseLedger, PauseRecord
from symfonic.stores.opening import Store


class Holding(Protocol):
    """What the holds need of the host that composes them."""

    @property
    def continuation(self) -> LedgerContinuation: ...

    async def store(self) -> Store: ...

    def now(self) -> float: ...


DEFAULT_TTL = timedelta(minutes=30)
"""How long an assignment holds unless given back: long enough to read a case, short enough that
a reviewer who walked away does not block the others for the day."""


class Assignments:
    """A host's holds on its pauses: ``host.assignments``."""

    def __init__(self, host: Holding) -> None:
        self._host = host
        self.ttl = DEFAULT_TTL
        """How long a hold lasts unless given back; set it before serving."""

    async def assign(self, token: str, by: Person | None, *, to: Person | None = None,
                     credential: str | None = None) -> LedgerTicket:
        """Take the pause for review (give it to ``to``, a person of its audience, when given)
        for :attr:`ttl`; the ticket, with its ``assignee``. ``credential`` (the key it came
        with) goes to the audit trail.

        Raises:
            NotAnApprover: ``by`` or ``to`` may not answer it (a service key never holds one).
            PauseAssigned: somebody else holds it.
            PauseExpired, PauseRevoked, PauseAlreadyResumed, UnknownPauseToken: as for a resume.
        """
        record = await self._host.continuation.recorded(token)
        with reachable():
            ledger = (await self._host.store()).ledger
            now = self._host.now()
            taken = await assign(ledger, record, by=by, to=to, now=now,
                                 ttl=self.ttl.total_seconds(), credential=credential)
            return await counted_ticket(ledger, token, taken, now)

    async def unassign(self, token: str, by: Person | None, *,
                       credential: str | None = None) -> LedgerTicket:
        """Give back a pause ``by`` holds (nothing when nobody holds it); the ticket.

        Raises:
            PauseAssigned: somebody else holds it.
        """
        record = await self._host.continuation.recorded(token)
        with reachable():
            ledger = (await self._host.store()).ledger
            now = self._host.now()
            latest = await unassign(ledger, record, by=by, now=now, credential=credential)
            return await counted_ticket(ledger, token, latest, now)


async def assign(ledger: PauseLedger, record: PauseRecord, *, by: Person | None,
                 to: Person | None, now: float, ttl: float,
                 credential: str | None) -> PauseRecord:
    """Give the pause to ``to`` (``by`` when None) until ``now + ttl``; the row as it stands.

    Raises:
        NotAnApprover: ``by`` or ``to`` may not answer the pause (a service key never holds one).
        PauseAssigned: somebody else holds it.
        PauseExpired, PauseRevoked, PauseAlreadyResumed: it is no longer answerable.
    """
    holder = to or by
    if by is None or holder is None:
        raise NotAnApprover("service_key", record.jti)
    refuse_unless_answerer(record, by)
    refuse_unless_answerer(record, holder)
    if record.status_at(now) != "outstanding" or record.expires_at <= now:
        refuse(record, now, by.id)
    refuse_if_assigned(record, now, by.id)
    taken = await ledger.assign(record.jti, now, to=holder.id, until=now + ttl,
                                by=Actor(by.id, credential))
    if taken.record is None:
        unknown(record.jti)
    if not taken.won:
        refuse(taken.record, now, by.id)
    return taken.record


async def unassign(ledger: PauseLedger, record: PauseRecord, *, by: Person | None, now: float,
                   credential: str | None) -> PauseRecord:
    """Give back the pause ``by`` holds; the row as it stands. Giving back a pause nobody holds
    changes nothing (a second click of "Release" is not an error).

    Raises:
        PauseAssigned: somebody else holds it (only the holder gives it back).
    """
    who = None if by is None else by.id
    refuse_if_assigned(record, now, who)
    if by is not None and record.assigned_at(now) == by.id:
        await ledger.unassign(record.jti, now, by=Actor(by.id, credential))
    latest = await ledger.get(record.jti)
    if latest is None:
        unknown(record.jti)
    refuse_if_assigned(latest, now, who)
    return latest
