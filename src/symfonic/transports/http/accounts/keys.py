"""The API keys port of the HTTP transport: which keys it accepts, kept in the database every
server shares.

A key's record never holds the key: only its digest (a hash), next to the one tenant it acts in
and its permissions. Records are never deleted, only revoked, so the set of keys changes by
exactly two kinds of step (a key added, a key revoked) and :meth:`KeyStore.keys_version` can
count them: a number that grows with every change, read cheaply (one aggregate over a small
table), so a server polls it every half second and reloads the keys only when it moved.

The methods carry a ``key`` in their names, from the days when one store class implemented
every port; they stay, so that adapters written then keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from symfonic.kernel.people import Person
from symfonic.kernel.scope import Scope

__all__ = ["KeyRecord", "KeyStore"]


@dataclass(frozen=True, kw_only=True)
class KeyRecord:
    """One API key as stored: never the key itself.

    Attributes:
        id: The public part of the key, used to find its record.
        tenant: The only tenant the key acts in.
        digest: Hex SHA-256 of the whole key.
        permissions: What the key may do there.
        label: A note for operators.
        created_at: Epoch seconds.
        revoked_at: Epoch seconds; a revoked key is refused from then on.
        person: The person the key acts as (:class:`~symfonic.Person`); None for a service
            key, a machine acting for the tenant.
    """

    id: str
    tenant: str
    digest: str
    permissions: frozenset[str] = field(default_factory=frozenset)
    label: str = ""
    created_at: float = 0.0
    revoked_at: float | None = None
    person: Person | None = None

    @property
    def scope(self) -> Scope:
        return Scope(tenant=self.tenant)

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def allows(self, permission: str) -> bool:
        return permission in self.permissions


class KeyStore(Protocol):
    async def add_key(self, record: KeyRecord) -> bool:
        """Store ``record``; False (and nothing changed) when its id is taken already."""
        ...

    async def get_key(self, key_id: str) -> KeyRecord | None:
        """The record ``key_id`` names, revoked or not."""
        ...

    async def keys(self, tenant: str | None = None) -> Sequence[KeyRecord]:
        """Every record (of ``tenant``, or of every tenant), revoked ones included, oldest first."""
        ...

    async def revoke_key(self, key_id: str, now: float) -> bool:
        """Mark the key revoked at ``now``; False when there is no such key or it already was."""
        ...

    async def keys_version(self) -> int:
        """How many changes the keys have seen (adds plus revocations): 0 for none, and larger
        after every change, whichever process made it."""
        ...
