"""Single sign-on's refusals: a callback this browser did not start, a provider that says no or
cannot be reached, and ID tokens that must not sign anybody in (another audience, another
sign-in's nonce, expired, signed by a key the provider does not hold). Each is refused with a
sentence saying why, and no session.

The tokens are made here with a key of the test's own, served as the provider's JWKS from an
in-process transport: what is under test is the checking, not a provider (the sign-in itself is
tested against a real one, ``test_oidc_browser``).
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from symfonic.transports.http.oidc import OIDCError, OIDCProvider
from symfonic.transports.http.oidc_config import OIDCConfig
from symfonic.transports.http.sessions import COOKIE
from tests.support.oidc import provider_config
from tests.support.servers import ServerFactory

ISSUER = "https://id.example.test"
CONFIG = OIDCConfig(issuer=ISSUER, client_id="inbox", client_secret="s", tenant="acme")
KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)
STRANGER = RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)


def provider_serving_keys() -> OIDCProvider:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/.well-known/openid-configuration":
            return httpx.Response(200, json={
                "issuer": ISSUER, "authorization_endpoint": f"{ISSUER}/auth",
                "token_endpoint": f"{ISSUER}/token", "jwks_uri": f"{ISSUER}/jwks"})
        if request.url.path == "/jwks":
            return httpx.Response(200, json={"keys": [KEY.as_dict(private=False)]})
        return httpx.Response(404)

    return OIDCProvider(CONFIG, http=httpx.AsyncClient(transport=httpx.MockTransport(answer)))


def token(key: RSAKey = KEY, **changes: Any) -> str:
    claims = {"iss": ISSUER, "aud": "inbox", "sub": "ada", "nonce": "n-1",
              "iat": int(time.time()), "exp": int(time.time()) + 300, **changes}
    return jwt.encode({"alg": "RS256", "kid": "k1"}, claims, key)


async def test_a_token_of_this_sign_in_verifies() -> None:
    claims = await provider_serving_keys()._verified(token(), "n-1")
    assert claims["sub"] == "ada"


@pytest.mark.parametrize(("forged", "why"), [
    (lambda: token(aud="another-app"), "not for this sign-in"),
    (lambda: token(nonce="n-2"), "not for this sign-in"),
    (lambda: token(iss="https://evil.example.test"), "not for this sign-in"),
    (lambda: token(exp=int(time.time()) - 3600), "not for this sign-in"),
    (lambda: token(STRANGER), "does not verify"),
    (lambda: token()[:-4] + "AAAA", "does not verify"),
])
async def test_a_token_that_must_not_sign_anybody_in_is_refused(forged: Any, why: str) -> None:
    with pytest.raises(OIDCError, match=why):
        await provider_serving_keys()._verified(forged(), "n-1")


async def test_a_provider_that_names_another_issuer_is_not_believed() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"issuer": "https://evil.example.test",
                                         "authorization_endpoint": "x", "token_endpoint": "x",
                                         "jwks_uri": "x"})

    lookalike = OIDCProvider(CONFIG, http=httpx.AsyncClient(transport=httpx.MockTransport(answer)))
    with pytest.raises(OIDCError, match="names issuer"):
        await lookalike.start("https://inbox.example.test/inbox/oidc/callback", "/inbox")


def test_the_configuration_is_refused_when_it_is_incomplete() -> None:
    assert OIDCConfig.from_env({}) is None
    with pytest.raises(ValueError, match="client id and a client secret"):
        OIDCConfig.from_env({"SYMFONIC_OIDC_ISSUER": ISSUER, "SYMFONIC_OIDC_CLIENT_ID": "inbox"})
    with pytest.raises(ValueError, match="http"):
        OIDCConfig(issuer="id.example.test", client_id="a", client_secret="b")
    read = OIDCConfig.from_env({"SYMFONIC_OIDC_ISSUER": ISSUER, "SYMFONIC_OIDC_CLIENT_ID": "inbox",
                                "SYMFONIC_OIDC_CLIENT_SECRET": "hush-7f3a", "SYMFONIC_OIDC_TENANT": "acme",
                                "SYMFONIC_OIDC_GROUPS_CLAIM": "roles",
                                "SYMFONIC_OIDC_PERMISSIONS": "pauses:read"})
    assert read is not None and (read.tenant, read.groups_claim, read.permissions) == (
        "acme", "roles", frozenset({"pauses:read"}))
    assert "hush-7f3a" not in repr(read)  # a log of the configuration shows no secret


async def test_the_callback_refuses_what_this_browser_did_not_start(
        start_server: ServerFactory) -> None:
    server = start_server(oidc=provider_config())  # its provider never runs: nothing reaches it
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
        page = (await http.get("/inbox")).text
        assert "Sign in with single sign-on" in page
        for forged in ("", "forged.cookie"):  # none, or one not signed by this inbox
            http.cookies.set("symfonic_oidc", forged, path="/inbox/oidc")
            refused = await http.get("/inbox/oidc/callback?code=c&state=s")
            assert refused.status_code == 401
            assert "not started from this browser" in refused.text
            assert COOKIE not in refused.headers.get("set-cookie", "")
        said = await http.get("/inbox/oidc/callback?error=access_denied&error_description=No")
        assert said.status_code == 401 and "the identity provider said: No" in said.text
        unreachable = await http.get("/inbox/oidc/login")
        assert unreachable.status_code == 502 and "cannot be read" in unreachable.text
        assert (await http.get("/inbox", follow_redirects=False)).text.count("Sign in") >= 1


async def test_without_a_provider_there_is_no_sign_on(start_server: ServerFactory) -> None:
    server = start_server()
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
        assert "single sign-on" not in (await http.get("/inbox")).text
        assert (await http.get("/inbox/oidc/login")).status_code == 404
