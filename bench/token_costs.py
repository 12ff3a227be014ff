"""What signing and verifying a pause token costs, by library: PyJWT, joserfc, and the token
module's own HS256 over the canonical encoding it already enforces.

Each signs and verifies the same claims (a real pause's shape) with the same 256-bit key, the
token module's key derivation; verification includes what the token module checks besides the
signature (the canonical encoding, the header, the claims' types). Median of 7 blocks of 20,000
of each, interleaved, in one process.

``python -m bench.token_costs`` prints the table of docs/benchmarks.md's "Pause tokens" section;
``--round-trip`` also times the example's pause + resume on SQLite with the module's HS256 and
with PyJWT put back in its place (alternating blocks on one host: the A/B of the change).
"""

from __future__ import annotations

import functools
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import jwt as pyjwt
from joserfc import jws
from joserfc.jwk import OctKey

from symfonic.capabilities.human.tokens import PauseClaims, TokenKeys, _canonical_segments, _claims_of

SECRET = "a-long-random-secret-for-the-bench"
BLOCK, BLOCKS = 20_000, 7


def claims() -> PauseClaims:
    return PauseClaims(jti=uuid.uuid4().hex, scope={"tenant": "acme"}, run=uuid.uuid4().hex,
                       root_run=uuid.uuid4().hex, session="s1", thread="s1",
                       checkpoint=uuid.uuid4().hex, name="issue_refund",
                       tool_call_id="refund-42", pin="support@7844d0383756abe0",
                       iat=1_800_000_000, exp=1_800_086_400)


def candidates() -> dict[str, tuple[Callable[[], str], Callable[[str], Any]]]:
    keys = TokenKeys(SECRET)
    kid = keys.signing_kid
    raw = keys._keys[kid]  # the very HMAC key the token module signs with
    made = claims()
    payload = dict(vars(made))
    oct_key = OctKey.import_key(raw)

    def pyjwt_sign() -> str:
        return pyjwt.encode(payload, raw, algorithm="HS256", headers={"kid": kid})

    def pyjwt_verify(token: str) -> Any:
        _canonical_segments(token)
        return _claims_of(pyjwt.decode(token, raw, algorithms=["HS256"],
                                       options={"verify_exp": False, "verify_iat": False}))

    def joserfc_sign() -> str:
        import json

        return jws.serialize_compact({"alg": "HS256", "kid": kid, "typ": "JWT"},
                                     json.dumps(payload, separators=(",", ":")), oct_key)

    def joserfc_verify(token: str) -> Any:
        import json

        _canonical_segments(token)
        return _claims_of(json.loads(jws.deserialize_compact(token, oct_key).payload))

    return {"PyJWT": (pyjwt_sign, pyjwt_verify), "joserfc": (joserfc_sign, joserfc_verify),
            "symfonic (own HS256)": (lambda: keys.encode(made), lambda t: keys.decode(t, 0.0))}


class PyJWTKeys(TokenKeys):
    """The token module as it was: PyJWT signs and verifies (the A side of the A/B)."""

    def encode(self, claims: PauseClaims) -> str:
        return pyjwt.encode(dict(vars(claims)), self._keys[self.signing_kid], algorithm="HS256",
                            headers={"kid": self.signing_kid})

    def decode(self, token: str, now: float) -> PauseClaims:
        _canonical_segments(token)
        kid = pyjwt.get_unverified_header(token)["kid"]
        made = _claims_of(pyjwt.decode(token, self._keys[kid], algorithms=["HS256"],
                                       options={"verify_exp": False, "verify_iat": False}))
        return made


async def round_trips(cycles: int = 60, blocks: int = 8) -> dict[str, float]:
    """Median ms of the example's pause + resume, by token implementation."""
    import tempfile
    from pathlib import Path

    from symfonic import Host, Scope
    from symfonic.examples.support import support_agent

    folder = Path(tempfile.mkdtemp(prefix="symfonic-tokens-"))
    host = Host.open(f"sqlite:///{folder / 'desk.db'}", agents=[support_agent()], secret=SECRET)
    own, theirs = host._keys, PyJWTKeys(SECRET)
    times: dict[str, list[float]] = {"own HS256": [], "PyJWT": []}
    async with host:
        agent = host.agent("support", Scope(tenant="acme"))
        for block in range(blocks):
            for name, keys in (("own HS256", own), ("PyJWT", theirs)):
                host._keys = keys
                host._continuation = None  # rebuilt with these keys
                for n in range(cycles):
                    start = time.perf_counter()
                    paused = await agent.run("refund order 42", session_id=f"{name}-{block}-{n}")
                    assert paused.interrupt is not None
                    await host.continuation.resume(paused.interrupt.token, {"approved": True})
                    times[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    for _ in range(BLOCK):
        work()
    return (time.perf_counter() - start) / BLOCK * 1e6


def main() -> None:
    found = candidates()
    tokens = {name: sign() for name, (sign, _) in found.items()}
    for _, verify in found.values():  # each verifies what every other one minted
        for token in tokens.values():
            verify(token)
    signing: dict[str, list[float]] = {name: [] for name in found}
    verifying: dict[str, list[float]] = {name: [] for name in found}
    for _ in range(BLOCKS):
        for name, (sign, verify) in found.items():
            signing[name].append(timed(sign))
            verifying[name].append(timed(functools.partial(verify, tokens[name])))
    print("| library | sign (us) | verify (us) | sign + verify (us) |")
    print("|---|---|---|---|")
    for name in found:
        sign_us, verify_us = statistics.median(signing[name]), statistics.median(verifying[name])
        print(f"| {name} | {sign_us:.1f} | {verify_us:.1f} | {sign_us + verify_us:.1f} |")


if __name__ == "__main__":
    import asyncio
    import sys

    main()
    if "--round-trip" in sys.argv:
        medians = asyncio.run(round_trips())
        print(f"\npause + resume, SQLite, median ms: own HS256 {medians['own HS256']:.3f}, "
              f"PyJWT {medians['PyJWT']:.3f} ({medians['PyJWT'] / medians['own HS256']:.3f}x)")
