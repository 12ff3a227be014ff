"""The tenant boundary every turn runs inside."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$")


@dataclass(frozen=True, kw_only=True)
class Scope:
    """Who a turn runs for.

    An :class:`~symfonic.Agent` is bound to one scope for its whole life; a pause token records the
    scope it was issued under, and a resume recovers the scope from the token rather than from the
    caller. The tenant is validated because it ends up in storage keys and signed claims: a value
    with separators or control characters could otherwise collide with another tenant's key.

    Attributes:
        tenant: The isolation unit. Two scopes with different tenants share nothing.
    """

    tenant: str

    def __post_init__(self) -> None:
        if not isinstance(self.tenant, str) or not _TENANT.match(self.tenant):
            raise ValueError(
                f"invalid tenant {self.tenant!r}: use 1-128 letters, digits or ._:@- "
                "starting with a letter or digit"
            )

    @property
    def key(self) -> str:
        """The storage key of this scope."""
        return self.tenant

    def to_claim(self) -> dict[str, Any]:
        return {"tenant": self.tenant}

    @classmethod
    def from_claim(cls, claim: Any) -> Scope:
        if not isinstance(claim, dict) or not isinstance(claim.get("tenant"), str):
            raise ValueError(f"not a scope claim: {claim!r}")
        return cls(tenant=claim["tenant"])
