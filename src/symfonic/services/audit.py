"""The audit trail: every decision people (and the clock) made about a tenant's pauses, chained.

A decision is an answer, a vote, an edit, an assignment taken or given back, a revocation, an
expiry, or the outcome of the turn an answer resumed. Each is appended to its tenant's trail by
the very transaction that makes the decision (the ledger adapters write it beside the row they
change), so the trail holds a record if and only if the decision happened.

Each record carries the digest of the one before it, and its own digest covers that and every
field of its own (:func:`chain_digest`). Altering a record breaks its digest; removing one, or
swapping two, breaks the link of the record after it; :func:`verify` names the first record that
no longer fits. Deleting the newest records leaves a shorter chain that still verifies: keep the
head (:attr:`AuditRecord.digest` of the last record) somewhere else when that matters.

The digest is computed the same way in Python (memory and SQLite) and in PostgreSQL's
``symfonic_audit`` function, over a length-prefixed concatenation, which both can write byte for
byte without agreeing on a JSON encoder.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

__all__ = ["Actor", "AuditBreak", "AuditEvent", "AuditRecord", "AuditTrail", "Channel",
           "chain_digest", "channel_of", "every_record", "verify"]

Kind = Literal["answered", "voted", "edited", "assigned", "released", "revoked", "expired",
               "completed", "paused_again", "failed", "reminded", "escalated"]
Channel = Literal["api", "inbox", "a2a", "mcp", "cli", "system"]
_PREFIXES: dict[str, Channel] = {"inbox:": "inbox", "a2a:": "a2a", "mcp:": "mcp", "cli:": "cli",
                                  "system:": "system"}


def channel_of(credential: str | None) -> Channel:
    """Where a decision came from, told by the credential the caller answered with: the
    transports name it ``inbox:<key>``, ``a2a:<key>``, ``mcp:<key>``, ``cli:<person>``, and the
    HTTP API by the bare key id; no credential at all, or ``system:<why>`` (the answer a pause
    gives itself at its expiry), is the system itself."""
    if credential is None:
        return "system"
    for prefix, channel in _PREFIXES.items():
        if credential.startswith(prefix):
            return channel
    return "api"


@dataclass(frozen=True)
class Actor:
    """Who made a decision: a person's id (None for a service key or code) and the credential
    they used (None for the system)."""

    person: str | None = None
    credential: str | None = None

    @property
    def channel(self) -> Channel:
        return channel_of(self.credential)


SYSTEM = Actor()


@dataclass(frozen=True, kw_only=True)
class AuditEvent:
    """One decision about a pause, before the store gives it its place in its tenant's chain
    (the store knows the tenant and the pause from the row the decision changes)."""

    kind: Kind
    at: float
    actor: Actor = SYSTEM
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def at_us(self) -> int:
        """The time in whole microseconds: what is stored and hashed (a float's text differs
        between Python and PostgreSQL; an integer's does not)."""
        return round(self.at * 1_000_000)

    def detail_text(self) -> str:
        return json.dumps(dict(self.detail), separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    """One record of a tenant's trail.

    Attributes:
        seq: Its place in the tenant's chain, from 1.
        prev: The digest of record ``seq - 1`` ('' for the first).
        digest: :func:`chain_digest` of this record.
        detail: JSON text, as hashed (the decision, the edited arguments, the assignee).
    """

    tenant: str
    seq: int
    at_us: int
    jti: str
    kind: str
    person: str | None
    credential: str | None
    channel: str
    detail: str
    prev: str
    digest: str

    def fields(self) -> tuple[str, ...]:
        """What the digest covers, in order (``None`` as '')."""
        return (self.prev, str(self.seq), self.tenant, str(self.at_us), self.jti, self.kind,
                self.person or "", self.credential or "", self.channel, self.detail)

    def to_dict(self) -> dict[str, Any]:
        """As ``GET /v1/audit`` and ``symfonic audit export`` give it: the stored text kept."""
        return {"tenant": self.tenant, "seq": self.seq, "at": self.at_us / 1_000_000,
                "at_us": self.at_us, "pause_id": self.jti, "kind": self.kind,
                "person": self.person, "credential": self.credential, "channel": self.channel,
                "detail": self.detail, "prev": self.prev, "digest": self.digest}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditRecord:
        return cls(tenant=data["tenant"], seq=int(data["seq"]), at_us=int(data["at_us"]),
                   jti=data["pause_id"], kind=data["kind"], person=data["person"],
                   credential=data["credential"], channel=data["channel"], detail=data["detail"],
                   prev=data["prev"], digest=data["digest"])


def chain_digest(fields: Iterable[str]) -> str:
    """SHA-256 (hex) of the fields, each written as ``<length>:<text>`` so that no two different
    field lists read the same (lengths in characters, as PostgreSQL's ``length`` counts them)."""
    material = "".join(f"{len(text)}:{text}" for text in fields)
    return hashlib.sha256(material.encode()).hexdigest()


def next_record(tenant: str, jti: str, event: AuditEvent,
                last: tuple[int, str] | None) -> AuditRecord:
    """``event`` on pause ``jti`` as the record after ``last`` (its ``(seq, digest)``; None: the
    tenant's first)."""
    seq, prev = (last[0] + 1, last[1]) if last is not None else (1, "")
    actor, at_us, detail = event.actor, event.at_us, event.detail_text()
    # The digest from the fields directly, in AuditRecord.fields' order (a test holds the two
    # together): making the record twice, once unsigned, was a third of this function's time.
    digest = chain_digest((prev, str(seq), tenant, str(at_us), jti, event.kind,
                           actor.person or "", actor.credential or "", actor.channel, detail))
    return AuditRecord(tenant=tenant, seq=seq, at_us=at_us, jti=jti, kind=event.kind,
                       person=actor.person, credential=actor.credential, channel=actor.channel,
                       detail=detail, prev=prev, digest=digest)


@dataclass(frozen=True)
class AuditBreak:
    """Where a trail stops proving itself: the first record that does not fit, and why."""

    tenant: str
    seq: int
    why: str

    def __str__(self) -> str:
        return f"tenant {self.tenant!r}, record {self.seq}: {self.why}"


def verify(records: Iterable[AuditRecord], tenant: str) -> AuditBreak | None:
    """Check one tenant's records (read in ``seq`` order); the first break, or None.

    A record breaks the chain when its digest is not that of its fields (it was altered), when
    it does not follow its predecessor's number (one was removed or moved), or when its ``prev``
    is not its predecessor's digest (removed, reordered, or the predecessor rewritten whole)."""
    previous: AuditRecord | None = None
    for record in records:
        expected_seq = 1 if previous is None else previous.seq + 1
        if record.tenant != tenant:
            return AuditBreak(tenant, record.seq, f"belongs to tenant {record.tenant!r}")
        if record.seq != expected_seq:
            return AuditBreak(tenant, record.seq, f"follows record {expected_seq - 1}: "
                              f"record {expected_seq} is missing or out of place")
        if record.prev != ("" if previous is None else previous.digest):
            return AuditBreak(tenant, record.seq, "its link does not hold the digest of the "
                              "record before it (a record was removed, reordered or rewritten)")
        if chain_digest(record.fields()) != record.digest:
            return AuditBreak(tenant, record.seq, "its contents do not match its digest "
                              "(the record was altered)")
        previous = record
    return None


class AuditTrail(Protocol):
    """Reading the trail (writing it is the ledger's, inside its transactions)."""

    async def records(self, tenant: str, *, after: int = 0,
                      limit: int = 100) -> list[AuditRecord]:
        """The tenant's records with ``seq > after``, in order, at most ``limit``."""
        ...

    async def tenants(self) -> list[str]:
        """Every tenant with a record, sorted."""
        ...

    async def of_pause(self, tenant: str, jti: str, *, limit: int = 100) -> list[AuditRecord]:
        """One pause's records, in order: what a person sees of who was reminded, who took it,
        who answered (at most ``limit``)."""
        ...


async def every_record(trail: AuditTrail, tenant: str, *,
                       page: int = 500) -> AsyncIterator[AuditRecord]:
    """All of a tenant's records, in order, read a page at a time."""
    after = 0
    while True:
        batch = await trail.records(tenant, after=after, limit=page)
        for record in batch:
            yield record
        if len(batch) < page:
            return
        after = batch[-1].seq
