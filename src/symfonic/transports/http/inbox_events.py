"""``GET /inbox/events``: the inbox's live updates, as Server-Sent Events.

An open inbox page hears of new pauses, and of pauses answered elsewhere, without reloading. The
stream belongs to an inbox session (its cookie; no session is a 401) and shows the session key's
tenant only: it lists that tenant's pauses, so another tenant's never reach it.

**How a change is noticed.** The stream keeps the set of the tenant's outstanding pauses (the
first :data:`~.inbox.INBOX_PAGE` of them, as the page shows) and compares it with the ledger:

- at once when this process stores a pause of the tenant (``host.on_pause`` wakes the stream),
  or when this app's inbox answers one (:class:`~.inbox.Bell`);
- and every :data:`POLL_SECONDS` otherwise, which is how pauses made by *other processes* on the
  same database (another server, a worker, ``symfonic run``) and answers given elsewhere (the
  API included) are seen. A poll is one indexed listing query per open stream; simple, and a
  couple of seconds' delay is nothing to a person. (A database-wide notification channel would
  spare the polls, at the price of a listener per store kind; not worth it yet.)

Events (``data`` is JSON):

- ``snapshot`` (first): ``{"pending": [pause ids]}``, what is outstanding now, so a page rendered
  a moment before the stream opened can tell what it missed (the script then re-reads the page);
- ``pause``: ``{"id", "token", "html"}``, a new outstanding pause and its card, rendered and
  escaped by the server like the page (the script inserts it, it builds no HTML itself);
- ``gone``: ``{"id", "token", "status", "card", "row", "assignee"}``, a pause that left the list:
  its card as it is now (with the decision applied, when answered) and its recent-decisions row
  (or null); ``status`` still ``outstanding`` when somebody else took it for review
  (``assignee``);
- ``changed``: ``{"id", "token", "html", "assignee"}``, a listed pause that somebody took for
  review or gave back: its card as it is now (who is on it, "Take it" or "Release");
- ``signed_out``: the session ended (signed out, or its key revoked); the stream then ends.

**One pause** (``?pause=<token>``, what a pause's own page listens to, so that a tab left open on
a pause answered in another tab stops offering its form): ``snapshot`` holds the pause's id if it
is outstanding, a ``changed`` each time somebody takes it or gives it back, then a ``gone`` as
above each time its status moves once it is not (answered and running, then completed...), its
card as the pause's page shows it. The token must be one of the
session tenant's pauses (else 404, like the page); one that has expired or was revoked is a 410.

A comment line (``: keep-alive``) comes after :data:`KEEPALIVE_SECONDS` of silence. The stream
ends when the service starts stopping (``Service.stopped``), so an open inbox never holds up a
graceful stop; browsers reconnect by themselves (after ``retry`` ms) to whichever server is up.
Under a server other than ``symfonic serve`` (whose :class:`.server.DrainingServer` tells the app
at the signal), set a ``timeout_graceful_shutdown``: the app only hears of a stop once the
server has waited for its connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Query, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.scope import Scope
from symfonic.platform.continuation import PauseExpired, PauseRevoked, UnknownPauseToken
from symfonic.platform.tickets import LedgerTicket
from symfonic.transports.http import pages, pages_decisions
from symfonic.transports.http.auth import ApiKey
from symfonic.transports.http.errors import REFUSALS, problem_of, respond
from symfonic.transports.http.inbox import (
    INBOX_PAGE,
    SECURITY_HEADERS,
    answerable,
    bell_of,
    held,
    me,
    view_of,
)
from symfonic.transports.http.inbox_access import principal_of, session_of
from symfonic.transports.http.service import Service, service_of
from symfonic.transports.http.sessions import COOKIE, Session

router = APIRouter(tags=["inbox"])
POLL_SECONDS = 2.0
KEEPALIVE_SECONDS = 15.0
RETRY_MS = 2000


@router.get("/inbox/events", summary="The inbox's live updates (Server-Sent Events)",
            response_class=StreamingResponse, responses={
                200: {"description": "``snapshot``, then ``pause``/``gone`` events of the "
                                     "session's tenant (of the one pause, with ``pause``).",
                      "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                401: {"description": "Not signed in to the inbox."},
                404: {"description": "``pause`` names no pause of the session's tenant."},
                410: {"description": "``pause`` has expired or was revoked."}})
async def inbox_events(request: Request, pause: Annotated[str | None, Query(
        description="Follow this pause only (its token): what a pause's own page listens to."
        )] = None, view: Annotated[pages.InboxView, Query(
        description="mine (what the person may answer now) or all: the inbox list followed"
        )] = "mine") -> Response:
    """New and answered pauses of the signed-in tenant, as they happen (see the module doc)."""
    service = service_of(request)
    signed_in = await session_of(service, request)
    if signed_in is None:
        return JSONResponse({"error": "unauthorized", "detail": "sign in to the inbox first"},
                            status_code=401)
    session, key = signed_in
    if pause is None:
        rounds: Round = _Listing(service, session, key, view)
    else:
        try:
            service.check_tenant(pause, key.tenant)
        except REFUSALS as refused:
            return respond(problem_of(refused))
        rounds = _Following(service, session, pause, me(key))
    headers = {**SECURITY_HEADERS, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(_events(service, request, key, rounds), headers=headers,
                             media_type="text/event-stream")


class Round(Protocol):
    async def __call__(self) -> list[str]:
        """The frames to send now: the first call's open with a ``snapshot``."""
        ...


class _Listing:
    """The tenant's outstanding pauses (what ``/inbox`` lists): arrivals and departures."""

    def __init__(self, service: Service, session: Session, key: ApiKey,
                 view: pages.InboxView = "mine") -> None:
        self._service, self._session, self._key = service, session, key
        self._answerable = answerable(key, view)
        self._held = held(key, view)
        self._me = me(key)
        self._known: dict[str, tuple[str, str | None]] | None = None
        """What the last round sent: each listed pause's token and who held it."""

    async def __call__(self) -> list[str]:
        service, session = self._service, self._session
        frames = []
        tickets = await service.host.pauses(self._key.scope, limit=INBOX_PAGE,
                                            answerable_by=self._answerable, held_by=self._held)
        current = {t.jti: t for t in tickets}
        if self._known is None:
            frames.append(_frame("snapshot", {"pending": list(current)}))
        else:
            for jti, ticket in current.items():
                known = self._known.get(jti)
                if known is None or known[1] != ticket.assignee:
                    card = pages.card(await view_of(service, ticket), session.csrf, me=self._me)
                    frames.append(_frame("pause" if known is None else "changed",
                                         {"id": jti, "token": ticket.token, "html": card,
                                          "assignee": ticket.assignee}))
            for jti, (token, _) in self._known.items():
                if jti not in current:
                    now, status = await _read(service, token)
                    frames.append(_frame("gone", await _gone(service, session, token, now, status,
                                                             jti=jti, me=self._me)))
        self._known = {jti: (t.token, t.assignee) for jti, t in current.items()}
        return frames


class _Following:
    """One pause, for its own page: a ``gone`` each time its status moves once it is no longer
    outstanding (answered, then what came of it), its card rendered as the page shows it; while
    outstanding, a ``changed`` when somebody takes it for review or gives it back."""

    def __init__(self, service: Service, session: Session, token: str,
                 me: str | None = None) -> None:
        self._service, self._session, self._token = service, session, token
        self._me = me
        self._shown: str | None = None
        self._holder: str | None = None

    async def __call__(self) -> list[str]:
        ticket, status = await _read(self._service, self._token)
        jti = ticket.jti if ticket is not None else ""
        frames = []
        if self._shown is None:
            frames.append(_frame("snapshot", {"pending": [jti] if status == "outstanding" else []}))
        if status not in ("outstanding", self._shown):
            frames.append(_frame("gone", await _gone(self._service, self._session, self._token,
                                                     ticket, status, jti=jti, whole=True)))
        elif status == "outstanding" and ticket is not None and self._shown == status and \
                ticket.assignee != self._holder:
            view = await view_of(self._service, ticket)
            frames.append(_frame("changed", {"id": jti, "token": self._token,
                                             "assignee": ticket.assignee, "html": pages.card(
                                                 view, self._session.csrf, open_conversation=True,
                                                 me=self._me)}))
        self._holder = None if ticket is None else ticket.assignee
        self._shown = status
        return frames


async def _events(service: Service, request: Request, key: ApiKey,
                  rounds: Round) -> AsyncIterator[str]:
    wake = asyncio.Event()

    def heard(_: PendingInterrupt, scope: Scope) -> None:
        if scope.tenant == key.tenant:  # a wake-up only: the round decides what is shown
            wake.set()

    unsubscribe = service.host.on_pause(heard)
    unlisten = bell_of(request).listen(key.tenant, wake)
    cookie = request.cookies.get(COOKIE, "")
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()
    try:
        yield f"retry: {RETRY_MS}\n\n"
        while not service.stopping:
            wake.clear()  # before the round: a change made during it wakes the next one
            if not await _still_signed_in(service, cookie, key):
                yield _frame("signed_out", {})
                return
            frames = await rounds()
            for frame in frames:
                yield frame
            if frames:
                quiet_since = loop.time()
            elif loop.time() - quiet_since >= KEEPALIVE_SECONDS:
                yield ": keep-alive\n\n"
                quiet_since = loop.time()
            if await request.is_disconnected():
                return
            await _nap(wake, service.stopped, POLL_SECONDS)
    finally:
        unsubscribe()
        unlisten()


async def _still_signed_in(service: Service, cookie: str, key: ApiKey) -> bool:
    session = await service.sessions.find(cookie)
    return session is not None and session.key_id == key.id and \
        principal_of(service, session) is not None


async def _read(service: Service, token: str) -> tuple[LedgerTicket | None, str]:
    """The pause's ticket and status; no ticket when it can no longer be read (expired, revoked,
    or gone)."""
    try:
        ticket = await service.host.continuation.ticket(token)
    except PauseExpired:
        return None, "expired"
    except PauseRevoked:
        return None, "revoked"
    except UnknownPauseToken:
        return None, "unknown"
    return ticket, ticket.status


async def _gone(service: Service, session: Session, token: str, ticket: LedgerTicket | None,
                status: str, *, jti: str, whole: bool = False,
                me: str | None = None) -> dict[str, Any]:
    """What became of a pause that left the outstanding list: its card (with its conversation
    open when ``whole``, as its own page shows it) and its recent-decisions row."""
    if ticket is None:
        return {"id": jti, "token": token, "status": status, "card": None, "row": None}
    view = await view_of(service, ticket)
    row = (pages_decisions.row(ticket, view.purpose, view.who)
           if ticket.answered_at is not None else None)
    return {"id": jti, "token": token, "status": status,
            "card": pages.card(view, session.csrf, open_conversation=whole, me=me), "row": row,
            "assignee": ticket.assignee}


async def _nap(wake: asyncio.Event, stopped: asyncio.Event, seconds: float) -> None:
    """Until ``wake`` or ``stopped`` is set, or ``seconds`` pass."""
    waiters = [asyncio.ensure_future(wake.wait()), asyncio.ensure_future(stopped.wait())]
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        for waiter in waiters:
            with contextlib.suppress(asyncio.CancelledError):
                await waiter


def _frame(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"
