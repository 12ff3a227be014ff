"""The inbox's door for emailed links: ``GET`` shows it, ``POST`` signs in to one pause.

What a link is and grants is in :mod:`symfonic.transports.email.links`. These routes keep two
promises of it:

- **opening answers nothing and spends nothing.** ``GET /inbox/link`` checks the link and shows
  whom and what it is for, with one button. A mail scanner that fetches the link sees a page; the
  person presses the button (``POST``, same-origin only), which spends the link and opens a session
  bound to that pause; the pause's page then asks for the decision;
- **it is that person's, once.** The person must still have a live key of the tenant; a browser
  signed in as someone else is refused rather than switched; a spent link is refused, on every
  server (the store remembers it until it expires).

The pages keep the inbox's headers: no caching, and a referrer only to this service's own pages
(the link is in the URL; ``no-referrer`` would make the button's post arrive as ``Origin: null``,
which a same-origin check refuses).

Every refusal is a page that says why, and changes nothing.
"""

from __future__ import annotations

from html import escape

from fastapi import APIRouter, Request
from starlette.responses import Response

from symfonic.kernel.people import Person
from symfonic.kernel.scope import Scope
from symfonic.transports.email.channel import LINK_PATH
from symfonic.transports.email.links import InboxLink, LinkRefused
from symfonic.transports.http import pages
from symfonic.transports.http.accounts.sign_ins import SignedInPerson
from symfonic.transports.http.errors import REFUSALS
from symfonic.transports.http.inbox import (
    FORM_BODY,
    PAGES,
    html,
    problem_page,
    signed_in_at,
)
from symfonic.transports.http.inbox_access import browser_session, principal_of, read_form
from symfonic.transports.http.service import Service, service_of
from symfonic.transports.http.sessions import cross_site

router = APIRouter(tags=["inbox"])
LINK_ISSUER = "email-link"
"""The issuer of a session a link opened (:attr:`SignedInPerson.issuer`)."""
LINK_PERMISSIONS = frozenset({"pauses:read", "pauses:answer"})
_STATUS = {"malformed": 400, "forged": 400, "expired": 410, "spent": 410, "wrong_person": 409,
           "unknown_person": 403}


@router.get(LINK_PATH, summary="An emailed link: whom it signs in, and a button to do it",
            responses={200: {"description": "The link's page: nothing is signed in or answered."},
                       400: PAGES[400], 404: PAGES[404], 410: PAGES[410]})
async def link_page(request: Request, t: str = "") -> Response:
    service = service_of(request)
    try:
        link = _read(service, t)
        person = _person(service, link).display_name
    except LinkRefused as refused:
        return _refused(refused)
    return html(pages.page("Open this pause", (
        f"<h1>A decision waits for {escape(person)}</h1>"
        f"<p>This link signs <strong>{escape(person)}</strong> in to one pause of tenant "
        f"<code>{escape(link.tenant)}</code>, once. Nothing is decided until you answer on the "
        "pause's page.</p>"
        f'<form method="post" action="{LINK_PATH}" id="link">'
        f'<input type="hidden" name="t" value="{escape(t, quote=True)}">'
        '<button type="submit">Sign in to this pause</button></form>')))


@router.post(LINK_PATH, summary="Spend an emailed link: sign in to its one pause",
             openapi_extra=FORM_BODY,
             responses={303: {"description": "Signed in: to the pause's page."},
                        **{c: PAGES[c] for c in (400, 403, 404, 409, 410)}})
async def follow_link(request: Request) -> Response:
    service = service_of(request)
    foreign = cross_site(request, service.public_url)
    if foreign is not None:
        return html(pages.problem(403, "forbidden", f"Open the link from its own page: {foreign}."),
                    403)
    try:
        form = await read_form(request)
        link = _read(service, form.get("t", ""))
        person = _person(service, link)
        await _check_browser(service, request, link)
        token = await service.host.token_of(link.pause, Scope(tenant=link.tenant))
        if token is None:
            raise LinkRefused("malformed", "this link names no pause of its tenant")
        if not await service.sessions.spend_link(link.id, link.expires_at):
            raise LinkRefused("spent", "this link was used already: it signs in once. Ask "
                                       "for the pause in the inbox, or wait for its reminder")
    except LinkRefused as refused:
        return _refused(refused)
    except REFUSALS as refused:  # a form sent with a field twice
        return problem_page(refused)
    signed = SignedInPerson(tenant=link.tenant, person=person, permissions=LINK_PERMISSIONS,
                            issuer=LINK_ISSUER, pause=link.pause)
    return await signed_in_at(service, request, f"/inbox/pauses/{token}", f"link:{person.id}",
                              signed)


def _read(service: Service, text: str) -> InboxLink:
    if service.email is None:
        raise LinkRefused("malformed", "this service sends no email links")
    return service.email.links.read(text, service.host.now())


def _person(service: Service, link: InboxLink) -> Person:
    """The link's person as a live key of its tenant describes them now."""
    person = service.keys.person(link.tenant, link.person)
    if person is None:
        raise LinkRefused("unknown_person", "this link's person has no live key any more")
    return person


async def _check_browser(service: Service, request: Request, link: InboxLink) -> None:
    """A browser signed in as somebody else keeps its session: the link is not theirs."""
    current = await browser_session(service, request)
    if current is None:
        return
    key = principal_of(service, current)
    if key is None:
        return  # a session that no longer stands for anyone: signing in replaces it
    if key.tenant != link.tenant or key.person is None or key.person.id != link.person:
        who = key.person.display_name if key.person is not None else "a service key"
        raise LinkRefused("wrong_person", f"this browser is signed in as {who}, and the link "
                                          "is somebody else's: sign out first")


def _refused(refused: LinkRefused) -> Response:
    status = _STATUS[refused.reason]
    return html(pages.problem(status, f"link_{refused.reason}", str(refused)), status)
