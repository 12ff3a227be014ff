"""Whatever arrives as a token, the decoder refuses it with a ``TokenRejected`` (and the host with
an ``UnknownPauseToken`` subclass): never a ``RecursionError``, a ``UnicodeError`` or a 500.
Only the one encoding we mint verifies."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symfonic.capabilities.human.tokens import PauseClaims, TokenKeys, TokenRejected

NOW = 1_800_000_000
KEYS = TokenKeys("first-secret-0123456789")
TOKEN = KEYS.encode(PauseClaims(jti="j", scope={"tenant": "acme"}, run="r", root_run="r0",
                                session="s", thread="t", checkpoint="c", name="ask_user",
                                tool_call_id="call", pin="a@1", iat=NOW, exp=NOW + 60))


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def rejected(token: object) -> str:
    with pytest.raises(TokenRejected) as refused:
        KEYS.decode(token, NOW)  # type: ignore[arg-type]
    return refused.value.reason


def test_a_deeply_nested_header_is_malformed_not_a_recursion_error() -> None:
    rest = TOKEN.partition(".")[2]
    nested = b64(b"[" * 1100 + b"]" * 1100)
    assert rejected(f"{nested}.{rest}") == "malformed"
    small_nest = b64(b"[" * 40 + b"]" * 40)  # under the size cap: the parser's turn to refuse
    assert rejected(f"{small_nest}.{rest}") == "malformed"


def test_only_the_canonical_encoding_verifies() -> None:
    header, payload, signature = TOKEN.split(".")
    assert KEYS.decode(TOKEN, NOW).jti == "j"
    for variant in (TOKEN + "=", TOKEN + "==", f"{header}=.{payload}.{signature}",
                    f"{header}.{payload}.{signature}.", f" {TOKEN}", TOKEN.replace("-", "+"),
                    f"{header}.{payload}.{signature[:-1]}{'A' if signature[-1] != 'A' else 'B'}"):
        assert rejected(variant) in ("malformed", "forged"), variant


def test_a_signature_with_stray_trailing_bits_is_not_the_same_token() -> None:
    header, payload, signature = TOKEN.split(".")
    # A 32-byte HMAC encodes to 43 characters; the last one carries 2 unused bits. Changing only
    # those gives a different string that lenient decoders read as the same bytes.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(signature[-1])
    twin = alphabet[(last & ~0b11) | ((last + 1) & 0b11)]
    assert base64.urlsafe_b64decode(signature[:-1] + twin + "=") == base64.urlsafe_b64decode(
        signature + "=")
    assert rejected(f"{header}.{payload}.{signature[:-1]}{twin}") == "malformed"


def test_claims_of_the_wrong_shape_are_malformed() -> None:
    header = b64(json.dumps({"alg": "HS256", "kid": KEYS.signing_kid, "typ": "JWT"}).encode())
    claims = json.loads(base64.urlsafe_b64decode(TOKEN.split(".")[1] + "=="))
    for wrong in ({"scope": {"tenant": 7}}, {"scope": ["acme"]}, {"exp": True}, {"iat": "now"}):
        import jwt

        forged = jwt.encode({**claims, **wrong}, KEYS._keys[KEYS.signing_kid], algorithm="HS256",
                            headers={"kid": KEYS.signing_kid})
        assert header and rejected(forged) == "malformed", wrong


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.one_of(
    st.text(max_size=300),
    st.binary(max_size=300).map(lambda raw: raw.decode("latin-1")),
    st.lists(st.text(alphabet="ABCDEFabcdef0123456789-_=+/ .", max_size=80), min_size=1,
             max_size=5).map(".".join),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                 lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4),
                                                                            inner, max_size=3),
                 max_leaves=30).map(lambda v: f"{b64(json.dumps(v).encode())}.{b64(b'{}')}.x"),
))
def test_nothing_but_token_rejected_comes_out_of_the_decoder(garbage: str) -> None:
    try:
        KEYS.decode(garbage, NOW)
    except TokenRejected:
        return
    raise AssertionError(f"{garbage!r} verified")


def test_the_short_way_and_every_check_agree_on_the_tokens_we_mint() -> None:
    """A token as one of the keys mints it takes the short way (``_minted_here``) to the same
    claims every check gives; anything else finds no short way and is examined in full."""
    old = TokenKeys("first-secret-0123456789")
    rotated = TokenKeys("second-secret-0123456789", ["first-secret-0123456789"])
    for session in ("s", "séance ✓", "x" * 200):
        claims = PauseClaims(jti="j", scope={"tenant": "acme", "org": None}, run="r",
                             root_run="r0", session=session, thread="t", checkpoint="c",
                             name="ask_user", tool_call_id="call", pin="a@1", iat=NOW,
                             exp=NOW + 60)
        for minted in (old.encode(claims), rotated.encode(claims)):
            assert rotated._minted_here(minted) == rotated._checked(minted) == claims
    assert TokenKeys("another-secret-0123456789")._minted_here(TOKEN) is None  # not its key


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=len(TOKEN) - 1),
       st.sampled_from("ABCDEFabcdef0123456789-_=+/. é"))
def test_a_token_changed_anywhere_finds_no_short_way(at: int, put: str) -> None:
    changed = TOKEN[:at] + put + TOKEN[at + 1:]
    if changed == TOKEN:
        return
    assert KEYS._minted_here(changed) is None
    assert rejected(changed) in ("malformed", "forged", "unknown_key")
