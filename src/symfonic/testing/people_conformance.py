"""The people suite: what every store keeps of who may answer and who answers.

:class:`~symfonic.testing.conformance.StoreConformance` inherits it. The behaviours: a pause's
requester and answer policy come back from every read of the ledger and from its claim; a vote
is written only while its pause is answerable, once per person and round, and one edit opens a
round; and an API key keeps the person it acts as (a service key, none).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from symfonic.kernel.people import Person
from symfonic.services.votes import Tally, Vote, tally
from symfonic.testing.keys_conformance import record
from symfonic.testing.pauses import ACME, NOW, pause_issue
from symfonic.transports.http.accounts import accounts_of


class PeopleConformance:
    """Who-may-answer behaviours; ``store`` is a fixture the subclass provides."""

    async def test_who_may_answer_is_kept_with_the_pause(self, store: Any) -> None:
        """The requester and the answer policy come back from every read, and from the claim."""
        issue = pause_issue()
        policy = {"audience": ["group:finance", "person:ada"], "quorum": 2,
                  "requester_may_answer": False}
        record = dataclasses.replace(issue.record, requester="bob", policy=policy)
        await store.ledger.issue(dataclasses.replace(issue, record=record))
        assert await store.ledger.get(record.jti) == record
        [listed] = await store.ledger.pauses(ACME, NOW)
        assert (listed.requester, listed.policy) == ("bob", policy)
        claim = await store.ledger.claim(record.jti, NOW + 1)
        assert claim.won and (claim.record.requester, claim.record.policy) == ("bob", policy)

    async def test_a_key_keeps_the_person_it_acts_as(self, store: Any) -> None:
        ada = Person(id="ada", name="Ada Lovelace", email="ada@example.com",
                     groups=frozenset({"finance", "support"}))
        personal = dataclasses.replace(record("k1"), person=ada)
        assert await accounts_of(store).keys.add_key(personal)
        assert await accounts_of(store).keys.add_key(record("k2"))
        assert await accounts_of(store).keys.get_key("k1") == personal
        assert [k.person for k in await accounts_of(store).keys.keys("acme")] == [ada, None]

    async def test_a_vote_takes_its_place_once(self, store: Any) -> None:
        issue = pause_issue(ttl=100)
        await store.ledger.issue(issue)
        jti = issue.record.jti

        def vote(person: str, round_: int = 0, edit: dict[str, Any] | None = None) -> Vote:
            return Vote(jti=jti, round=round_, person=person, cast_at=NOW + 1, arguments=edit,
                        answered_by=f"key-{person}")

        assert await store.ledger.cast_vote(vote("ada"), NOW + 1)
        assert not await store.ledger.cast_vote(vote("ada"), NOW + 1)  # once per round
        assert await store.ledger.cast_vote(vote("grace", 1, {"amount": 20}), NOW + 1)
        assert not await store.ledger.cast_vote(vote("dan", 1, {"amount": 30}), NOW + 1)
        assert await store.ledger.cast_vote(vote("ada", 1), NOW + 1)  # a new round
        assert not await store.ledger.cast_vote(vote("eve"), NOW + 200)  # expired by then
        stored = sorted(await store.ledger.votes(jti), key=lambda v: (v.round, v.person))
        assert stored == [vote("ada"), vote("ada", 1), vote("grace", 1, {"amount": 20})]
        assert tally(stored) == Tally(round=1, arguments={"amount": 20},
                                      approved_by=("ada", "grace"))
        await store.ledger.claim(jti, NOW + 2)
        assert not await store.ledger.cast_vote(vote("eve"), NOW + 3)  # claimed: not answerable
        assert await store.ledger.votes("unknown") == []
