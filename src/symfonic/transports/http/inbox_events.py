"""``GET /inbox/events``: the inbox's live updates, as Server-Sent Events.

An open inbox page hears of new pauses, and of pauses answered elsewhere, without reloading. The
stream belongs to an inbox session (its cookie; no session is a 401) and shows the session key's
tenant only: it lists that tenant's pauses, so another tenant's never reach it.

**How a change is noticed.** The stream keeps the set of the tenant's outstanding pauses (the
first :data:`~.inbox.INBOX_PAGE` of them, as the page shows) and compares it with the ledger:

- at once when this process stores a pause of the tenant (``host.on_pause`` wakes the stream);
- and every :data:`POLL_SECONDS` otherwise, which is how pauses made by *other processes* on the
  same database (another server, a worker, ``symfonic run``) and answers given elsewhere are
  seen. A poll is one indexed listing query per open stream; simple, and a couple of seconds'
  delay is nothing to a person. (A database-wide notification channel would spare the polls, at
  the price of a listener per store kind; not worth it yet.)

Events (``data`` is JSON):

- ``snapshot`` (first): ``{"pending": [pause ids]}``, what is outstanding now, so a page rendered
  a moment before the stream opened can tell what it missed (the script then re-reads the page);
- ``pause``: ``{"id", "token", "html"}``, a new outstanding pause and its card, rendered and
  escaped by the server like the page (the script inserts it, it builds no HTML itself);
- ``gone``: ``{"id", "token", "status", "card", "row"}``, a pause no longer outstanding: its card
  as it is now (with the decision applied, when answered) and its recent-decisions row (or null);
- ``signed_out``: the session ended (signed out, or its key revoked); the stream then ends.

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
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.scope import Scope
from symfonic.platform.continuation import PauseExpired, PauseRevoked, UnknownPauseToken
from symfonic.transports.http import pages, pages_decisions
from symfonic.transports.http.auth import ApiKey
from symfonic.transports.http.inbox import INBOX_PAGE, SECURITY_HEADERS, session_of, view_of
from symfonic.transports.http.service import Service, service_of
from symfonic.transports.http.sessions import COOKIE, Session

router = APIRouter(tags=["inbox"])
POLL_SECONDS = 2.0
KEEPALIVE_SECONDS = 15.0
RETRY_MS = 2000


@router.get("/inbox/events", summary="The inbox's live updates (Server-Sent Events)",
            response_class=StreamingResponse, responses={
                200: {"description": "``snapshot``, then ``pause``/``gone`` events of the "
                                     "session's tenant.",
                      "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                401: {"description": "Not signed in to the inbox."}})
async def inbox_events(request: Request) -> Response:
    """New and answered pauses of the signed-in tenant, as they happen (see the module doc)."""
    service = service_of(request)
    signed_in = await session_of(service, request)
    if signed_in is None:
        return JSONResponse({"error": "unauthorized", "detail": "sign in to the inbox first"},
                            status_code=401)
    session, key = signed_in
    headers = {**SECURITY_HEADERS, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(_events(service, request, session, key), headers=headers,
                             media_type="text/event-stream")


async def _events(service: Service, request: Request, session: Session,
                  key: ApiKey) -> AsyncIterator[str]:
    wake = asyncio.Event()

    def heard(_: PendingInterrupt, scope: Scope) -> None:
        if scope.tenant == key.tenant:  # a wake-up only: the listing decides what is shown
            wake.set()

    unsubscribe = service.host.on_pause(heard)
    cookie = request.cookies.get(COOKIE, "")
    known: dict[str, str] | None = None
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()
    try:
        yield f"retry: {RETRY_MS}\n\n"
        while not service.stopping:
            wake.clear()  # before the listing: a pause stored during it wakes the next round
            if not await _still_signed_in(service, cookie, key):
                yield _frame("signed_out", {})
                return
            frames = []
            tickets = await service.host.pauses(key.scope, limit=INBOX_PAGE)
            current = {t.jti: t for t in tickets}
            if known is None:
                frames.append(_frame("snapshot", {"pending": list(current)}))
            else:
                for jti, ticket in current.items():
                    if jti not in known:
                        card = pages.card(await view_of(service, ticket), session.csrf)
                        frames.append(_frame("pause", {"id": jti, "token": ticket.token,
                                                       "html": card}))
                for jti, token in known.items():
                    if jti not in current:
                        frames.append(_frame("gone", await _gone(service, session, jti, token)))
            known = {jti: t.token for jti, t in current.items()}
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


async def _still_signed_in(service: Service, cookie: str, key: ApiKey) -> bool:
    session = await service.sessions.find(cookie)
    return session is not None and session.key_id == key.id and service.keys.get(key.id) is not None


async def _gone(service: Service, session: Session, jti: str, token: str) -> dict[str, Any]:
    """What became of a pause that left the outstanding list: its card and decision row."""
    try:
        ticket = await service.host.continuation.ticket(token)
    except PauseExpired:
        return {"id": jti, "token": token, "status": "expired", "card": None, "row": None}
    except PauseRevoked:
        return {"id": jti, "token": token, "status": "revoked", "card": None, "row": None}
    except UnknownPauseToken:
        return {"id": jti, "token": token, "status": "unknown", "card": None, "row": None}
    view = await view_of(service, ticket)
    row = (pages_decisions.row(ticket, view.purpose, view.who)
           if ticket.answered_at is not None else None)
    return {"id": jti, "token": token, "status": ticket.status,
            "card": pages.card(view, session.csrf), "row": row}


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
