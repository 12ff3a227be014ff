"""The email channel put together: fan-out, one message per entry, and the SMTP send.

:meth:`EmailChannel.install` hands the three to a sender's
:class:`~symfonic.transports.webhooks.delivering.Deliverer`, so the outbox's one drainer (the loop
of our own, or DBOS workflows) delivers mail as it delivers webhooks: the same claims, retries,
backoff, give-up and listing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import quote

from symfonic.capabilities.human.tokens import TokenKeys
from symfonic.kernel.people import Person
from symfonic.services.ledger import PauseRecord
from symfonic.services.outbox import Notification, Outbox
from symfonic.stores.opening import Store
from symfonic.transports.email import EMAIL, EmailConfig
from symfonic.transports.email.links import InboxLink, LinkSigner
from symfonic.transports.email.messages import domain_of, mail_document
from symfonic.transports.email.recipients import FanOut, People
from symfonic.transports.webhooks.delivering import Deliverer, Target

__all__ = ["EmailChannel", "LINK_PATH", "Mailer"]

LINK_PATH = "/inbox/link"
"""Where an emailed link lands (the inbox's :mod:`~symfonic.transports.http.inbox_links`)."""
logger = logging.getLogger("symfonic.email")


class Mailer(Protocol):
    async def send(self, document: dict[str, Any]) -> str | None:
        """Send one mail document; None once accepted, else why not."""
        ...


class Hosting(Protocol):
    """What the channel needs of the host."""

    @property
    def keys(self) -> TokenKeys: ...

    async def store(self) -> Store: ...

    def now(self) -> float: ...


class EmailChannel:
    """A host's pauses, mailed to their people (see :mod:`symfonic.transports.email`).

    Args:
        people: The persons of a tenant, as its live keys describe them.
        base_url: The service's public address, for the links.
        mailer: Sends; an :class:`~.smtp.SmtpMailer` of ``config`` when None.
    """

    def __init__(self, config: EmailConfig, *, host: Hosting, people: People,
                 base_url: Callable[[], str], mailer: Mailer | None = None) -> None:
        if mailer is None:
            from symfonic.transports.email.smtp import SmtpMailer

            mailer = SmtpMailer(config)
        self.config, self._host, self._people, self._base_url = config, host, people, base_url
        self._mailer = mailer
        self.links = LinkSigner(host.keys)
        """Signs the links the messages carry, and reads them back when followed."""
        self.fan_out = FanOut(outbox=self._outbox, pause=self._pause_of, votes=self._voters,
                              people=people, clock=host.now)

    def install(self, deliverer: Deliverer) -> None:
        deliverer.fan_out(self.fan_out)
        deliverer.route(EMAIL, self.targets)
        deliverer.channel("mailto", self.send)

    async def targets(self, notification: Notification) -> list[Target] | None:
        """The one message of an :data:`EMAIL` entry, built with a fresh link; ``[]`` once the
        pause is no longer waiting (nothing to ask: the entry ends delivered to nobody), None when
        the pause is not recorded (it is given up)."""
        record = await self._pause_of(notification)
        if record is None:
            return None
        now = self._host.now()
        if record.status_at(now) != "outstanding":
            return []
        facts = notification.payload
        person = Person.from_dict(facts["person"])
        link = InboxLink(tenant=record.scope.tenant, person=person.id, pause=record.jti,
                         expires_at=int(min(now + self.config.link_seconds, record.expires_at)))
        url = f"{self._base_url().rstrip('/')}{LINK_PATH}?t={quote(self.links.sign(link))}"
        asker = record.requester and next(
            (p.display_name for p in self._people(record.scope.tenant) if p.id == record.requester),
            record.requester)
        document = mail_document(record=record, person=person, event=str(facts["event"]),
                                 link=url, link_expires_at=link.expires_at, requester=asker,
                                 delivery_id=notification.id, domain=domain_of(self.config.sender))
        return [Target(url=f"mailto:{person.email}", document=document, key=person.email)]

    async def send(self, target: Target) -> str | None:
        return await self._mailer.send(target.document)

    async def _outbox(self) -> Outbox:
        return (await self._host.store()).outbox

    async def _pause_of(self, notification: Notification) -> PauseRecord | None:
        record = await (await self._host.store()).ledger.get(notification.payload["pause_id"])
        return record if record is not None and record.scope == notification.scope else None

    async def _voters(self, pause_id: str) -> list[str]:
        return [vote.person for vote in await (await self._host.store()).ledger.votes(pause_id)]

