"""The inbox's sign-in sessions: the cookie, the server-side registry, CSRF tokens, and the
same-origin check that keeps sign-in from being forged by another site.

**Sessions live on the server.** The cookie holds only a random session id and an HMAC of it; the
registry (one per app, in memory) maps the id to the API key it was opened with and its expiry.
Signing out removes the id, so a copied cookie stops working at once instead of at its expiry, and
a cookie whose id the registry does not know is not signed in. The HMAC secret is random per app
too, so sessions were always per process: a restart signs everybody out (their keys still work),
and several worker processes do not share sessions (put sticky sessions in front of them, or sign
in to each). The registry is bounded: entries expire with the session (12 h), and past
:data:`MAX_SESSIONS` the oldest session is dropped to make room, so a client that signs in in a
loop costs memory for at most that many sessions.

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
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request

COOKIE = "symfonic_inbox"
SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 10_000
SAME_SITE_FETCHES = ("same-origin", "none")
_DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int | None]


@dataclass(frozen=True, kw_only=True)
class Session:
    """One signed-in browser: the key it signed in with, until ``expires`` (epoch seconds)."""

    id: str
    key_id: str
    expires: float


class InboxSessions:
    """The sessions of one app, and the secret that signs their cookies and CSRF tokens.

    Entries are kept in the order they were opened; every session lives ``lifetime`` seconds, so
    that is also the order they expire in, and pruning only ever looks at the front.
    """

    def __init__(self, *, lifetime: float = SESSION_SECONDS, limit: int = MAX_SESSIONS,
                 clock: Callable[[], float] = time.time, secret: bytes | None = None) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.lifetime = lifetime
        self.limit = limit
        self._clock = clock
        self._secret = secret or secrets.token_bytes(32)
        self._live: dict[str, Session] = {}

    def open(self, key_id: str) -> str:
        """Start a session for the key ``key_id``; the cookie value that stands for it."""
        self._prune()
        while len(self._live) >= self.limit:
            del self._live[next(iter(self._live))]  # the oldest goes first
        session = Session(id=secrets.token_hex(16), key_id=key_id,
                          expires=self._clock() + self.lifetime)
        self._live[session.id] = session
        return f"{session.id}.{self._mac(session.id)}"

    def find(self, cookie: str) -> Session | None:
        """The live session ``cookie`` stands for; None when it is forged, expired or ended."""
        session_id, _, signature = cookie.partition(".")
        if not session_id or not hmac.compare_digest(signature, self._mac(session_id)):
            return None
        session = self._live.get(session_id)
        if session is None:
            return None
        if session.expires <= self._clock():
            del self._live[session_id]
            return None
        return session

    def close(self, session: Session) -> None:
        """End ``session``: its cookie is not signed in any more, wherever it was copied to."""
        self._live.pop(session.id, None)

    def csrf(self, session: Session) -> str:
        """The CSRF token of the forms ``session`` is shown; it dies with the session."""
        return self._mac("csrf:" + session.id)

    def __len__(self) -> int:
        return len(self._live)

    def _prune(self) -> None:
        now = self._clock()
        while self._live:
            oldest = next(iter(self._live.values()))
            if oldest.expires > now:
                return
            del self._live[oldest.id]

    def _mac(self, text: str) -> str:
        return hmac.new(self._secret, text.encode(), hashlib.sha256).hexdigest()


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
