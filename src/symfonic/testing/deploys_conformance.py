"""The conformance of what a deploy reads: the pauses still waiting, grouped by the definition
that made them and their contract (:meth:`PauseLedger.waiting_contracts`).

:class:`~symfonic.testing.conformance.StoreConformance` inherits it, so every adapter runs it
unchanged: outstanding, claimed and deciding pauses are counted, expired and finished ones are
not, and alike pauses form one group.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from symfonic.services.ledger import Finish, PauseIssue
from symfonic.testing.pauses import NOW, pause_issue


class DeploysConformance:
    """``waiting_contracts``; ``store`` is a fixture the subclass provides."""

    async def test_waiting_pauses_are_grouped_by_definition_and_contract(self, store: Any) -> None:
        tools = {"lookup": {"type": "object", "properties": {"id": {"type": "integer"}}}}

        def made(pin: str = "agent@1", contract: Any = tools, **options: Any) -> PauseIssue:
            issue = pause_issue(session=uuid.uuid4().hex, **options)
            return dataclasses.replace(issue, record=dataclasses.replace(
                issue.record, pin=pin, tools=contract))

        same = [made(), made(), made(ttl=10)]
        claimed, older, other_pin = made(), made(contract=None), made(pin="agent@2")
        expired, deciding, answered = made(ttl=1), made(ttl=1), made()
        deciding = dataclasses.replace(deciding, record=dataclasses.replace(
            deciding.record, on_expiry={"answer": "no"}))
        for issue in (*same, claimed, older, other_pin, expired, deciding, answered):
            await store.ledger.issue(issue)
        await store.ledger.claim(claimed.record.jti, NOW)
        await store.ledger.claim(answered.record.jti, NOW)
        await store.ledger.finish(Finish(jti=answered.record.jti, status="completed",
                                         outcome={}, finished_at=NOW))
        groups = await store.ledger.waiting_contracts(NOW + 5)
        counted = sorted((g.pin, g.tools is None, g.count) for g in groups)
        # the three alike with the claimed one and the one deciding at its expiry; the expired
        # one and the finished one are not waiting
        assert counted == [("agent@1", False, 5), ("agent@1", True, 1), ("agent@2", False, 1)]
        [alike] = [g for g in groups if g.pin == "agent@1" and g.tools is not None]
        assert (alike.name, alike.kind, alike.answer_schema, alike.tools) == (
            "ask_user", "ask_user", {"type": "string"}, tools)
