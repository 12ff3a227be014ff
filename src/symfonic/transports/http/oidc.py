"""Signing people in to the inbox with OpenID Connect: authorization code, PKCE, a checked ID token.

With ``SYMFONIC_OIDC_ISSUER``, ``SYMFONIC_OIDC_CLIENT_ID`` and ``SYMFONIC_OIDC_CLIENT_SECRET``
set (:meth:`OIDCConfig.from_env`), the inbox's sign-in page offers "Sign in with single sign-on"
beside the API-key form, which stays for development and for service operators.

The flow, and why each step is there:

1. ``GET /inbox/oidc/login`` reads the provider's discovery document (its ``issuer`` must be the
   configured one, or a lookalike could hand out its own endpoints), makes a fresh ``state``,
   ``nonce`` and PKCE verifier, keeps them in a short-lived cookie signed with a key derived from
   the client secret (so every server of the deployment can read it at the callback), and
   redirects the browser to the provider's authorization endpoint (Authlib builds the request).
2. ``GET /inbox/oidc/callback`` checks the ``state`` against that cookie (a callback this browser
   did not start is refused: login CSRF), exchanges the code with the verifier and the client
   secret at the token endpoint, and validates the ID token with the provider's JWKS (joserfc):
   its signature, ``iss``, ``aud``, ``exp`` and the ``nonce`` of this sign-in.
3. The person is the token's ``sub``, ``name`` and ``email``, and the groups of the configured
   claim (``groups`` by default), completed from the userinfo endpoint when the ID token leaves
   them out (its ``sub`` must be the token's). The session (:mod:`.sessions`) acts as that person in the
   configured tenant, with the configured permissions, and is kept in the store like a key's.

The provider is configured by the operator, not named by a request, so no caller can point the
server at an address of their choosing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

try:
    from authlib.integrations.httpx_client import AsyncOAuth2Client
    from joserfc import jwt
    from joserfc.errors import JoseError
    from joserfc.jwk import KeySet
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise ImportError("single sign-on needs its extra: pip install 'symfonic-runtime[oidc]'") \
        from missing

from symfonic.errors import SymfonicError
from symfonic.kernel.people import Person
from symfonic.transports.http.accounts.sign_ins import SignedInPerson
from symfonic.transports.http.oidc_config import OIDCConfig

__all__ = ["OIDCConfig", "OIDCError", "OIDCProvider"]

PENDING_SECONDS = 600
"""How long a sign-in may spend at the provider before its pending cookie lapses."""
PENDING_COOKIE = "symfonic_oidc"
METADATA_SECONDS = 3600
"""How long the discovery document and the keys are reused before they are read again (a key
the token names and the set lacks is read again at once: the provider rotated)."""


class OIDCError(SymfonicError, PermissionError):
    """A sign-in that cannot be completed, and why, in words for the person at the browser."""


@dataclass(frozen=True, kw_only=True)
class Pending:
    """A sign-in on its way through the provider, as its cookie carries it."""

    state: str
    nonce: str
    verifier: str
    next_url: str
    expires_at: float


class OIDCProvider:
    """One configured provider: its metadata, its keys, and the two halves of a sign-in."""

    def __init__(self, config: OIDCConfig, *, http: httpx.AsyncClient | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self._http = http
        self._clock = clock
        self._metadata: tuple[float, dict[str, Any]] | None = None
        self._keys: tuple[float, KeySet] | None = None
        self._cookie_key = hashlib.sha256(b"symfonic-oidc:" + config.client_secret.encode()).digest()

    async def start(self, redirect_uri: str, next_url: str) -> tuple[str, str]:
        """Where to send the browser, and the pending cookie's value.

        Raises:
            OIDCError: the provider's discovery document cannot be read or is not its own.
        """
        metadata = await self._discovery()
        pending = Pending(state=secrets.token_urlsafe(24), nonce=secrets.token_urlsafe(24),
                          verifier=secrets.token_urlsafe(48), next_url=next_url,
                          expires_at=self._clock() + PENDING_SECONDS)
        async with self._client(redirect_uri) as client:
            url, _ = client.create_authorization_url(
                metadata["authorization_endpoint"], state=pending.state, nonce=pending.nonce,
                code_verifier=pending.verifier)
        return url, self._seal(pending)

    async def finish(self, cookie: str, state: str, code: str,
                     redirect_uri: str) -> tuple[SignedInPerson, str]:
        """The person the provider vouches for, and where they were going.

        Raises:
            OIDCError: the callback does not belong to this browser's sign-in, the code is
                refused, or the ID token does not verify.
        """
        pending = self._opened(cookie)
        if not hmac.compare_digest(pending.state, state):
            raise OIDCError("this sign-in was not started from this browser: start it again")
        metadata = await self._discovery()
        async with self._client(redirect_uri) as client:
            try:
                token = await client.fetch_token(metadata["token_endpoint"], code=code,
                                                 code_verifier=pending.verifier)
            except Exception as refused:  # Authlib raises its own and httpx's errors here
                raise OIDCError(f"the identity provider refused the sign-in: {refused}") from refused
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise OIDCError("the identity provider sent no ID token")
        claims = await self._verified(id_token, pending.nonce)
        access_token = token.get("access_token")
        if isinstance(metadata.get("userinfo_endpoint"), str) and isinstance(access_token, str):
            claims = await self._with_userinfo(claims, metadata["userinfo_endpoint"], access_token)
        return self._person(claims), pending.next_url

    async def _with_userinfo(self, claims: dict[str, Any], endpoint: str,
                             access_token: str) -> dict[str, Any]:
        """The ID token's claims completed by the userinfo endpoint's: many providers keep the
        profile (name, email, groups) out of the ID token and hand it out there. The ID token
        stays the authority on who signed in: userinfo about another subject is refused."""
        info = await self._get_json(endpoint, bearer=access_token)
        if info.get("sub") != claims["sub"]:
            raise OIDCError("the identity provider's userinfo is about another person")
        return {**info, **claims}

    def _client(self, redirect_uri: str) -> AsyncOAuth2Client:
        return AsyncOAuth2Client(client_id=self.config.client_id,
                                 client_secret=self.config.client_secret,
                                 scope=" ".join(self.config.scopes), redirect_uri=redirect_uri,
                                 code_challenge_method="S256", timeout=10)

    async def _discovery(self) -> dict[str, Any]:
        now = self._clock()
        if self._metadata is not None and self._metadata[0] > now:
            return self._metadata[1]
        url = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
        metadata = await self._get_json(url)
        if metadata.get("issuer") != self.config.issuer:
            raise OIDCError(f"the discovery document at {url} names issuer "
                            f"{metadata.get('issuer')!r}, not {self.config.issuer!r}")
        for endpoint in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not isinstance(metadata.get(endpoint), str):
                raise OIDCError(f"the discovery document lacks {endpoint}")
        self._metadata = (now + METADATA_SECONDS, metadata)
        return metadata

    async def _key_set(self, *, fresh: bool = False) -> KeySet:
        now = self._clock()
        if not fresh and self._keys is not None and self._keys[0] > now:
            return self._keys[1]
        jwks = await self._get_json((await self._discovery())["jwks_uri"])
        try:
            keys = KeySet.import_key_set(jwks)  # type: ignore[arg-type]  # a JWKS document
        except (JoseError, ValueError, TypeError) as bad:
            raise OIDCError(f"the identity provider's keys cannot be read: {bad}") from bad
        self._keys = (now + METADATA_SECONDS, keys)
        return keys

    async def _verified(self, id_token: str, nonce: str) -> dict[str, Any]:
        """The ID token's claims once its signature, issuer, audience, lifetime and nonce hold."""
        for fresh in (False, True):  # a key the set lacks: the provider may have rotated
            try:
                decoded = jwt.decode(id_token, await self._key_set(fresh=fresh),
                                     algorithms=["RS256", "PS256", "ES256", "EdDSA"])
                break
            except (JoseError, ValueError) as bad:
                if fresh:
                    raise OIDCError(f"the ID token does not verify: {bad}") from bad
        registry = jwt.JWTClaimsRegistry(
            now=int(self._clock()), leeway=60,
            iss={"essential": True, "value": self.config.issuer},
            aud={"essential": True, "value": self.config.client_id},
            sub={"essential": True}, exp={"essential": True},
            nonce={"essential": True, "value": nonce})
        try:
            registry.validate(decoded.claims)
        except JoseError as bad:
            raise OIDCError(f"the ID token is not for this sign-in: {bad}") from bad
        return dict(decoded.claims)

    def _person(self, claims: Mapping[str, Any]) -> SignedInPerson:
        groups = claims.get(self.config.groups_claim) or []
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise OIDCError(f"the {self.config.groups_claim!r} claim is not a list of names")
        name = claims.get("name")
        email = claims.get("email")
        try:
            person = Person(id=str(claims["sub"]), name=name if isinstance(name, str) else "",
                            email=email if isinstance(email, str) else "",
                            groups=frozenset(groups))
        except ValueError as unusable:
            raise OIDCError(f"this account cannot act here: {unusable}") from unusable
        return SignedInPerson(tenant=self.config.tenant, person=person,
                              permissions=self.config.permissions, issuer=self.config.issuer)

    async def _get_json(self, url: str, *, bearer: str | None = None) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        if bearer is not None:
            headers["Authorization"] = f"Bearer {bearer}"
        try:
            if self._http is not None:
                response = await self._http.get(url, headers=headers)
            else:
                async with httpx.AsyncClient(timeout=10, follow_redirects=False) as http:
                    response = await http.get(url, headers=headers)
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, ValueError) as failed:
            raise OIDCError(f"the identity provider cannot be read at {url}: {failed}") from failed
        if not isinstance(document, dict):
            raise OIDCError(f"{url} is not a JSON object")
        return document

    def _seal(self, pending: Pending) -> str:
        body = base64.urlsafe_b64encode(json.dumps(pending.__dict__).encode()).decode()
        return f"{body}.{self._mac(body)}"

    def _opened(self, cookie: str) -> Pending:
        body, _, mac = cookie.partition(".")
        if not body or len(cookie) > 4096 or not hmac.compare_digest(mac, self._mac(body)):
            raise OIDCError("this sign-in was not started from this browser: start it again")
        data = json.loads(base64.urlsafe_b64decode(body))
        pending = Pending(**data)
        if pending.expires_at <= self._clock():
            raise OIDCError("this sign-in took too long: start it again")
        return pending

    def _mac(self, body: str) -> str:
        return hmac.new(self._cookie_key, body.encode(), hashlib.sha256).hexdigest()
