"""The inbox: a person sees the tenant's pending pauses and answers them from a browser.

Sign-in is with an API key (``pauses:read``; answering needs ``pauses:answer``). The key is sent
once, to ``POST /inbox/login``, and never stored in the browser: the session cookie holds only a
random session id and its HMAC (``HttpOnly``, ``SameSite=Strict``, path ``/inbox``); the server
keeps which key the session stands for, so removing the key ends its sessions, and signing out
(``POST /inbox/logout``, with the form's CSRF token) ends the session for every copy of the cookie.
Every form carries a CSRF token derived from the session.

A sign-in posted from another site's page is refused (403) before its key is even read: the
``Origin`` and ``Sec-Fetch-Site`` headers must not name another site. The service's own origins are
the request's base URL and the configured ``public_url`` (:mod:`.sessions` says why both).

Forms work without JavaScript (POST, then a redirect to the pause's page, which shows its
outcome); the script only hides the fields a decision does not need, keeps Send disabled until a
decision is chosen (none ever is in advance; a form without one is refused here all the same),
signs in from an inbox link (``/inbox#key=...``, a fragment that never reaches the server or its
logs) and keeps the list and a pause's page live from ``/inbox/events`` (:mod:`.inbox_events`).

What a person sees of a pause: the conversation that led to it (``host.conversation``, rendered
by :mod:`.pages_conversation`), its form while outstanding, and once answered the decision that
was applied, who gave it and what came of it (:mod:`.pages_decisions`); under the pending pauses,
the tenant's recent decisions (``host.answered``). An answer is stored as given by the session's
key (``answered_by`` = ``inbox:`` and the key's id, so the audit trail names the channel); it
is shown by the key's label (:func:`answerer`). "Take it" and "Release" are
:mod:`.inbox_reviews`'.
"""

from __future__ import annotations

import asyncio
import hmac
import uuid
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from starlette.responses import HTMLResponse, RedirectResponse, Response

from symfonic.kernel.messages import Message
from symfonic.outcome import collect
from symfonic.platform.continuation import (
    AnswerInvalid,
    PauseAlreadyResumed,
    UnknownPauseToken,
)
from symfonic.platform.tickets import Answerer, LedgerTicket
from symfonic.transports.http import forms, pages, pages_decisions
from symfonic.transports.http.accounts.sign_ins import SignedInPerson
from symfonic.transports.http.auth import ApiKey, answerer_of
from symfonic.transports.http.errors import REFUSALS, Refusal, problem_of
from symfonic.transports.http.inbox_access import (
    browser_session,
    checked,
    linked_pause,
    read_form,
    session_of,
    signed_in_form,
    stale_form,
)
from symfonic.transports.http.reached import reached
from symfonic.transports.http.service import Service, service_of
from symfonic.transports.http.sessions import COOKIE, cross_site

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    # Pause tokens are in the inbox's URLs: never sent to another site. Not ``no-referrer``: under
    # it a browser sends ``Origin: null`` with the inbox's own form posts, and sign-in checks it.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
FORM_BODY = {"requestBody": {"required": True, "content": {"application/x-www-form-urlencoded": {
    "schema": {"type": "object", "additionalProperties": {"type": "string"}}}}}}
_HTML = {"content": {"text/html": {"schema": {"type": "string"}}}}
PAGES: dict[int | str, dict[str, Any]] = {code: {**_HTML, "description": why} for code, why in (
    (400, "Malformed token."), (401, "Not signed in, or an unknown key."),
    (403, "The key lacks the permission, the form's CSRF token is wrong, or a sign-in was posted "
          "from another site's page."),
    (404, "No such pause in this tenant."), (409, "Cannot be answered from here."),
    (410, "Expired or revoked."), (413, "Body over the limit."),
    (422, "The answer fails its schema; the form is shown again with the problems."),
    (503, "The service is shutting down: no new run, or this one was cut off."))}

router = APIRouter(tags=["inbox"])
INBOX_PAGE = 100
"""Pauses shown per inbox page; a "More" link continues from the last one."""
HISTORY = 20
"""Recent decisions listed under the pending pauses."""
TokenParam = Annotated[str, PathParam(description="The pause token.")]


def html(text: str, status: int = 200, **headers: str) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers={**SECURITY_HEADERS, **headers})


@router.get("/", include_in_schema=False)
async def root() -> RedirectResponse:
    return RedirectResponse("/inbox", status_code=307)


@router.get("/inbox", response_class=HTMLResponse, summary="The inbox page",
            responses={200: {"description": "The pending pauses, or the sign-in form."}})
async def inbox(request: Request, after: str | None = None,
                view: pages.InboxView = "mine") -> Response:
    """The tenant's pending questions, approvals and interrupts, each with its answer form, a
    page at a time (``after``: the cursor of the previous page's last pause): those the signed-in
    person may answer now, those they took for review (``view=assigned``), or (``view=all``) all
    of them."""
    service = service_of(request)
    found = await browser_session(service, request)
    linked = await linked_pause(service, found)
    if linked is not None:  # a link's session has one page
        return RedirectResponse(f"/inbox/pauses/{linked}", status_code=303)
    signed_in = checked(service, request, found)
    if signed_in is None:
        return html(pages.login(oidc=service.oidc is not None))
    session, key = signed_in
    try:
        tickets = await service.host.pauses(key.scope, limit=INBOX_PAGE, after=after,
                                            answerable_by=answerable(key, view),
                                            held_by=held(key, view))
    except ValueError:
        return html(pages.problem(422, "request_invalid", "not a page of this inbox"), 422)
    views = [await view_of(service, t) for t in tickets]
    more = tickets[-1].cursor if len(tickets) == INBOX_PAGE else None
    return html(pages.inbox(views, tenant=key.tenant, csrf=session.csrf,
                            agents=sorted(service.host.specs), more=more,
                            history=await history_of(service, key), view=view, me=me(key)))


def answerable(key: ApiKey, view: pages.InboxView) -> Answerer | None:
    """Whom a list of ``view`` is filtered for: the key's person (a service key: a service)."""
    return None if view == "all" else answerer_of(key)


def held(key: ApiKey, view: pages.InboxView) -> str | None:
    """Whose held pauses a list of ``view`` shows: the person's, for ``assigned`` (a service
    key's: none, since it holds nothing)."""
    if view != "assigned":
        return None
    return "" if key.person is None else key.person.id


def me(key: ApiKey) -> str | None:
    """The signed-in person's id; None for a service key."""
    return None if key.person is None else key.person.id


INBOX_CHANNEL = "inbox:"
"""How the inbox names the key an answer came with (``answered_by``, the audit trail)."""


@router.post("/inbox/login", summary="Sign in to the inbox with an API key",
             openapi_extra=FORM_BODY, responses={303: {"description": "Signed in."},
                                                  **{c: PAGES[c] for c in (401, 403, 413)}})
async def login(request: Request) -> Response:
    """Sign in with an API key posted from the sign-in form; refused when posted cross-site."""
    service = service_of(request)
    foreign = cross_site(request, service.public_url)
    if foreign is not None:
        return html(pages.problem(403, "forbidden", f"Sign in from this service's own page: "
                                                    f"{foreign}."), 403)
    form = await read_form(request)
    key = await service.keys.authenticate_fresh(form.get("key", "").strip())
    if key is None:
        return html(pages.login("That key is not one this service knows."), 401)
    if not key.allows("pauses:read"):
        return html(pages.login("That key may not read pauses."), 403)
    return await signed_in_at(service, request, form.get("next", ""), key.id)


async def signed_in_at(service: Service, request: Request, target: str, key_id: str,
                       person: SignedInPerson | None = None) -> RedirectResponse:
    """Open the browser's session (for a key, or a person a provider vouched for) and send it to
    ``target``, an inbox page. One session per browser: signing in again ends the last one."""
    previous = await browser_session(service, request)
    if previous is not None:
        await service.sessions.close(previous)
    response = RedirectResponse(target if local(target) else "/inbox", status_code=303)
    response.set_cookie(COOKIE, await service.sessions.open(key_id, person),
                        max_age=int(service.sessions.lifetime), path="/inbox", httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")
    return response


@router.post("/inbox/logout", summary="Sign out of the inbox", openapi_extra=FORM_BODY,
             responses={303: {"description": "Signed out (or was not signed in)."},
                        403: PAGES[403]})
async def logout(request: Request) -> Response:
    """End the session on the server, so no copy of its cookie is signed in any more.

    Needs the CSRF token of the page's sign-out form: without it another site could sign a person
    out at will. A browser that is not signed in (no cookie, an ended session, a removed key) is
    just sent to the sign-in page.
    """
    service = service_of(request)
    signed_in = await session_of(service, request)
    if signed_in is not None:
        session, _ = signed_in
        form = await read_form(request)
        if not hmac.compare_digest(form.get("csrf", ""), session.csrf):
            return problem_page(stale_form())
        await service.sessions.close(session)
    response = RedirectResponse("/inbox", status_code=303)
    response.delete_cookie(COOKIE, path="/inbox", httponly=True, samesite="strict",
                           secure=request.url.scheme == "https")
    return response


@router.get("/inbox/pauses/{token}", response_class=HTMLResponse, summary="One pause's page",
            responses={c: PAGES[c] for c in (400, 401, 404, 410)})
async def pause_page(token: TokenParam, request: Request) -> Response:
    """The pause: its question, its form while outstanding, its outcome once answered."""
    service = service_of(request)
    signed_in = await session_of(service, request)
    if signed_in is None:
        return html(pages.login(next_url=f"/inbox/pauses/{token}", oidc=service.oidc is not None),
                    401)
    session, key = signed_in
    try:
        service.check_tenant(token, key.tenant)
        ticket = await service.host.continuation.ticket(token)
    except REFUSALS as refused:
        return problem_page(refused)
    trail = (await service.host.store()).audit
    return html(pages.pause(await view_of(service, ticket), tenant=key.tenant,
                            csrf=session.csrf, me=me(key),
                            history=await trail.of_pause(key.tenant, ticket.jti),
                            reached=await reached(service, key.scope, ticket.jti)))


@router.post("/inbox/pauses/{token}", summary="Answer a pause from its form",
             openapi_extra=FORM_BODY, responses={303: {"description": "Answered: see the pause's "
                                                                       "page for its outcome."},
                                                  **PAGES})
async def answer(token: TokenParam, request: Request) -> Response:
    """Answer the pause from its form (at most once), then show its page with the outcome.

    The answer is stored as given by the session's key (``answered_by`` = ``inbox:<key id>``). An
    answer to a pause that was answered meanwhile (another tab, another person) is a 409 page
    that says so and shows the decision that *was* applied, with who gave it and when.
    """
    service = service_of(request)
    try:
        key, form, csrf_token = await signed_in_form(service, request, "pauses:answer")
        service.check_tenant(token, key.tenant)
        view = await view_of(service, await service.host.continuation.ticket(token),
                             conversation=False)
        if view.form is None:
            raise Refusal(409, "not_answerable", "this pause cannot be answered from this service")
        service.check_accepting()  # before the claim: a claimed pause must get its turn
        try:
            events = await service.host.continuation.resume_stream(
                token, forms.parse(view.form, form), answered_by=INBOX_CHANNEL + key.id,
                person=key.person)
            bell_of(request).ring(key.tenant)  # claimed: the person's other tabs say so at once
        except AnswerInvalid as invalid:
            return html(pages.pause(await view_of(service, view.ticket), tenant=key.tenant,
                                    csrf=csrf_token,
                                    errors=invalid.errors, submitted=form), 422)
        except PauseAlreadyResumed:
            applied = await view_of(service, await service.host.continuation.ticket(token))
            return html(pages.pause(applied, tenant=key.tenant, csrf=csrf_token, conflict=True),
                        409)
        await collect(service.pump.start(events).events())  # the turn goes on if the person leaves
        bell_of(request).ring(key.tenant)  # and what came of it
    except REFUSALS as refused:
        return problem_page(refused)
    return RedirectResponse(f"/inbox/pauses/{token}", status_code=303)


@router.post("/inbox/runs", summary="Start a run from the inbox", openapi_extra=FORM_BODY,
             responses={200: {**_HTML, "description": "The run's outcome."},
                        303: {"description": "The run paused: its page."},
                        **{c: PAGES[c] for c in (401, 403, 404, 413, 503)}})
async def start_run(request: Request) -> Response:
    service = service_of(request)
    try:
        key, form, csrf_token = await signed_in_form(service, request, "runs")
        agent = service.host.agent(form.get("agent", ""), key.scope)
        text = form.get("input", "").strip()
        if not text:
            raise Refusal(422, "request_invalid", "type a message to start a run")
        service.check_accepting()
        outcome = await collect(service.pump.start(
            agent.stream(text, session_id=f"inbox-{uuid.uuid4().hex}",
                         requested_by=key.person)).events())
    except REFUSALS as refused:
        return problem_page(refused)
    if outcome.status == "paused" and outcome.interrupt is not None:
        return RedirectResponse(f"/inbox/pauses/{outcome.interrupt.token}", status_code=303)
    notice = (f"Completed: {outcome.output}" if outcome.status == "completed"
              else f"Failed: {outcome.error}")
    views = [await view_of(service, t)
             for t in await service.host.pauses(key.scope, limit=INBOX_PAGE)]
    return html(pages.inbox(views, tenant=key.tenant, csrf=csrf_token,
                            agents=sorted(service.host.specs), notice=notice,
                            history=await history_of(service, key)))


async def view_of(service: Service, ticket: LedgerTicket, *,
                  conversation: bool = True) -> pages.PauseView:
    """What the inbox shows of a pause: its form, the conversation that led to it (unless told
    not to read it), and who answered it."""
    plain = form_of(service, ticket)
    messages: list[Message] = []
    if conversation:
        try:
            messages = await service.host.conversation(ticket.token)
        except UnknownPauseToken:  # gone since the ticket was read: nothing to show
            messages = []
    return pages.PauseView(ticket=ticket, form=plain.form, conversation=messages,
                           who=answerer(service, ticket))


async def history_of(service: Service, key: ApiKey) -> list[pages.PauseView]:
    """The key's tenant's recent decisions, latest answer first (no conversations: a list)."""
    return [await view_of(service, t, conversation=False)
            for t in await service.host.answered(key.scope, limit=HISTORY)]


def answerer(service: Service, ticket: LedgerTicket) -> pages_decisions.Answerer:
    """Who answered, for a person: the key's readable label (its id kept beside it for an audit:
    ``answered_by`` stores the id, since labels change and ids do not); ``answered_by`` as stored
    when it names no key of the pause's tenant (an answer given by code, under a name of its own).
    """
    key_id = ticket.answered_by
    if key_id is None:
        return pages_decisions.NOBODY
    key_id = key_id.removeprefix(INBOX_CHANNEL)
    if key_id.startswith("oidc:"):  # a person signed in at the identity provider
        return pages_decisions.Answerer(name=key_id.removeprefix("oidc:"))
    label = service.keys.label_of(key_id, ticket.scope.tenant)
    if label is None:
        return pages_decisions.Answerer(name=key_id)
    return pages_decisions.Answerer(name=label, key_id=key_id)


def form_of(service: Service, ticket: LedgerTicket) -> pages.PauseView:
    """The ticket with its form, read from the definition of the agent that paused.

    When this host no longer serves that definition, the form falls back to the answer schema
    stored with the pause.
    """
    spec = service.host.continuation.interaction(ticket)
    if spec is None:
        if ticket.answer_schema is None:
            return pages.PauseView(ticket=ticket, form=None)
        fallback: forms.Purpose = "ask_user" if ticket.kind == "ask_user" else "typed"
        return pages.PauseView(ticket=ticket, form=forms.AnswerForm(
            purpose=fallback, answer_schema=ticket.answer_schema, question=ticket.question))
    purpose: forms.Purpose = "typed" if spec.purpose == "tool_input" else spec.purpose
    return pages.PauseView(ticket=ticket, form=forms.AnswerForm(
        purpose=purpose, answer_schema=spec.answer_schema, question=ticket.question,
        arguments_schema=spec.question_schema if purpose == "approval" else None))


class Bell:
    """Wakes the open event streams of a tenant when this app's inbox answers one of its pauses,
    rather than at their next poll, so the person's other tab shows the answer as it is given.

    Only this app's own answers ring it; answers given over the API or by another process are
    found by the streams' poll (:data:`~.inbox_events.POLL_SECONDS`). Everything of one app runs
    on its event loop, so plain :class:`asyncio.Event` s do.
    """

    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Event]] = {}

    def ring(self, tenant: str) -> None:
        for event in self._waiting.get(tenant, ()):
            event.set()

    def listen(self, tenant: str, event: asyncio.Event) -> Callable[[], None]:
        """Set ``event`` at every ring for ``tenant``; returns what stops it."""
        waiting = self._waiting.setdefault(tenant, set())
        waiting.add(event)
        return lambda: waiting.discard(event)


def bell_of(request: Request) -> Bell:
    """The app's :class:`Bell`, made at its first use."""
    state = request.app.state
    bell = getattr(state, "inbox_bell", None)
    if not isinstance(bell, Bell):
        bell = state.inbox_bell = Bell()
    return bell


def local(target: str) -> bool:
    """Whether ``target`` is a page of the inbox (never another site: no open redirect)."""
    return target.startswith("/inbox") and not target.startswith("//")


def problem_page(refused: Exception) -> Response:
    problem = problem_of(refused)
    body: dict[str, Any] = problem.body
    if problem.status == 401:
        return html(pages.login(str(body.get("detail", ""))), 401)
    return html(pages.problem(problem.status, str(body["error"]), str(body["detail"])),
                problem.status)
