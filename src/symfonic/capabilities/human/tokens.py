"""Pause tokens: signed, expiring, scope-bound handles to a paused turn.

A token is a compact JWS (HS256) over the minimal claims of :class:`PauseClaims`, signed and
checked here with the standard library's HMAC: the module accepts only the one canonical encoding
it mints, so what is left of a JWT library's work is a base64 decode, a JSON parse and one HMAC
(measured against PyJWT and joserfc by ``bench/token_costs.py``: PyJWT took three times as long
to verify). The tokens are standard JWS, byte for byte what PyJWT minted before; any HS256
verifier with the key reads them.
It is signed, not encrypted, so it carries no question text, no answer and no secret: only ids.
Verification is offline and cheap (size cap, signature, expiry) so that garbage is refused before
any store is read.

Keys have ids. :class:`TokenKeys` holds several verifying keys and one signing key, so a host can
rotate its secret without breaking pauses that are still outstanding: add the new secret as the
signer and keep the old one as a verifier until its tokens have expired. The HMAC key is the
SHA-256 of the configured secret, so every key is 256 bits whatever the operator typed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from symfonic.errors import SymfonicError

MAX_TOKEN_BYTES = 4096
"""Tokens longer than this are refused unread: real ones are well under 1 KiB."""
MAX_HEADER_CHARS = 256
"""Our header is ``{"alg","kid","typ"}``, about 80 characters encoded; anything far longer is not
ours, and is refused before it is parsed (a deeply nested one would exhaust the parser's stack)."""
_SEGMENT = re.compile(r"^[A-Za-z0-9_-]+$")
_ALGORITHM = "HS256"
_REQUIRED = ("jti", "scope", "run", "root_run", "session", "thread", "checkpoint", "name",
             "tool_call_id", "pin", "iat", "exp")

RejectReason = Literal["malformed", "forged", "unknown_key", "expired"]


class TokenRejected(SymfonicError, ValueError):
    """A token failed offline verification. ``reason`` says how, for the caller to map."""

    def __init__(self, reason: RejectReason, detail: str,
                 claims: PauseClaims | None = None) -> None:
        super().__init__(detail)
        self.reason: RejectReason = reason
        self.claims = claims
        """For ``expired`` only: the claims, whose signature did verify."""


@dataclass(frozen=True, kw_only=True)
class PauseClaims:
    """What a token asserts. ``scope`` is the tenant claim the pause was issued under."""

    jti: str
    scope: dict[str, Any]
    run: str
    root_run: str
    session: str
    thread: str
    checkpoint: str
    name: str
    tool_call_id: str
    pin: str
    iat: int
    exp: int


@dataclass(frozen=True, kw_only=True)
class IssuedPause:
    """A pause the ledger accepted (or would have): the claims its token will carry."""

    claims: PauseClaims


def key_id(secret: str | bytes) -> str:
    """A short public id for a secret (a digest prefix; it reveals nothing usable)."""
    raw = secret.encode() if isinstance(secret, str) else secret
    return hashlib.sha256(b"symfonic-kid:" + raw).hexdigest()[:12]


class TokenKeys:
    """One signing key and every key that still verifies."""

    def __init__(self, signing: str | bytes, verifying: Iterable[str | bytes] = ()) -> None:
        secrets = [signing, *verifying]
        for secret in secrets:
            if len(secret) < 16:
                raise ValueError("a token secret needs at least 16 characters")
        self.signing_kid = key_id(signing)
        self._keys: Mapping[str, bytes] = {key_id(s): _hmac_key(s) for s in secrets}
        self._kid_of_header = {_header_of(kid): kid for kid in self._keys}
        """Each key's JOSE header as its tokens carry it, encoded once: every token minted with
        a key shares its header."""
        self._header = _header_of(self.signing_kid)

    def derived(self, purpose: str) -> tuple[str, Mapping[str, bytes]]:
        """Keys for a signature other than a pause token's (an emailed sign-in link): the
        signing key's id, and every key by id, each derived from its secret for ``purpose``. A
        signature made for one purpose then never verifies as another's, and rotating the token
        secret rotates these too."""
        return self.signing_kid, {kid: hmac.new(key, purpose.encode(), hashlib.sha256).digest()
                                  for kid, key in self._keys.items()}

    def encode(self, claims: PauseClaims) -> str:
        # A shallow copy: dataclasses.asdict deep-copies, at a tenth of a pause's own CPU time.
        body = _b64(json.dumps(dict(vars(claims)), separators=(",", ":")).encode())
        signing_input = f"{self._header}.{body}"
        mac = hmac.new(self._keys[self.signing_kid], signing_input.encode(), hashlib.sha256)
        return f"{signing_input}.{_b64(mac.digest())}"

    def decode(self, token: str, now: float) -> PauseClaims:
        """Verify ``token`` offline.

        Raises:
            TokenRejected: with ``reason`` malformed (not a token of ours, or oversize), forged (bad
                signature: tampered, or signed with another key under a known id), unknown_key
                (signed under a key id this host does not hold) or expired.
        """
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_BYTES:
            raise TokenRejected("malformed", "not a pause token (empty, not text, or oversize)")
        claims = self._minted_here(token) or self._checked(token)
        if claims.exp <= now:
            raise TokenRejected("expired", "the pause expired", claims)
        return claims

    def _minted_here(self, token: str) -> PauseClaims | None:
        """The claims of a token exactly as one of these keys mints it, or None for anything
        else, which :meth:`_checked` then examines and names.

        The short way for the tokens that verify, about half the checks' time: the header is
        one of the known headers, and the signature is the very text this key's MAC encodes
        to, so its encoding is the canonical one; the claims segment is covered by that MAC,
        so it is the text a key holder minted, canonical too.
        """
        header, _, rest = token.partition(".")
        kid = self._kid_of_header.get(header)
        signing_input, _, signature = token.rpartition(".")
        if kid is None or rest.count(".") != 1 or not signature.isascii():
            return None
        mac = hmac.new(self._keys[kid], signing_input.encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(_b64(mac), signature):
            return None
        payload_text = rest.partition(".")[0]
        try:
            payload = orjson.loads(base64.urlsafe_b64decode(
                payload_text + "=" * (-len(payload_text) % 4)))
            return _claims_of(payload) if isinstance(payload, dict) else None
        except (ValueError, RecursionError, binascii.Error, TokenRejected):
            return None

    def _checked(self, token: str) -> PauseClaims:
        """The claims of ``token`` after every check, each refusal named; its expiry unread."""
        header_bytes, payload_bytes, signature = _canonical_segments(token)
        header = _json_object(header_bytes, "header")
        kid = header.get("kid")
        if header.get("alg") != _ALGORITHM or not isinstance(kid, str):
            raise TokenRejected("malformed", "not a pause token: unexpected header")
        key = self._keys.get(kid)
        if key is None:
            raise TokenRejected("unknown_key", f"signed with key {kid!r}, which this host lacks")
        signing_input = token[:token.rindex(".")].encode()
        if not hmac.compare_digest(signature,
                                   hmac.new(key, signing_input, hashlib.sha256).digest()):
            raise TokenRejected("forged", "the token's signature does not verify")
        return _claims_of(_json_object(payload_bytes, "claims"))


def _header_of(kid: str) -> str:
    """The encoded JOSE header of the tokens key ``kid`` signs."""
    return _b64(json.dumps({"alg": _ALGORITHM, "kid": kid, "typ": "JWT"},
                           separators=(",", ":")).encode())


def _canonical_segments(token: str) -> tuple[bytes, bytes, bytes]:
    """The header, claims and signature bytes of ``token``, decoded once, accepting only the one
    encoding we mint: three unpadded base64url segments, each exactly as its bytes encode.
    Decoders forgive padding and stray trailing bits, so without this check ``token + "="`` (and
    other spellings) would verify as the same token, and a token would have many names: bad for
    logs, caches and anything that compares tokens as strings."""
    segments = token.split(".")
    if len(segments) != 3 or not all(_SEGMENT.match(s) for s in segments):
        raise TokenRejected("malformed", "not a pause token: not three base64url segments")
    if len(segments[0]) > MAX_HEADER_CHARS:
        raise TokenRejected("malformed", "not a pause token: oversize header")
    decoded = []
    for segment in segments:
        try:
            raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        except (ValueError, binascii.Error):
            raise TokenRejected("malformed", "not a pause token: bad base64url") from None
        if _b64(raw) != segment:
            raise TokenRejected("malformed", "not a pause token: not canonically encoded")
        decoded.append(raw)
    return decoded[0], decoded[1], decoded[2]


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    """A JSON object out of a token's segment; anything else (not JSON, not an object, nested
    past the parser's stack) is no token of ours."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise TokenRejected("malformed", f"not a pause token: unreadable {what}") from None
    if not isinstance(value, dict):
        raise TokenRejected("malformed", f"not a pause token: unreadable {what}")
    return value


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _claims_of(payload: dict[str, Any]) -> PauseClaims:
    try:
        claims = PauseClaims(**{name: payload[name] for name in _REQUIRED})
    except (KeyError, TypeError) as error:
        raise TokenRejected("malformed", f"incomplete claims: {error}") from None
    texts = [claims.jti, claims.run, claims.root_run, claims.session, claims.thread,
             claims.checkpoint, claims.name, claims.tool_call_id, claims.pin]
    if not all(isinstance(t, str) for t in texts) or not isinstance(claims.scope, dict):
        raise TokenRejected("malformed", "claims of the wrong type")
    if not isinstance(claims.scope.get("tenant"), str):
        raise TokenRejected("malformed", "the scope claim names no tenant")
    numbers = (claims.exp, claims.iat)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        raise TokenRejected("malformed", "claims of the wrong type")
    return claims


def _hmac_key(secret: str | bytes) -> bytes:
    raw = secret.encode() if isinstance(secret, str) else secret
    return hashlib.sha256(raw).digest()
