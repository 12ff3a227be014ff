"""Inbox sessions: sign-in only from the service's own pages, sign-out with the form's CSRF token
that ends the session on the server for every copy of its cookie, and the registry's bounds."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.requests import Request

from symfonic.transports.http.sessions import COOKIE, InboxSessions, cross_site
from tests.http.helpers import LiveServer, paused_run, sign_in

SIGNED_IN = 'action="/inbox/logout"'
SIGN_IN_FORM = 'action="/inbox/login"'


@pytest.fixture
async def browser(server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    """Keeps cookies and does not follow redirects, as a test wants to see them."""
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
        yield http


def with_cookie(server: LiveServer, cookie: str) -> httpx.AsyncClient:
    """Another client holding a copy of the session cookie (``Cookie`` sent by hand)."""
    return httpx.AsyncClient(base_url=server.url, timeout=20, headers={"Cookie": f"{COOKIE}={cookie}"})


@pytest.mark.parametrize("headers", [
    {"Origin": "https://evil.example"},
    {"Origin": "null"},
    {"Origin": "http://127.0.0.1:1"},  # the same host on another port is another origin
    {"Origin": "{own}", "Sec-Fetch-Site": "cross-site"},  # either header refusing is enough
    {"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},  # a sibling subdomain is another site's page too
])
async def test_a_sign_in_posted_from_another_site_is_refused(
        browser: httpx.AsyncClient, server: LiveServer, headers: dict[str, str]) -> None:
    sent = {name: value.replace("{own}", server.url) for name, value in headers.items()}
    refused = await browser.post("/inbox/login", data={"key": server.secrets["acme"]}, headers=sent)
    assert refused.status_code == 403
    assert "set-cookie" not in refused.headers
    assert 'data-error="forbidden"' in refused.text and "own page" in refused.text
    assert refused.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in refused.headers["content-security-policy"]  # the inbox's page
    assert SIGN_IN_FORM in (await browser.get("/inbox")).text


@pytest.mark.parametrize("headers", [
    {},  # curl, scripts, old browsers: nothing to tell by
    {"Origin": "{own}"},
    {"Origin": "{own}", "Sec-Fetch-Site": "same-origin"},
    {"Sec-Fetch-Site": "none"},  # typed into the address bar
    {"Host": "localhost:{port}", "Origin": "http://localhost:{port}"},  # under another name
    {"Host": "backend.internal:8080", "Origin": "{own}"},  # behind a proxy: the public_url
])
async def test_a_sign_in_from_the_services_own_page_is_accepted(
        browser: httpx.AsyncClient, server: LiveServer, headers: dict[str, str]) -> None:
    port = server.url.rsplit(":", 1)[1]
    sent = {name: value.replace("{own}", server.url).replace("{port}", port)
            for name, value in headers.items()}
    signed_in = await browser.post("/inbox/login", data={"key": server.secrets["acme"]},
                                   headers=sent)
    assert signed_in.status_code == 303, signed_in.text
    assert signed_in.headers["location"] == "/inbox"
    assert SIGNED_IN in (await browser.get("/inbox")).text


async def test_signing_out_needs_the_forms_csrf_token(browser: httpx.AsyncClient,
                                                     server: LiveServer) -> None:
    csrf = await sign_in(browser, server)
    for form in ({}, {"csrf": "0" * 64}):
        refused = await browser.post("/inbox/logout", data=form)
        assert refused.status_code == 403
        assert 'data-error="forbidden"' in refused.text and "set-cookie" not in refused.headers
    typed = await browser.get("/inbox/logout")  # a link or a typed URL signs nobody out
    assert typed.status_code == 405
    page = (await browser.get("/inbox")).text
    assert SIGNED_IN in page and f'value="{csrf}"' in page


async def test_signing_out_ends_the_session_for_every_copy_of_its_cookie(
        browser: httpx.AsyncClient, server: LiveServer) -> None:
    token = await paused_run(browser, server)
    csrf = await sign_in(browser, server)
    copied = browser.cookies[COOKIE]
    async with with_cookie(server, copied) as thief:
        assert SIGNED_IN in (await thief.get("/inbox")).text

        out = await browser.post("/inbox/logout", data={"csrf": csrf})
        assert out.status_code == 303 and out.headers["location"] == "/inbox"
        assert f'{COOKIE}=""' in out.headers["set-cookie"] and "Max-Age=0" in out.headers["set-cookie"]

        assert SIGN_IN_FORM in (await thief.get("/inbox")).text
        answer = await thief.post(f"/inbox/pauses/{token}", data={"decision": "approve",
                                                                  "csrf": csrf})
        assert answer.status_code == 401
        assert (await thief.get(f"/inbox/pauses/{token}")).status_code == 401
    ticket = await browser.get(f"/v1/pauses/{token}", headers=server.auth("acme"))
    assert ticket.json()["status"] == "outstanding"
    assert SIGN_IN_FORM in (await browser.get("/inbox")).text
    again = await browser.post("/inbox/logout", data={})  # nothing left to end: no CSRF needed
    assert again.status_code == 303


async def test_signing_in_again_ends_the_browsers_previous_session(
        browser: httpx.AsyncClient, server: LiveServer) -> None:
    await sign_in(browser, server)
    first = browser.cookies[COOKIE]
    await sign_in(browser, server, "acme-reader")
    assert browser.cookies[COOKIE] != first
    async with with_cookie(server, first) as old:
        assert SIGN_IN_FORM in (await old.get("/inbox")).text
    assert SIGNED_IN in (await browser.get("/inbox")).text


async def test_revoking_the_key_ends_its_sessions(browser: httpx.AsyncClient,
                                                   server: LiveServer) -> None:
    await sign_in(browser, server)
    assert server.served.call(server.keys.revoke(server.secrets["acme"].split("_")[1]))
    assert SIGN_IN_FORM in (await browser.get("/inbox")).text


def test_the_registry_expires_sessions_and_caps_their_number() -> None:
    now = [1000.0]
    sessions = InboxSessions(lifetime=60, limit=3, clock=lambda: now[0])
    early = sessions.open("k0")
    found = sessions.find(early)
    assert found is not None and found.key_id == "k0"
    now[0] += 61
    assert sessions.find(early) is None and len(sessions) == 0  # expired, and dropped

    cookies = [sessions.open(f"k{n}") for n in range(5)]
    assert len(sessions) == 3  # the two oldest made room
    assert [sessions.find(c) is not None for c in cookies] == [False, False, True, True, True]
    now[0] += 30
    later = sessions.open("k5")
    assert len(sessions) == 3
    now[0] += 31
    last = sessions.open("k6")  # the three opened 61 s ago expired: opening prunes them
    assert len(sessions) == 2
    assert sessions.find(later) is not None and sessions.find(last) is not None


def test_a_cookie_is_signed_in_only_while_its_session_is_known_here() -> None:
    sessions = InboxSessions()
    cookie = sessions.open("k1")
    session_id, _, signature = cookie.partition(".")
    assert len(session_id) == 32 and len(signature) == 64
    for forged in ("", session_id, f"{session_id}.{'0' * 64}", f"{'0' * 32}.{signature}",
                   cookie + "0"):
        assert sessions.find(forged) is None
    assert InboxSessions().find(cookie) is None  # another app (another process): another secret
    session = sessions.find(cookie)
    assert session is not None
    csrf = sessions.csrf(session)
    sessions.close(session)
    assert sessions.find(cookie) is None and len(sessions) == 0
    fresh = sessions.find(sessions.open("k1"))
    assert fresh is not None and sessions.csrf(fresh) != csrf  # a token dies with its session
    with pytest.raises(ValueError, match="limit"):
        InboxSessions(limit=0)


def _request(host: str, scheme: str = "http", **headers: str) -> Request:
    raw = [(b"host", host.encode())] + [(name.replace("_", "-").lower().encode(), value.encode())
                                        for name, value in headers.items()]
    return Request({"type": "http", "method": "POST", "scheme": scheme, "path": "/inbox/login",
                    "root_path": "", "query_string": b"", "headers": raw,
                    "server": ("10.0.0.5", 8000)})


def test_own_origins_are_the_requests_base_url_and_the_public_url() -> None:
    public = "https://agents.example.com"
    allowed = [
        (_request("agents.example.com", "https", origin="https://agents.example.com:443"), None),
        (_request("agents.example.com", origin="HTTP://Agents.Example.COM"), None),  # case
        (_request("agents.example.com", origin="http://agents.example.com:80"), None),
        (_request("10.0.0.5:8000", origin="https://agents.example.com"), public),  # proxied
        (_request("[::1]:8000", origin="http://[::1]:8000"), None),
        (_request("x", sec_fetch_site="Same-Origin"), None),
    ]
    for request, public_url in allowed:
        assert cross_site(request, public_url) is None, request.headers
    refused = [
        (_request("10.0.0.5:8000", origin="https://agents.example.com"), None),  # no public_url
        (_request("agents.example.com", "https", origin="http://agents.example.com"), public),
        (_request("agents.example.com", origin="http://agents.example.com:99999"), None),
        (_request("agents.example.com", origin="agents.example.com"), None),  # no scheme
        (_request("agents.example.com", origin=""), None),
        (_request("agents.example.com", origin="https://agents.example.com.evil.example"), public),
    ]
    for request, public_url in refused:
        assert cross_site(request, public_url) is not None, request.headers
