"""Who a browser is signed in as, and what its session may reach: the inbox's sessions read.

Every inbox route asks :func:`session_of` (or :func:`signed_in_form` for a form) and gets the
session with the key it stands for, or nothing. A session opened by a key acts as that key; one an
OpenID provider or an emailed link vouched for acts as that person, as a key of no secret. A
link's session reaches one pause (:func:`within_reach`); for anything else of its tenant it is not
signed in, and ``/inbox`` sends it back to its pause (:func:`linked_pause`).
"""

from __future__ import annotations

import hmac

from starlette.requests import Request

from symfonic.capabilities.human.tokens import PauseClaims, TokenRejected
from symfonic.kernel.scope import Scope
from symfonic.transports.http.auth import ApiKey, Permission
from symfonic.transports.http.errors import Refusal
from symfonic.transports.http.service import Service
from symfonic.transports.http.sessions import COOKIE, Session


async def linked_pause(service: Service, session: Session | None) -> str | None:
    """The token of the one pause of a link's ``session``; None for any other session."""
    signed = None if session is None else session.person
    if signed is None or signed.pause is None:
        return None
    return await service.host.token_of(signed.pause, Scope(tenant=signed.tenant))


async def browser_session(service: Service, request: Request) -> Session | None:
    """The session the browser's cookie names, live, unchecked for this request (one read)."""
    return await service.sessions.find(request.cookies.get(COOKIE, ""))


async def session_of(service: Service, request: Request) -> tuple[Session, ApiKey] | None:
    """The browser's live session and the key it stands for, while both are valid and the
    request is within the session's reach (:func:`within_reach`)."""
    return checked(service, request, await browser_session(service, request))


def checked(service: Service, request: Request,
            session: Session | None) -> tuple[Session, ApiKey] | None:
    """:func:`session_of` for a session already read."""
    if session is None:
        return None
    key = principal_of(service, session)
    if key is None or not key.allows("pauses:read") or not within_reach(service, request, session):
        return None
    return session, key


def within_reach(service: Service, request: Request, session: Session) -> bool:
    """Whether ``session`` may make ``request``. A session an emailed link opened reaches its one
    pause (its page, its forms, its live updates) and signing out, nothing else of the tenant:
    for any other page it is not signed in."""
    pause = only_pause(session)
    if pause is None or request.url.path == "/inbox/logout":
        return True
    token = request.path_params.get("token") or (
        request.query_params.get("pause") if request.url.path == "/inbox/events" else None)
    if not token:
        return False
    claims: PauseClaims | None
    try:
        claims = service.host.keys.decode(token, service.host.now())
    except TokenRejected as rejected:
        claims = rejected.claims  # an expired pause's page still shows its outcome
    return claims is not None and claims.jti == pause


def only_pause(session: Session) -> str | None:
    """The one pause a link's session may see; None for a session that sees its tenant's."""
    return None if session.person is None else session.person.pause


def principal_of(service: Service, session: Session) -> ApiKey | None:
    """What a session acts as: its key while the key lives, or the person an OpenID provider (or
    an emailed link) vouched for, as a key of no secret (every route reads one shape: tenant,
    permissions, person). A link's person must still have a live key: revoking it ends the
    sessions their links opened."""
    if session.person is None:
        return service.keys.get(session.key_id)
    signed = session.person
    if signed.pause is not None and service.keys.person(signed.tenant, signed.person.id) is None:
        return None
    return ApiKey(id=session.key_id, tenant=signed.tenant, digest="",
                  permissions=signed.permissions, label=signed.person.display_name,
                  person=signed.person)


async def signed_in_form(service: Service, request: Request,
                          permission: Permission) -> tuple[ApiKey, dict[str, str], str]:
    """The session's key, the posted form and its (checked) CSRF token."""
    signed_in = await session_of(service, request)
    if signed_in is None:
        raise Refusal(401, "unauthorized", "sign in to the inbox first")
    session, key = signed_in
    form = await read_form(request)
    expected = session.csrf
    if not hmac.compare_digest(form.get("csrf", ""), expected):
        raise stale_form()
    if not key.allows(permission):
        raise Refusal(403, "forbidden", f"this key lacks the {permission!r} permission")
    return key, form, expected


def stale_form() -> Refusal:
    return Refusal(403, "forbidden", "the form is stale or was not sent from the inbox: reload it")


async def read_form(request: Request) -> dict[str, str]:
    """The posted fields. A field sent twice is refused (422) rather than settled by whichever
    came last: ``decision=reject&decision=approve`` must not approve."""
    async with request.form() as form:
        items = [(name, value) for name, value in form.multi_items() if isinstance(value, str)]
    fields = dict(items)
    if len(fields) < len(items):
        names = [name for name, _ in items]
        twice = ", ".join(sorted({repr(n) for n in names if names.count(n) > 1}))
        raise Refusal(422, "request_invalid", f"the form sent {twice} more than once: nothing was "
                                              "done; send each field once")
    return fields
