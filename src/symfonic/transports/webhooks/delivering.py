"""One notification's delivery: where it goes, one signed attempt at every receiver, the backoff.

What is the same whoever schedules the attempts: the loop of our own
(:class:`~symfonic.transports.webhooks.sender.WebhookSender`, for a host without the workers
extra) and the DBOS workflows (:mod:`symfonic.transports.webhooks.workflows`) both decide with a
:class:`Deliverer`, so a receiver cannot tell which one sent it a notification.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from symfonic.errors import SymfonicError
from symfonic.services.outbox import ANNOUNCED, Notification
from symfonic.transports.webhooks import (
    DELIVERY_HEADER,
    DELIVERY_ID_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    DeliveryFailed,
    Poster,
    WebhookConfig,
    sign,
)

__all__ = ["Channel", "Deliverer", "DocumentBuilder", "FanOut", "Router", "Target", "Targets"]

MAX_ERROR_CHARS = 2000
"""The stored ``last_error`` is cut to this: a receiver's error page is not worth keeping whole."""
logger = logging.getLogger("symfonic.webhooks")

DocumentBuilder = Callable[[Notification], Awaitable[dict[str, Any] | None]]
"""Turns a notification into the JSON document to POST, the same on every attempt; None when it
can never be delivered (e.g. its pause is not in the ledger): it is then given up at once."""


@dataclass(frozen=True, kw_only=True)
class Target:
    """One POST of a notification: where, what, and the headers of this receiver alone.

    Attributes:
        url: Where to POST.
        document: The JSON body (signed like every delivery).
        headers: Added to the sender's own (e.g. a token the receiver asked to see echoed).
        key: What a retry remembers as having accepted the notification; the URL by default.
    """

    url: str
    document: dict[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    key: str = ""

    @property
    def landing(self) -> str:
        return self.key or self.url

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "document": self.document, "headers": dict(self.headers),
                "key": self.key}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Target:
        return cls(url=data["url"], document=data["document"], headers=data["headers"],
                   key=data["key"])


Router = Callable[[Notification], Awaitable[list[Target] | None]]
"""Where a notification of a routed topic goes, the same on every attempt; ``[]`` when nobody
listens any more (it is then delivered), None when it can never be delivered (given up)."""
FanOut = Callable[[Notification], Awaitable[object]]
"""Writes further notifications a pause's announcement calls for (one email per person) to the
outbox, idempotently; run before the announcement is delivered, again on every attempt until it
is (:mod:`symfonic.transports.email.recipients`)."""
Channel = Callable[[Target], Awaitable[str | None]]
"""Sends a target that is no webhook (``mailto:``): None once accepted, else why not."""


@dataclass(frozen=True)
class Targets:
    """Where a notification goes (``targets``), or why that is unknown: ``problem`` set, and
    ``hopeless`` when asking again will not help (give it up at once)."""

    targets: list[Target] | None
    problem: str | None = None
    hopeless: bool = False


class Deliverer:
    """The configuration, the routes and the POSTs; no scheduling, no outbox.

    ``jitter`` spreads the retries of many notifications after a receiver's outage.
    """

    def __init__(self, config: WebhookConfig, *, post: Poster, document: DocumentBuilder,
                 jitter: Callable[[], float] = random.random) -> None:
        self.config = config
        self._post = post
        self._document = document
        self._jitter = jitter
        self._routes: dict[str, Router] = {}
        self._fan_outs: list[FanOut] = []
        self._channels: dict[str, Channel] = {}

    def route(self, topic: str, router: Router) -> None:
        """Deliver the notifications of ``topic`` where ``router`` says, not to the webhooks."""
        self._routes[topic] = router

    def fan_out(self, fan_out: FanOut) -> None:
        """Have every pause announcement run ``fan_out`` before it is delivered."""
        self._fan_outs.append(fan_out)

    def channel(self, scheme: str, send: Channel) -> None:
        """Send the targets whose URL starts with ``scheme:`` with ``send``, not by POST."""
        self._channels[scheme] = send

    def unroutable(self, notification: Notification) -> str | None:
        """Why this process cannot deliver ``notification``, or None when it can.

        It was written by a process that can (webhook URLs, or a route for its topic, e.g.
        A2A's); this one leaves it to such a sender on the same database, instead of giving it up
        or marking it delivered to nobody: servers sharing a database should share their
        configuration.
        """
        if notification.topic in self._routes:
            return None
        if notification.topic in ANNOUNCED:
            return None if self.config.urls or self._fan_outs else "this sender has no webhook URLs"
        return f"this sender has no route for {notification.topic!r}"

    async def targets(self, notification: Notification) -> Targets:
        """Every POST the notification needs, built once for all its attempts."""
        try:
            router = self._routes.get(notification.topic)
            if router is not None:
                targets = await router(notification)
            else:
                for fan_out in self._fan_outs:
                    await fan_out(notification)
                document = await self._document(notification) if self.config.urls else {}
                targets = None if document is None else [
                    Target(url=url, document=document) for url in self.config.urls]
        except SymfonicError as failed:  # e.g. the ledger could not be read to mint the token
            return Targets(None, f"the body could not be built: {failed}")
        except Exception as bug:  # a payload this code cannot read: retrying will not help
            logger.exception("webhook %s: the body could not be built", notification.id)
            return Targets(None, f"the body could not be built: {bug!r}", hopeless=True)
        if targets is None:
            return Targets(None, "nothing to deliver: what it announces is not recorded",
                           hopeless=True)
        return Targets(targets)

    async def post_all(self, notification: Notification, attempt: int,
                       targets: list[Target]) -> dict[str, str | None]:
        """POST to every target at once: for each target's :attr:`~Target.landing`, None when it
        accepted the notification, else what went wrong."""
        results = await asyncio.gather(*(self._attempt(t, notification, attempt) for t in targets))
        return {t.landing: problem for t, problem in zip(targets, results, strict=True)}

    def error(self, targets: list[Target], results: Mapping[str, str | None]) -> str:
        """What failed, as the outbox keeps it."""
        failed = [f"{t.url}: {results[t.landing]}" for t in targets if results.get(t.landing)]
        return "; ".join(failed)[:MAX_ERROR_CHARS]

    def backoff(self, attempts: int) -> float:
        """Seconds before the attempt after ``attempts``: doubling from ``first_backoff``, capped
        at ``max_backoff``, then scaled by a random 50-100% so that retries of many
        notifications (after a receiver's outage) do not arrive together."""
        config = self.config
        plain = min(config.max_backoff, config.first_backoff * 2.0 ** min(attempts - 1, 60))
        return plain * (0.5 + self._jitter() / 2)

    async def _attempt(self, target: Target, notification: Notification, attempt: int) -> str | None:
        """One POST (or one send of another channel); None when the receiver accepted it, else
        what went wrong."""
        config, url = self.config, target.url
        channel = self._channels.get(url.partition(":")[0])
        if channel is not None:
            return await channel(target)
        body = json.dumps(target.document, separators=(",", ":"), sort_keys=True).encode()
        headers = {
            **target.headers, "Content-Type": "application/json", "User-Agent": "symfonic-webhooks",
            EVENT_HEADER: notification.topic, DELIVERY_ID_HEADER: notification.id,
            DELIVERY_HEADER: notification.id, "X-Symfonic-Attempt": str(attempt),
            SIGNATURE_HEADER: sign(config.secret, body, int(time.time())),
        }
        try:
            async with asyncio.timeout(config.timeout):
                status = await self._post(url, body, headers, config.timeout)
        except DeliveryFailed as failed:
            return str(failed) or type(failed).__name__
        except TimeoutError:
            return f"no answer within {config.timeout:g} s"
        return None if 200 <= status < 300 else f"HTTP {status}"
