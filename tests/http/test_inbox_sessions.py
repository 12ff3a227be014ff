"""Inbox sessions: sign-in only from the service's own pages, sign-out with the form's CSRF token
that ends the session on the server for every copy of its cookie, and sessions kept in the store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.requests import Request

from symfonic.stores.memory import MemoryStore
from symfonic.transports.http.accounts import accounts_of
from symfonic.transports.http.sessions import COOKIE, InboxSessions, cross_site
from tests.support.clients import paused_run, sign_in
from tests.support.servers import LiveServer, ServerFactory

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


async def test_sessions_expire_end_and_are_never_found_by_a_guess() -> None:
    now = [1000.0]
    store = MemoryStore()
    sessions = InboxSessions(lifetime=60, clock=lambda: now[0])
    with pytest.raises(RuntimeError, match="not bound"):
        await sessions.open("k0")
    sessions.bind(accounts_of(store).sign_ins)
    early = await sessions.open("k0")
    found = await sessions.find(early)
    assert found is not None and found.key_id == "k0"
    now[0] += 60
    assert await sessions.find(early) is None  # expired
    cookie = await sessions.open("k1")  # opening pruned the expired one
    assert await accounts_of(store).sign_ins.find_sign_in(found.digest, 0.0) is None
    for guess in ("", cookie[:-1], cookie + "0", found.digest, "x" * 500):
        assert await sessions.find(guess) is None
    session = await sessions.find(cookie)
    assert session is not None and session.digest != cookie  # the store never holds the cookie
    await sessions.close(session)
    assert await sessions.find(cookie) is None
    fresh = await sessions.find(await sessions.open("k1"))
    assert fresh is not None and fresh.csrf != session.csrf  # a token dies with its session


async def test_sessions_are_shared_by_every_server_on_the_database_and_outlive_a_restart(
        start_server: ServerFactory) -> None:
    first = start_server()
    async with httpx.AsyncClient(base_url=first.url, timeout=20) as browser:
        csrf = await sign_in(browser, first)
        cookie = browser.cookies[COOKIE]
    first.served.stop()  # a restart: the next server on the same database knows the session
    second, third = start_server(), start_server()
    for server in (second, third):
        async with with_cookie(server, cookie) as copy:
            await until_signed_in(copy)
    async with with_cookie(second, cookie) as copy:
        out = await copy.post("/inbox/logout", data={"csrf": csrf})
        assert out.status_code == 303
    async with with_cookie(third, cookie) as copy:  # signed out on one: out on all at once
        assert SIGN_IN_FORM in (await copy.get("/inbox")).text


async def until_signed_in(client: httpx.AsyncClient) -> None:
    """Wait until ``client``'s server signs it in: a server learns of keys another one issued
    within a second (its key refresh), and the session stands for such a key."""
    for _ in range(40):
        if SIGNED_IN in (await client.get("/inbox")).text:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the session was not signed in on this server")


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
