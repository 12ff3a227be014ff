"""The conformance of the inbox's reads: sign-ins (:class:`SignInStore`) and the recent
decisions a ledger lists (:meth:`PauseLedger.answered`).

:class:`~symfonic.testing.conformance.StoreConformance` inherits it, so every adapter runs it
unchanged. The behaviours: a sign-in is found by its digest until it expires or ends, ending it
happens once, pruning forgets only expired ones, an emailed link is spent once; a claim keeps who
answered, a released claim forgets it, and the recent decisions are the scope's answered pauses,
the latest answer first.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from symfonic.kernel.people import Person
from symfonic.testing.pauses import ACME, GLOBEX, NOW, pause_issue
from symfonic.transports.http.accounts import SignIn, accounts_of
from symfonic.transports.http.accounts.sign_ins import SignedInPerson


def sign_in(digest: str, *, expires_at: float = NOW + 60) -> SignIn:
    return SignIn(digest=digest, key_id=f"key-{digest}", csrf=f"csrf-{digest}", expires_at=expires_at)


class AccountsConformance:
    """SignInStore and recent-decision behaviours; ``store`` is a fixture the subclass provides."""

    async def test_a_sign_in_is_found_until_it_expires(self, store: Any) -> None:
        await accounts_of(store).sign_ins.open_sign_in(sign_in("a", expires_at=NOW + 60))
        assert await accounts_of(store).sign_ins.find_sign_in("a", NOW) == sign_in("a", expires_at=NOW + 60)
        assert await accounts_of(store).sign_ins.find_sign_in("a", NOW + 60) is None
        assert await accounts_of(store).sign_ins.find_sign_in("b", NOW) is None

    async def test_a_sign_in_keeps_the_person_a_provider_vouched_for(self, store: Any) -> None:
        ada = SignedInPerson(tenant="acme", issuer="https://id.example.test",
                             permissions=frozenset({"pauses:read", "pauses:answer"}),
                             person=Person(id="ada", name="Ada", email="ada@example.com",
                                           groups=frozenset({"finance"})))
        signed = dataclasses.replace(sign_in("p"), key_id="oidc:ada", person=ada)
        await accounts_of(store).sign_ins.open_sign_in(signed)
        assert await accounts_of(store).sign_ins.find_sign_in("p", NOW) == signed

    async def test_ending_a_sign_in_happens_once(self, store: Any) -> None:
        await accounts_of(store).sign_ins.open_sign_in(sign_in("a"))
        await accounts_of(store).sign_ins.open_sign_in(sign_in("b"))
        assert await accounts_of(store).sign_ins.end_sign_in("a") is True
        assert await accounts_of(store).sign_ins.end_sign_in("a") is False
        assert await accounts_of(store).sign_ins.find_sign_in("a", NOW) is None
        assert (await accounts_of(store).sign_ins.find_sign_in("b", NOW)) is not None

    async def test_pruning_forgets_only_expired_sign_ins(self, store: Any) -> None:
        for digest, expiry in (("old", NOW - 1), ("now", NOW), ("live", NOW + 1)):
            await accounts_of(store).sign_ins.open_sign_in(sign_in(digest, expires_at=expiry))
        assert await accounts_of(store).sign_ins.prune_sign_ins(NOW) == 2
        assert await accounts_of(store).sign_ins.prune_sign_ins(NOW) == 0
        assert (await accounts_of(store).sign_ins.find_sign_in("live", NOW)) is not None

    async def test_a_link_session_keeps_the_one_pause_it_may_see(self, store: Any) -> None:
        ada = SignedInPerson(tenant="acme", issuer="email-link", pause="jti-1",
                             permissions=frozenset({"pauses:read", "pauses:answer"}),
                             person=Person(id="ada", email="ada@example.com"))
        signed = dataclasses.replace(sign_in("l"), key_id="link:ada", person=ada)
        await accounts_of(store).sign_ins.open_sign_in(signed)
        found = await accounts_of(store).sign_ins.find_sign_in("l", NOW)
        assert found == signed and found.person is not None and found.person.pause == "jti-1"

    async def test_a_link_is_spent_once_and_forgotten_once_expired(self, store: Any) -> None:
        sign_ins = accounts_of(store).sign_ins
        assert await sign_ins.spend_link("link-1", NOW + 60) is True
        assert await sign_ins.spend_link("link-1", NOW + 60) is False
        assert await sign_ins.spend_link("link-2", NOW - 1) is True
        await sign_ins.prune_sign_ins(NOW)
        assert await sign_ins.spend_link("link-1", NOW + 60) is False  # still remembered
        assert await sign_ins.spend_link("link-2", NOW + 60) is True  # expired, forgotten

    async def test_a_claim_keeps_who_answered_and_a_release_forgets_it(self, store: Any) -> None:
        issue = pause_issue()
        await store.ledger.issue(issue)
        claim = await store.ledger.claim(issue.record.jti, NOW, answered_by="key-1")
        assert claim.won and claim.record.answered_by == "key-1"
        assert (await store.ledger.get(issue.record.jti)).answered_by == "key-1"
        assert await store.ledger.release(issue.record.jti)
        released = await store.ledger.get(issue.record.jti)
        assert released.answered_by is None and released.claimed_at is None

    async def test_recent_decisions_are_the_scopes_answered_pauses_latest_first(
            self, store: Any) -> None:
        issues = [pause_issue(session=f"s{n}") for n in range(4)]
        foreign = pause_issue(GLOBEX)
        for issue in (*issues, foreign):
            await store.ledger.issue(issue)
        for offset, issue in ((3, issues[0]), (1, issues[1]), (2, issues[2])):
            await store.ledger.claim(issue.record.jti, NOW + offset, answered_by=f"by-{offset}")
        await store.ledger.claim(foreign.record.jti, NOW + 5)
        answered = await store.ledger.answered(ACME, limit=10)
        assert [r.jti for r in answered] == [issues[n].record.jti for n in (0, 2, 1)]
        assert [r.answered_by for r in answered] == ["by-3", "by-2", "by-1"]
        assert [r.jti for r in await store.ledger.answered(ACME, limit=1)] == [issues[0].record.jti]
        assert [r.jti for r in await store.ledger.answered(GLOBEX)] == [foreign.record.jti]
