"""Pause tokens: signed claims, offline verification, key rotation."""

from __future__ import annotations

import base64
import json

import jwt
import pytest

from symfonic.capabilities.human.tokens import MAX_TOKEN_BYTES, PauseClaims, TokenKeys, TokenRejected

NOW = 1_800_000_000
CLAIMS = PauseClaims(jti="j", scope={"tenant": "acme"}, run="r", root_run="r0", session="s",
                     thread="t", checkpoint="c", name="ask_user", tool_call_id="call", pin="a@1",
                     iat=NOW, exp=NOW + 60)
KEYS = TokenKeys("first-secret-0123456789")


def reason(keys: TokenKeys, token: str, now: float = NOW) -> str:
    with pytest.raises(TokenRejected) as rejected:
        keys.decode(token, now)
    return rejected.value.reason


def test_a_token_round_trips_its_claims_and_carries_no_secret() -> None:
    token = KEYS.encode(CLAIMS)
    assert KEYS.decode(token, NOW) == CLAIMS
    assert "first-secret" not in base64.urlsafe_b64decode(token.split(".")[1] + "==").decode()
    assert len(token) < 1024


def test_tokens_are_standard_hs256_jws_both_ways() -> None:
    """Minted by the module's own HS256, read by PyJWT with the key, and the reverse: the
    encoding is the standard's, byte for byte what PyJWT mints."""
    key = KEYS._keys[KEYS.signing_kid]
    ours = KEYS.encode(CLAIMS)
    assert jwt.decode(ours, key, algorithms=["HS256"],
                      options={"verify_exp": False, "verify_iat": False}) == CLAIMS.__dict__
    theirs = jwt.encode(CLAIMS.__dict__, key, algorithm="HS256",
                        headers={"kid": KEYS.signing_kid})
    assert theirs == ours and KEYS.decode(theirs, NOW) == CLAIMS


def test_a_tampered_payload_is_forged() -> None:
    header, _, signature = KEYS.encode(CLAIMS).split(".")
    other = json.dumps({**CLAIMS.__dict__, "scope": {"tenant": "globex"}}).encode()
    forged = f"{header}.{base64.urlsafe_b64encode(other).decode().rstrip('=')}.{signature}"
    assert reason(KEYS, forged) == "forged"


def test_a_token_signed_with_another_secret_under_our_key_id_is_forged() -> None:
    stolen_kid = jwt.encode(CLAIMS.__dict__, "x" * 32, algorithm="HS256",
                            headers={"kid": KEYS.signing_kid})
    assert reason(KEYS, stolen_kid) == "forged"


def test_a_token_from_another_host_names_an_unknown_key() -> None:
    assert reason(KEYS, TokenKeys("another-secret-987654321").encode(CLAIMS)) == "unknown_key"


@pytest.mark.parametrize("mangle", [
    lambda t: t[: len(t) // 2],
    lambda t: t.split(".")[0],
    lambda t: "not a token",
    lambda t: "",
    lambda t: t + "x" * MAX_TOKEN_BYTES,
])
def test_truncated_garbage_and_oversize_tokens_are_malformed(mangle: object) -> None:
    token = mangle(KEYS.encode(CLAIMS))  # type: ignore[operator]
    assert reason(KEYS, token) in {"malformed", "forged"}
    if "." not in token or len(token) > MAX_TOKEN_BYTES:
        assert reason(KEYS, token) == "malformed"


def test_an_unsigned_token_is_malformed() -> None:
    # No key: PyJWT's stubs (with cryptography installed) do not admit None for "none".
    unsigned = jwt.encode(CLAIMS.__dict__, None,  # type: ignore[arg-type]
                          algorithm="none", headers={"kid": KEYS.signing_kid})
    assert reason(KEYS, unsigned) == "malformed"


def test_missing_claims_are_malformed() -> None:
    partial = {k: v for k, v in CLAIMS.__dict__.items() if k != "pin"}
    key = KEYS._keys[KEYS.signing_kid]
    token = jwt.encode(partial, key, algorithm="HS256", headers={"kid": KEYS.signing_kid})
    assert reason(KEYS, token) == "malformed"


def test_an_expired_token_is_refused_at_its_expiry() -> None:
    token = KEYS.encode(CLAIMS)
    assert KEYS.decode(token, CLAIMS.exp - 1) == CLAIMS
    assert reason(KEYS, token, CLAIMS.exp) == "expired"


def test_rotation_signs_with_the_new_key_and_still_verifies_the_old() -> None:
    old_token = KEYS.encode(CLAIMS)
    rotated = TokenKeys("second-secret-0123456789", ["first-secret-0123456789"])
    new_token = rotated.encode(CLAIMS)
    assert rotated.decode(old_token, NOW) == CLAIMS == rotated.decode(new_token, NOW)
    assert jwt.get_unverified_header(new_token)["kid"] == rotated.signing_kid != KEYS.signing_kid
    assert reason(KEYS, new_token) == "unknown_key"


def test_short_secrets_are_refused() -> None:
    with pytest.raises(ValueError, match="16 characters"):
        TokenKeys("short")
