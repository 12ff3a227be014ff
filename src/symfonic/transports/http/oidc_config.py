"""How the inbox's single sign-on is configured (:mod:`.oidc` does the signing in).

Apart from the sign-in itself so that reading the configuration (``symfonic serve`` does, from
the environment) imports nothing of the ``[oidc]`` extra: a server without single sign-on never
needs Authlib.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from symfonic.kernel.scope import Scope

__all__ = ["PERSON_PERMISSIONS", "OIDCConfig"]

PERSON_PERMISSIONS = frozenset({"runs", "pauses:read", "pauses:answer"})
"""What a signed-in person may do by default: start runs, read and answer (or take) pauses."""


@dataclass(frozen=True, kw_only=True)
class OIDCConfig:
    """Where people sign in, and what they may do once they have.

    Attributes:
        issuer: The provider's issuer URL (its discovery document is under it).
        client_id, client_secret: This inbox's registration at the provider.
        tenant: The tenant every signed-in person acts in.
        groups_claim: The ID token claim that lists a person's groups.
        scopes: What the sign-in asks for.
        permissions: What a signed-in person may do (:data:`PERSON_PERMISSIONS`).
    """

    issuer: str
    client_id: str
    client_secret: str = field(repr=False)
    tenant: str = "default"
    groups_claim: str = "groups"
    scopes: tuple[str, ...] = ("openid", "profile", "email")
    permissions: frozenset[str] = PERSON_PERMISSIONS

    def __post_init__(self) -> None:
        if not self.issuer.startswith(("https://", "http://")):
            raise ValueError(f"the OpenID issuer must be an http(s) URL, not {self.issuer!r}")
        if not self.client_id or not self.client_secret:
            raise ValueError("an OpenID sign-in needs a client id and a client secret")
        Scope(tenant=self.tenant)  # the tenant alphabet: refused here rather than at sign-in
        if "openid" not in self.scopes:
            raise ValueError("the OpenID scopes must include 'openid'")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OIDCConfig | None:
        """The configuration ``SYMFONIC_OIDC_*`` describes; None without an issuer.

        ``SYMFONIC_OIDC_ISSUER``, ``_CLIENT_ID``, ``_CLIENT_SECRET`` (all three needed),
        ``_TENANT`` (``default``), ``_GROUPS_CLAIM`` (``groups``), ``_SCOPES`` (space-separated,
        ``openid profile email``), ``_PERMISSIONS`` (comma-separated).

        Raises:
            ValueError: an issuer without a client id or secret, or a value out of shape.
        """
        env = os.environ if env is None else env
        issuer = env.get("SYMFONIC_OIDC_ISSUER", "").strip()
        if not issuer:
            return None
        permissions = env.get("SYMFONIC_OIDC_PERMISSIONS", "")
        return cls(issuer=issuer, client_id=env.get("SYMFONIC_OIDC_CLIENT_ID", "").strip(),
                   client_secret=env.get("SYMFONIC_OIDC_CLIENT_SECRET", "").strip(),
                   tenant=env.get("SYMFONIC_OIDC_TENANT", "default").strip(),
                   groups_claim=env.get("SYMFONIC_OIDC_GROUPS_CLAIM", "groups").strip(),
                   scopes=tuple(env.get("SYMFONIC_OIDC_SCOPES", "openid profile email").split()),
                   permissions=(frozenset(p.strip() for p in permissions.split(",") if p.strip())
                                or PERSON_PERMISSIONS))
