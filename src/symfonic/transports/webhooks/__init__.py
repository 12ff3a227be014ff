"""Webhooks: every pause, POSTed signed to each configured URL, at least once, from the outbox.

A pause announced from memory is lost when its process stops before the announcement went out.
So a pause of a host with ``notifications`` on writes its notification to the outbox in the
pause's own transaction (``symfonic.services.outbox``), and :class:`WebhookSender`, a background
task of the HTTP app (:mod:`symfonic.transports.webhooks.sender`), delivers what the outbox holds:

- it polls :meth:`Outbox.due` every ``poll_interval`` seconds, and at once when a run of this
  process pauses (``host.on_pause`` calls :meth:`WebhookSender.wake`, which only sets an event:
  the run never waits for a receiver);
- ``due`` *claims* what it returns for a lease (see the outbox port), so senders in several
  processes share the work instead of sending everything twice;
- each claimed notification is POSTed to every URL with the signature below and its delivery id
  (``Symfonic-Delivery-Id``): the outbox id, the same on every attempt and from every process;
- all URLs answered 2xx: delivered. Otherwise it is due again after an exponential backoff with
  jitter, or, after ``max_attempts``, given up: kept with the last error, listed by ``symfonic
  webhooks failed`` and put back by ``symfonic webhooks retry``.

At least once, never exactly once: a process that dies mid-delivery leaves its claim to lapse and
another sender (or the same one, restarted) sends the notification again with the same delivery
id; a URL that already accepted it may get it again too. Receivers deduplicate on the id.

The signature, Stripe-style, covers the timestamp and the exact body bytes::

    X-Symfonic-Signature: t=1700000000,v1=<hex HMAC-SHA256(secret, b"1700000000." + body)>

Receivers check it with :func:`verify_signature`, which needs only the standard library.

The sender is deliberately small: on a host with workers, an execution engine takes over at the
outbox (:mod:`symfonic.transports.webhooks.workflows`: a DBOS workflow per notification, its
retries slept durably), and the loop above only hands claims over.

The package is the whole way out, one job a module: this one holds the configuration and the
signature (the wire format a receiver needs, standard library only); :mod:`.sender` drains the
outbox; :mod:`.workflows` delivers through DBOS workflows instead on a host with workers;
:mod:`.delivering` is what both do with one notification (targets, one signed attempt, backoff);
:mod:`.outbound` decides which addresses any of it may reach.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from symfonic.errors import SymfonicError
from symfonic.services.outbox import PAUSE_CREATED
from symfonic.transports.webhooks.outbound import PUBLIC_ONLY, OutboundPolicy

__all__ = [
    "DELIVERY_HEADER", "DELIVERY_ID_HEADER", "EVENT_HEADER", "PAUSE_EVENT", "SIGNATURE_HEADER",
    "DeliveryFailed", "Poster", "WebhookConfig", "sign", "verify_signature",
]

SIGNATURE_HEADER = "X-Symfonic-Signature"
EVENT_HEADER = "X-Symfonic-Event"
DELIVERY_ID_HEADER = "Symfonic-Delivery-Id"
"""The outbox id: the same on every attempt and from every sender; deduplicate on it."""
DELIVERY_HEADER = "X-Symfonic-Delivery"
"""The same id under its earlier name, kept for receivers written against it."""
PAUSE_EVENT = PAUSE_CREATED


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The signature header's value for ``body`` sent at ``timestamp`` (epoch seconds)."""
    return f"t={timestamp},v1={_mac(secret, body, timestamp)}"


def verify_signature(secret: str, header: str | None, body: bytes, tolerance: float = 300.0,
                     *, now: float | None = None) -> bool:
    """True when ``header`` signs ``body`` with ``secret`` and is at most ``tolerance`` seconds old.

    Check the raw body bytes, before parsing them: re-serialised JSON would not match. The
    timestamp bounds replays; several ``v1=`` entries are accepted so a sender can sign with an old
    and a new secret while receivers rotate.
    """
    if not header:
        return False
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and value.isdigit():
            timestamp = int(value)
        elif name == "v1":
            signatures.append(value)
    if timestamp is None or not signatures:
        return False
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        return False
    expected = _mac(secret, body, timestamp)
    return any(hmac.compare_digest(expected, candidate) for candidate in signatures)


def _mac(secret: str, body: bytes, timestamp: int) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


@dataclass(frozen=True, kw_only=True)
class WebhookConfig:
    """Where pauses are announced, and how hard to try.

    Attributes:
        urls: Every pause is POSTed to each of them.
        secret: Signs the deliveries; share it with the receivers, nobody else.
        max_attempts: Attempts per notification, the first included, before it is given up.
        first_backoff: Seconds before the first retry; doubled each time, with jitter.
        max_backoff: The longest wait between two attempts.
        timeout: Seconds one attempt may take, connecting included.
        concurrency: Notifications being delivered at once by one sender.
        poll_interval: Seconds between two reads of the outbox when nothing wakes the sender
            (a pause of another process is picked up within this).
        lease: Seconds a claimed notification stays hidden from other senders; longer than an
            attempt may take, so that only a sender that died lets another send it again.
        outbound: Which addresses the deliveries may reach, A2A pushes included: public ones
            only, unless it allows more (see :mod:`symfonic.transports.webhooks.outbound`). A URL
            written as a refused address, or ``localhost``, is refused here already; a name is
            checked on the addresses it resolves to, at every attempt.
    """

    urls: Sequence[str]
    secret: str
    max_attempts: int = 8
    first_backoff: float = 1.0
    max_backoff: float = 300.0
    timeout: float = 10.0
    concurrency: int = 16
    poll_interval: float = 5.0
    lease: float = 60.0
    retention: float = 7 * 86400.0
    """Seconds a delivered notification is kept (for a look at what was sent) before the sender
    deletes it; undelivered ones are kept until they are delivered."""
    outbound: OutboundPolicy = PUBLIC_ONLY

    def __post_init__(self) -> None:
        for url in self.urls:
            self.outbound.check(url)
        if not self.secret:
            raise ValueError("webhooks need a secret to sign their deliveries")
        if self.max_attempts < 1 or self.concurrency < 1:
            raise ValueError("max_attempts and concurrency must be at least 1")
        if not self.poll_interval > 0:
            raise ValueError("poll_interval must be positive")
        if not self.lease > self.timeout:
            raise ValueError(f"the lease ({self.lease:g} s) must outlast an attempt's timeout "
                             f"({self.timeout:g} s), or a live sender's notification is sent twice")


class DeliveryFailed(SymfonicError):
    """One attempt could not reach the receiver (connection refused, timeout...): retry it."""


class Poster(Protocol):
    async def __call__(self, url: str, body: bytes, headers: Mapping[str, str],
                       seconds: float) -> int:
        """POST ``body``, giving up after ``seconds``, and return the response's status code.

        Raises:
            DeliveryFailed: no response came back.
        """
        ...
