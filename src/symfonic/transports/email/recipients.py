"""Who is mailed about a pause: its audience, resolved to people, one outbox entry each.

The sender calls :meth:`FanOut.__call__` with a pause's announcement (made, reminded, escalated)
before it delivers it anywhere; it writes one :data:`~symfonic.transports.email.EMAIL` entry per
person to reach and returns. Who:

- **made**: every person the pause's audience admits (``person:`` entries, and every person of a
  ``group:``), as the tenant's live person keys describe them now;
- **reminded**: the same people, less those who already approved (a quorum's voters);
- **escalated**: the people the escalation named, less those the audience already had (they were
  told already); for a pause anyone of its tenant may answer, which an escalation leaves open,
  the people it named;
- never the person who asked, when the pause refuses their answer; never somebody without an
  email address; nobody when a pause anyone of its tenant may answer is made or reminded (an open
  audience names no one: tell a team through a webhook), nor once the pause is no longer waiting.

An entry's id is ``email:<pause>:<announcement>:<person>``: written again by a retried fan-out,
it is the same entry (:meth:`Outbox.add` ignores it), and a pause's entries share a prefix.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from symfonic.capabilities.human.audience import AnswerPolicy
from symfonic.kernel.people import Person
from symfonic.platform.tickets import policy_of
from symfonic.services.ledger import PauseRecord
from symfonic.services.outbox import (
    ANNOUNCED,
    PAUSE_CREATED,
    PAUSE_ESCALATED,
    PAUSE_REMINDED,
    Notification,
    Outbox,
)
from symfonic.transports.email import EMAIL, email_prefix

__all__ = ["FanOut", "recipients"]

logger = logging.getLogger("symfonic.email")

People = Callable[[str], Iterable[Person]]
"""The people a tenant's live keys act as (the same person once)."""


def recipients(record: PauseRecord, topic: str, facts: dict[str, Any], people: Iterable[Person],
               voted: Iterable[str] = ()) -> list[Person]:
    """Who to mail about ``record``'s announcement of ``topic`` (see the module's docstring)."""
    policy = policy_of(record)
    if topic not in ANNOUNCED or (policy.open and topic != PAUSE_ESCALATED):
        return []
    if topic == PAUSE_ESCALATED:
        added = AnswerPolicy(audience=tuple(facts.get("step", {}).get("to", ())))
        before = tuple(e for e in policy.audience if e not in added.audience)
        earlier = AnswerPolicy(audience=before) if before else None
        wanted = [p for p in people if added.admits(p)
                  and (earlier is None or not earlier.admits(p))]
    else:
        wanted = [p for p in people if policy.admits(p)]
    skipped = set(voted) if topic == PAUSE_REMINDED else set()
    if not policy.requester_may_answer and record.requester is not None:
        skipped.add(record.requester)
    chosen: dict[str, Person] = {}
    for person in wanted:
        if person.email and person.id not in skipped:
            chosen.setdefault(person.id, person)
    return sorted(chosen.values(), key=lambda p: p.id)


class FanOut:
    """Writes the emails of one announcement to the outbox (see the module's docstring).

    Args:
        outbox: The host's outbox.
        pause: The ledger's record of a pause of a scope (None when unknown there).
        votes: The ids of the people who voted on a pause.
        people: See :data:`People`.
        clock: Dates the entries (due at once).
    """

    def __init__(self, *, outbox: Callable[[], Awaitable[Outbox]],
                 pause: Callable[[Notification], Awaitable[PauseRecord | None]],
                 votes: Callable[[str], Awaitable[Iterable[str]]], people: People,
                 clock: Callable[[], float]) -> None:
        self._outbox, self._pause, self._votes = outbox, pause, votes
        self._people, self._clock = people, clock

    async def __call__(self, announcement: Notification) -> int:
        """Write the emails ``announcement`` calls for; how many were new.

        Raises:
            SymfonicError: the store could not be read or written (the announcement stays due,
                and the fan-out is done again, writing only what is missing).
        """
        if announcement.topic not in ANNOUNCED:
            return 0
        facts = announcement.payload
        record = await self._pause(announcement)
        now = self._clock()
        if record is None or record.status_at(now) != "outstanding":
            return 0  # decided, revoked or expired meanwhile: nothing to ask anyone
        voted = await self._votes(record.jti) if announcement.topic == PAUSE_REMINDED else ()
        chosen = recipients(record, announcement.topic, facts,
                            self._people(record.scope.tenant), voted)
        emails = [Notification(
            id=f"{email_prefix(record.jti)}{announcement.id}:{person.id}", topic=EMAIL,
            scope=announcement.scope, created_at=now,
            payload={"pause_id": record.jti, "event": announcement.topic,
                     "announcement": announcement.id, "person": person.to_dict(),
                     **({"step": facts["step"]} if "step" in facts else {})})
            for person in chosen]
        added = await (await self._outbox()).add(emails) if emails else 0
        if added:
            logger.info("pause %s: %d email(s) to send (%s)", record.jti, added,
                        announcement.topic.removeprefix("pause."))
        return added


EVENTS = {PAUSE_CREATED: "made", PAUSE_REMINDED: "reminded", PAUSE_ESCALATED: "escalated"}
"""How a person reads why they were mailed."""
