"""The store conformance suite: one set of behaviours every adapter must show, unchanged.

Subclass :class:`StoreConformance` in a test module and provide an async ``store`` fixture that
yields a fresh, empty store; pytest then runs every ``test_*`` of its suites against it. The memory,
SQLite and PostgreSQL adapters all run it (``tests/stores/test_conformance.py``), the outbox's
behaviours included (:mod:`symfonic.testing.outbox_conformance`).
"""

from __future__ import annotations

from symfonic.testing.accounts_conformance import AccountsConformance
from symfonic.testing.decisions_conformance import DecisionsConformance
from symfonic.testing.deploys_conformance import DeploysConformance
from symfonic.testing.keys_conformance import KeysConformance
from symfonic.testing.ledger_conformance import LedgerConformance
from symfonic.testing.outbox_conformance import OutboxConformance
from symfonic.testing.pauses import ACME, GLOBEX, NOW, pause_issue, tail
from symfonic.testing.people_conformance import PeopleConformance
from symfonic.testing.tasks_conformance import TasksConformance
from symfonic.testing.transcripts_conformance import TranscriptsConformance

__all__ = ["ACME", "GLOBEX", "NOW", "StoreConformance", "pause_issue", "tail"]


class StoreConformance(TranscriptsConformance, LedgerConformance, OutboxConformance, KeysConformance,
                       AccountsConformance, TasksConformance, PeopleConformance,
                       DecisionsConformance, DeploysConformance):
    """Behaviours shared by every store, one suite per port; ``store`` is a fixture the subclass
    provides: the transcripts' (:class:`TranscriptsConformance`), the ledger's
    (:class:`LedgerConformance`), the outbox's (:class:`OutboxConformance`), the API keys'
    (:class:`KeysConformance`), the sign-ins' and recent decisions' (:class:`AccountsConformance`),
    the A2A tasks' (:class:`TasksConformance`), who may answer (:class:`PeopleConformance`), and
    who holds a pause and the audit trail (:class:`DecisionsConformance`), and what a deploy
    reads of the waiting pauses (:class:`DeploysConformance`)."""
