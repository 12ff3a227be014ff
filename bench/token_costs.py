"""What signing and verifying a pause token costs, by library: PyJWT, joserfc, and the token
module's own HS256 over the canonical encoding it already enforces.

Each signs and verifies the same claims (a real pause's shape) with the same 256-bit key, the
token module's key derivation; verification includes what the token module checks besides the
signature (the canonical encoding, the header, the claims' types). Median of 7 blocks of 20,000
of each, interleaved, in one process.

``python -m bench.token_costs [--quick]`` prints docs/benchmarks.md's "Pause tokens" section,
with the example's pause + resume on SQLite timed with the module's HS256 and with PyJWT put
back in its place (alternating blocks on one host: the A/B of the change); ``bench.run``
includes it.
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import sys
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


def measure_tokens(quick: bool) -> dict[str, Any]:
    """Per library, the median microseconds to sign and to verify; then the round trips' A/B."""
    found = candidates()
    tokens = {name: sign() for name, (sign, _) in found.items()}
    for _, verify in found.values():  # each verifies what every other one minted
        for token in tokens.values():
            verify(token)
    signing: dict[str, list[float]] = {name: [] for name in found}
    verifying: dict[str, list[float]] = {name: [] for name in found}
    for _ in range(2 if quick else BLOCKS):
        for name, (sign, verify) in found.items():
            signing[name].append(timed(sign))
            verifying[name].append(timed(functools.partial(verify, tokens[name])))
    costs = {name: (statistics.median(signing[name]), statistics.median(verifying[name]))
             for name in found}
    trips = asyncio.run(round_trips(20, 2) if quick else round_trips())
    return {"costs": costs, "round_trips": trips, "blocks": 2 if quick else BLOCKS}


def tokens_table(result: dict[str, Any]) -> str:
    lines = ["| library | sign (us) | verify (us) | sign + verify (us) |", "|---|---|---|---|"]
    lines += [f"| {name} | {sign:.1f} | {verify:.1f} | {sign + verify:.1f} |"
              for name, (sign, verify) in result["costs"].items()]
    return "\n".join(lines)


def tokens_section(result: dict[str, Any]) -> str:
    own, theirs = result["round_trips"]["own HS256"], result["round_trips"]["PyJWT"]
    return "\n\n".join([
        "## Pause tokens: who signs and verifies",
        "`python -m bench.token_costs`: the same pause claims signed and verified with the same "
        "256-bit key by PyJWT, by joserfc, and by the token module's own HS256 (the standard "
        "library's HMAC over the canonical encoding the module already enforces; byte for byte "
        "the tokens PyJWT mints), each verification doing the module's own checks besides the "
        "signature (canonical encoding, header, claims' types). Median of "
        f"{result['blocks']} interleaved blocks of {BLOCK:,}. Then the example's pause + resume on "
        "SQLite (history 0, one host, alternating blocks) with the module's HS256 and with PyJWT "
        "put back in its place: the A/B of the change.",
        tokens_table(result),
        f"Pause + resume, SQLite, median: {own:.3f} ms with the module's HS256, {theirs:.3f} ms "
        f"with PyJWT (PyJWT {theirs / own:.3f}x). PyJWT is no longer a dependency of symfonic "
        "(the tests keep it, to mint hostile tokens with an independent encoder).",
    ])


def main(argv: list[str]) -> None:
    print(tokens_section(measure_tokens("--quick" in argv)))


if __name__ == "__main__":
    main(sys.argv[1:])
