"""The outbox port: notifications written with the fact they announce, delivered later.

A pause that must be announced (to webhooks) cannot be announced from memory: a process that
stops between the pause's commit and the announcement loses it, and one that announces before the
commit may announce a pause that never happened. So the pause writes a :class:`Notification` in
its own transaction (``PauseIssue.notifications``), and a sender, in this process or any other
sharing the database, reads it from the outbox and delivers it: a transactional outbox.

Delivery is at least once. :meth:`Outbox.due` *claims* the entries it returns, by pushing their
``next_attempt_at`` a lease ahead and counting the attempt, so concurrent senders do not pick the
same entry; a sender that dies mid-delivery leaves its entries claimed until the lease lapses,
and then they are due again, under the same id. Receivers deduplicate on that id.

An entry moves ``due -> (claimed) -> delivered``, or back to due with a later
``next_attempt_at`` (:meth:`Outbox.retry_later`), or to ``failed`` once the sender gives up
(:meth:`Outbox.give_up`); an operator can put a failed one back (:meth:`Outbox.retry`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from symfonic.kernel.scope import Scope

PAUSE_CREATED = "pause.created"
"""The topic of the notification a pause writes (also the webhook's ``X-Symfonic-Event``)."""
PAUSE_REMINDED = "pause.reminded"
"""A reminder of a pause nobody answered yet (:mod:`symfonic.platform.timers`)."""
PAUSE_ESCALATED = "pause.escalated"
"""A pause whose audience grew because nobody answered it in time."""
ANNOUNCED = (PAUSE_CREATED, PAUSE_REMINDED, PAUSE_ESCALATED)
"""The topics a pause's announcements go out under, to every webhook URL."""
DELIVERY_LEASE = 60.0
"""Seconds a claimed entry stays invisible to other senders: longer than one delivery attempt
takes, so that only a sender that died (or stalled) lets another send the same entry again."""


@dataclass(frozen=True, kw_only=True)
class Notification:
    """Something to announce, written in the transaction of what it announces.

    Attributes:
        id: The delivery id: the same on every attempt and from every sender, so a receiver
            deduplicates on it.
        topic: What happened (:data:`PAUSE_CREATED`).
        scope: The tenant it concerns; operators list failures per tenant.
        payload: The facts to announce, as JSON. Never a secret, and never a pause token: a
            token is a bearer capability, and the ledger can mint it again at delivery time.
        created_at: Epoch seconds; the entry is due from then.
    """

    id: str
    topic: str
    scope: Scope
    payload: dict[str, Any]
    created_at: float


@dataclass(frozen=True, kw_only=True)
class OutboxEntry:
    """A notification and where its delivery stands.

    Attributes:
        attempts: Attempts claimed so far, the current one included (:meth:`Outbox.due` counts
            an attempt when it hands the entry out, so a sender that crashes mid-attempt still
            used one up).
        next_attempt_at: When the entry is (or was) due; for a claimed entry, when its lease
            lapses.
        last_error: Why the last attempt failed, if one did.
        delivered_at: Set once delivered; the entry is then never due again.
        failed_at: Set once given up; only :meth:`Outbox.retry` makes it due again.
    """

    notification: Notification
    attempts: int
    next_attempt_at: float
    last_error: str | None = None
    delivered_at: float | None = None
    failed_at: float | None = None


class Outbox(Protocol):
    async def due(self, now: float, limit: int = 100, *,
                  lease: float = DELIVERY_LEASE) -> list[OutboxEntry]:
        """Claim up to ``limit`` entries due at ``now``, oldest due first: each gets one more
        attempt and is hidden from other claimers until ``now + lease``. Two concurrent claimers
        never get the same entry."""
        ...

    async def delivered(self, id: str, now: float) -> bool:
        """Record the entry delivered; False when it already was (or does not exist)."""
        ...

    async def retry_later(self, id: str, now: float, next_attempt_at: float, error: str, *,
                          attempts: int | None = None) -> bool:
        """Make a pending entry due again at ``next_attempt_at``, noting ``error``; False when it
        is no longer pending (delivered or given up meanwhile).

        ``attempts``, when given, replaces the count: a sender that retries within one claim (a
        durable workflow sleeping between attempts, pushing ``next_attempt_at`` past each sleep
        so that nobody else claims it) records its attempts, the next one included as ``due``
        counts the one it hands out."""
        ...

    async def give_up(self, id: str, now: float, error: str) -> bool:
        """Record a pending entry failed with ``error``: it is never due again unless retried."""
        ...

    async def failed(self, scope: Scope | None = None, limit: int = 100) -> list[OutboxEntry]:
        """Given-up entries (of ``scope``, or of every scope), oldest failure first."""
        ...

    async def retry(self, id: str, now: float) -> bool:
        """Put a failed entry back: due at ``now`` with its attempts reset. False when ``id``
        names no failed entry."""
        ...

    async def add(self, notifications: Sequence[Notification]) -> int:
        """Write ``notifications`` that are not in the outbox yet (by id); how many were new.

        For a delivery that fans out into several (one email per person of a pause's audience):
        the children's ids derive from their parent's, so a parent delivered twice writes them
        once. Each is due from its ``created_at``."""
        ...

    async def with_prefix(self, prefix: str, limit: int = 100) -> list[OutboxEntry]:
        """The entries whose id starts with ``prefix``, oldest first, whatever their state: a
        pause's emails, to show who was reached and how each delivery stands."""
        ...

    async def prune(self, delivered_before: float, limit: int = 1000) -> int:
        """Delete up to ``limit`` entries delivered before ``delivered_before``; how many. Pending
        and failed entries are kept whatever their age: they still owe a delivery."""
        ...
