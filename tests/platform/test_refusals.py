"""Every bad token gets its own refusal, is refused before any store read, and changes nothing."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from symfonic import Host, Scope
from symfonic.capabilities.human.tokens import TokenKeys
from symfonic.platform.continuation import (
    ForgedPauseToken,
    MalformedPauseToken,
    PauseExpired,
    PauseRevoked,
    UnknownPauseToken,
    UnknownSigningKey,
)
from symfonic.platform.tickets import claims_of
from symfonic.testing import ManualClock
from tests.support.interactions import recorded

ACME = Scope(tenant="acme")


def tamper(token: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["scope"] = {"tenant": "globex"}
    raw = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{header}.{raw}.{signature}"


def foreign_key(token: str) -> str:
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    from symfonic.capabilities.human.tokens import PauseClaims

    return TokenKeys("another-hosts-secret-xyz").encode(PauseClaims(**claims))


CASES: list[tuple[str, Callable[[str], str], type[UnknownPauseToken]]] = [
    ("tampered", tamper, ForgedPauseToken),
    # cutting the signature short fails either its base64 or its check: malformed both ways
    ("truncated", lambda t: t[:-20], MalformedPauseToken),
    ("truncated into the claims", lambda t: t[: len(t) // 2], MalformedPauseToken),
    ("wrong key", foreign_key, UnknownSigningKey),
    ("garbage", lambda t: "garbage", MalformedPauseToken),
]


class CountingStore:
    """Wraps the host's store and counts every call made to it."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not callable(attribute):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return attribute(*args, **kwargs)

        return counted


@pytest.mark.parametrize(("label", "mangle", "error"), CASES, ids=[c[0] for c in CASES])
async def test_bad_tokens_are_refused_by_type_before_any_store_read(
        host: Host, label: str, mangle: Callable[[str], str], error: type[UnknownPauseToken]) -> None:
    outcome = await host.agent("desk", ACME).run("lookup+ask", session_id="s1")
    assert outcome.interrupt is not None
    token = outcome.interrupt.token
    store = await host.store()
    before = await store.ledger.get(outcome.interrupt.interrupt_id)
    counting = CountingStore(store)

    async def counted_store() -> Any:
        return counting

    host.continuation._store = counted_store
    bad = mangle(token)
    for attempt in (lambda: host.continuation.resume(bad, "x"),
                    lambda: host.continuation.ticket(bad)):
        with pytest.raises(error) as refused:
            await attempt()
        assert type(refused.value) is error or label == "truncated"
    assert counting.calls == 0
    assert await store.ledger.get(outcome.interrupt.interrupt_id) == before
    assert recorded() == []
    host.continuation._store = host.store
    assert (await host.continuation.resume(token, "fine")).status == "completed"


async def test_expired_and_revoked_tokens_leave_the_ledger_as_it_was(
        host: Host, clock: ManualClock) -> None:
    agent = host.agent("desk", ACME)
    expiring = await agent.run("ship", session_id="a")
    revoked = await agent.run("ask", session_id="b")
    assert expiring.interrupt is not None and revoked.interrupt is not None
    await host.revoke(revoked.interrupt.token)
    store = await host.store()
    before = [await store.ledger.get(i.interrupt_id) for i in (expiring.interrupt, revoked.interrupt)]
    with pytest.raises(PauseRevoked):
        await host.continuation.resume(revoked.interrupt.token, "x")
    clock.advance(400)
    with pytest.raises(PauseExpired):
        await host.continuation.resume(expiring.interrupt.token, {"option": "post"})
    with pytest.raises(PauseExpired):
        await host.continuation.ticket(expiring.interrupt.token)
    after = [await store.ledger.get(i.interrupt_id) for i in (expiring.interrupt, revoked.interrupt)]
    assert after == before


async def test_a_token_for_a_pause_this_host_never_issued_is_unknown(host: Host) -> None:
    outcome = await host.agent("desk", ACME).run("ask", session_id="s1")
    assert outcome.interrupt is not None
    record = await (await host.store()).ledger.get(outcome.interrupt.interrupt_id)
    assert record is not None
    from dataclasses import replace

    ghost = host._keys.encode(replace(claims_of(record), jti="never-issued"))
    with pytest.raises(UnknownPauseToken) as refused:
        await host.continuation.resume(ghost, "x")
    assert type(refused.value) is UnknownPauseToken


async def test_a_pause_that_expires_between_its_token_check_and_its_claim_is_expired(
        host: Host, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """The token still verifies, but the row's time runs out while the resume reads the turn:
    the claim, dated after that, is refused by the store, and the refusal must read as what
    happened (expired), not as a pause someone else answered."""
    outcome = await host.agent("desk", ACME).run("ship", session_id="late")  # 5 minutes
    assert outcome.interrupt is not None
    token, jti = outcome.interrupt.token, outcome.interrupt.interrupt_id
    store = await host.store()
    record = await store.ledger.get(jti)
    assert record is not None
    clock.now = record.expires_at - 0.5  # the token and the row are both still good here
    read_paused = store.ledger.get_paused

    async def slow_read(jti: str, checkpoint_id: str) -> Any:
        read = await read_paused(jti, checkpoint_id)
        clock.advance(1.0)  # the row expires while the turn is read, before the claim
        return read

    monkeypatch.setattr(store.ledger, "get_paused", slow_read)
    with pytest.raises(PauseExpired) as expired:
        await host.continuation.resume(token, {"option": "post"})
    assert expired.value.scope == ACME
    after = await store.ledger.get(jti)
    assert after is not None and after.status == "outstanding" and after.decision is None
    assert await host.sweep_expired() == 1  # left for the sweep, never claimed
