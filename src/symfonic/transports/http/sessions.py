"""The inbox's sign-in sessions: the cookie, the sessions kept in the store, CSRF tokens, and the
same-origin check that keeps sign-in from being forged by another site.

**Sessions live in the store** (:class:`~symfonic.transports.http.accounts.SignInStore`), so every
server behind a load balancer sees them and a restart signs nobody out. The cookie holds only a
random session id; the store keeps its digest (so reading the table gives nobody a cookie), the
API key it acts with, its CSRF token and its expiry (12 h). Signing out deletes the row, so a
copied cookie stops working at once on every server instead of at its expiry; revoking the key
signs its sessions out too (the key is checked at every request). Expired rows are pruned at the
next sign-in.

**Sign-in is refused cross-site** (login CSRF: a form on another site posting an attacker's key to
``/inbox/login`` would sign a person's browser in to the attacker's tenant, where whatever they
type lands). A sign-in is refused when its ``Sec-Fetch-Site`` header is present and is neither
``same-origin`` nor ``none`` (a typed URL or a bookmark), or when its ``Origin`` header is present
and is not one of the service's own origins:

- the origin the request itself was addressed to (its scheme, ``Host`` header and port, i.e. the
  request's base URL), which is what a browser compares with too, so the inbox works under
  whatever name a person reaches it by (``localhost`` or ``127.0.0.1``);
- the origin of the configured ``public_url``, for a service behind a proxy that does not pass the
  original scheme and host on (there the request's own base URL is the proxy's internal one).

``Origin: null`` (a sandboxed or privacy-stripped request) is not an origin of ours, so it is
refused. A request with neither header (curl, scripts, old browsers) is allowed: it cannot be
told apart from a same-site one, and current browsers send at least ``Origin`` with every
cross-site form post.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request

from symfonic.transports.http.accounts.sign_ins import SignedInPerson, SignIn, SignInStore

COOKIE = "symfonic_inbox"
SESSION_SECONDS = 12 * 3600
SAME_SITE_FETCHES = ("same-origin", "none")
_DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int | None]


@dataclass(frozen=True, kw_only=True)
class Session:
    """One signed-in browser: the key it signed in with and its forms' CSRF token."""

    digest: str
    key_id: str
    csrf: str
    person: SignedInPerson | None = None
    """Who the session acts as when it was opened by an OpenID sign-in, not a key."""


class InboxSessions:
    """The sign-ins of one app, read from and written to the store it is bound to."""

    def __init__(self, *, lifetime: float = SESSION_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self.lifetime = lifetime
        self._clock = clock
        self._store: SignInStore | None = None

    def bind(self, store: SignInStore) -> None:
        """Keep sessions in ``store`` (the host's, shared by every server on its database)."""
        self._store = store

    async def open(self, key_id: str, person: SignedInPerson | None = None) -> str:
        """Start a session for the key ``key_id`` (or, with ``person``, for that person, under
        the id ``oidc:<subject>``); the cookie value that stands for it."""
        store, now = self._bound(), self._clock()
        await store.prune_sign_ins(now)
        session_id = secrets.token_urlsafe(32)
        await store.open_sign_in(SignIn(digest=_digest(session_id), key_id=key_id,
                                        csrf=secrets.token_urlsafe(32), expires_at=now + self.lifetime,
                                        person=person))
        return session_id

    async def find(self, cookie: str) -> Session | None:
        """The live session ``cookie`` stands for; None when it is unknown, expired or ended."""
        if not cookie or len(cookie) > 128:
            return None
        found = await self._bound().find_sign_in(_digest(cookie), self._clock())
        return None if found is None else Session(digest=found.digest, key_id=found.key_id,
                                                  csrf=found.csrf, person=found.person)

    async def close(self, session: Session) -> None:
        """End ``session``: its cookie is not signed in any more, wherever it was copied to."""
        await self._bound().end_sign_in(session.digest)

    async def spend_link(self, id: str, expires_at: float) -> bool:
        """Use up an emailed link: True the first time, on any server (see
        :meth:`SignInStore.spend_link`)."""
        return await self._bound().spend_link(id, expires_at)

    def _bound(self) -> SignInStore:
        if self._store is None:
            raise RuntimeError("the inbox's sessions are not bound to a store: the app's lifespan "
                               "binds them when it starts")
        return self._store


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def cross_site(request: Request, public_url: str | None) -> str | None:
    """Why ``request`` may come from another site's page (see the module docstring); None when
    it may only come from the service's own pages or from outside a browser."""
    fetch = request.headers.get("sec-fetch-site")
    if fetch is not None and fetch.strip().lower() not in SAME_SITE_FETCHES:
        return f"the browser says the request came from a page of another site ({fetch})"
    origin = request.headers.get("origin")
    if origin is not None:
        own = {_origin(str(request.base_url)), _origin(public_url) if public_url else None}
        if _origin(origin) not in own - {None}:
            return f"the request came from {origin}, not from this service's own page"
    return None


def _origin(url: str) -> Origin | None:
    """``(scheme, host, port)`` of ``url``, default ports filled in; None when it is no origin."""
    try:
        parts = urlsplit(url.strip())
        scheme, host, port = parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    except ValueError:  # a port that is no number, or out of range
        return None
    if not scheme or not host:
        return None
    return scheme, host, port if port is not None else _DEFAULT_PORTS.get(scheme)
