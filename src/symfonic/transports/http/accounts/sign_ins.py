"""The inbox's sign-ins port: which browser sessions are signed in, kept where every server of a
deployment sees them.

A browser that signed in holds a random session id in a cookie; the store keeps only the id's
digest (a hash), the API key the session acts with (or, for a person an OpenID provider vouched
for, who they are: :class:`SignedInPerson`), its CSRF token and its expiry. Kept in the
store rather than in a server's memory, a sign-in works on every server behind a load balancer and
survives a restart, and signing out on one server ends it on all of them at once.

The methods carry ``sign_in`` in their names, from the days when one store class implemented
every port.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from symfonic.kernel.people import Person

__all__ = ["SignIn", "SignInStore", "SignedInPerson"]


@dataclass(frozen=True, kw_only=True)
class SignedInPerson:
    """Who a session acts as when no API key stands behind it: a person an OpenID provider
    vouched for at sign-in (:mod:`symfonic.transports.http.oidc`), or one who followed a link
    emailed to them, in the tenant and with the permissions the deployment gives such people.
    Kept with the session, as it was then: a change of groups applies from the next sign-in.

    Attributes:
        issuer: Who vouched for them: the provider, or ``email-link``.
        pause: The one pause the session may see and act on (a link's session); None for all of
            its tenant's.
    """

    tenant: str
    person: Person
    permissions: frozenset[str]
    issuer: str
    pause: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "person": self.person.to_dict(),
                "permissions": sorted(self.permissions), "issuer": self.issuer,
                **({"pause": self.pause} if self.pause is not None else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SignedInPerson:
        """Raises:
            ValueError: not what this library wrote.
        """
        try:
            return cls(tenant=str(data["tenant"]), person=Person.from_dict(data["person"]),
                       permissions=frozenset(data["permissions"]), issuer=str(data["issuer"]),
                       pause=None if data.get("pause") is None else str(data["pause"]))
        except (KeyError, TypeError) as wrong:
            raise ValueError(f"not a signed-in person: {wrong}") from wrong


@dataclass(frozen=True, kw_only=True)
class SignIn:
    """One signed-in browser session, as stored: never the session id itself.

    Attributes:
        digest: Hex SHA-256 of the session id the cookie carries.
        key_id: The API key the session acts with (its tenant and permissions come from it, so
            revoking the key signs the session out too); ``oidc:<subject>`` for a person.
        csrf: The token the session's forms must carry.
        expires_at: Epoch seconds; the session is not signed in from then on.
    """

    digest: str
    key_id: str
    csrf: str
    expires_at: float
    person: SignedInPerson | None = None
    """Who the session acts as when no key stands behind it; None for a key's session."""


class SignInStore(Protocol):
    async def open_sign_in(self, sign_in: SignIn) -> None:
        """Store ``sign_in`` (its digest is new: the id behind it is random)."""
        ...

    async def find_sign_in(self, digest: str, now: float) -> SignIn | None:
        """The sign-in ``digest`` names, unless it ended or expired by ``now``."""
        ...

    async def end_sign_in(self, digest: str) -> bool:
        """Sign the session out; False when it was not signed in."""
        ...

    async def prune_sign_ins(self, now: float) -> int:
        """Forget the sign-ins (and the spent links) expired by ``now``; how many sign-ins."""
        ...

    async def spend_link(self, id: str, expires_at: float) -> bool:
        """Use up the emailed sign-in link ``id`` (:mod:`symfonic.transports.email.links`): True
        the first time, False ever after, from any server. It is remembered until
        ``expires_at``, when the link itself stops being accepted."""
        ...
