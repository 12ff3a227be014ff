"""The pause ledger in SQLite: a pause's rows in one transaction, a claim one caller wins.

The claim is a conditional ``UPDATE ... RETURNING`` run while the write lock is held, so exactly
one caller, in any process, sees its row come back.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.services import audit_events
from symfonic.services.audit import SYSTEM, Actor, AuditEvent
from symfonic.services.conversation import StoreError, TranscriptTail
from symfonic.services.ledger import (
    FOREVER,
    SWEEP_BATCH,
    Claim,
    Finish,
    Listing,
    PageAfter,
    PauseIssue,
    PauseRecord,
    TimerFiring,
    WaitingContract,
)
from symfonic.services.turn_state import TurnState
from symfonic.services.votes import Vote
from symfonic.stores import sql, sql_audit
from symfonic.stores.json_text import dump_json
from symfonic.stores.sql_listeners import announce_pause
from symfonic.stores.sqlite.database import SQLitePort
from symfonic.stores.sqlite.transcripts import append_tail


class SQLiteLedger(SQLitePort):
    """Pauses: issued, claimed once, renewed, finished, listed, swept."""

    async def issue(self, issue: PauseIssue) -> None:
        def write(c: sqlite3.Connection) -> None:
            append_tail(c, issue.tail)
            c.execute(sql.INSERT_CHECKPOINT, (issue.state.checkpoint_id, issue.state.scope.key,
                                              issue.state.session_id,
                                              dump_json(issue.state.to_dict())))
            c.execute(sql.INSERT_PAUSE, sql.pause_row(issue.record))
            if issue.finishes is not None:
                finish_claimed(c, issue.finishes)
            if issue.notifications:
                c.executemany(sql.INSERT_NOTIFICATION, sql.notification_rows(issue.notifications))
            announce_pause(c, issue.record)  # to its session's listeners, if any

        await self._write(write)

    async def get(self, jti: str) -> PauseRecord | None:
        row = await self._read(lambda c: c.execute(sql.GET_PAUSE, (jti,)).fetchone())
        return None if row is None else sql.record_of(row)

    async def get_paused(self, jti: str,
                         checkpoint_id: str) -> tuple[PauseRecord | None, TurnState | None]:
        return sql.paused_of(await self._read(
            lambda c: c.execute(sql.GET_PAUSED, (checkpoint_id, jti)).fetchone()))

    async def claim(self, jti: str, now: float, *, lease_until: float = FOREVER,
                    decision: dict[str, Any] | None = None, answered_by: str | None = None,
                    person: str | None = None, at_expiry: bool = False) -> Claim:
        stored = None if decision is None else dump_json(decision)
        parameters = (now, sql.lease_of(lease_until), stored, answered_by, jti, now)
        if at_expiry:
            return await self._claimed(jti, sql.CLAIM_AT_EXPIRY, parameters,
                                       audit_events.answered(now, decision, answered_by, None))
        return await self._claimed(jti, sql.CLAIM, (*parameters, now, person),
                                   audit_events.answered(now, decision, answered_by, person))

    async def due_timers(self, now: float, *, limit: int = SWEEP_BATCH) -> list[PauseRecord]:
        rows = await self._read(lambda c: c.execute(sql.DUE_TIMERS, (now, now, limit)).fetchall())
        return [sql.record_of(row) for row in rows]

    async def fire_timer(self, firing: TimerFiring, now: float) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            fired = c.execute(sql.FIRE_TIMER, sql.fire_parameters(firing.after, firing.due_at,
                                                                  now)).fetchall()
            if fired and firing.notification is not None:
                c.executemany(sql.INSERT_NOTIFICATION,
                              sql.notification_rows((firing.notification,)))
            return audit_rows(c, fired, firing.event) == 1

        return await self._write(write)

    async def due_on_expiry(self, now: float, *, limit: int = SWEEP_BATCH) -> list[PauseRecord]:
        rows = await self._read(lambda c: c.execute(sql.DUE_ON_EXPIRY, (now, limit)).fetchall())
        return [sql.record_of(row) for row in rows]

    async def reclaim(self, jti: str, now: float, *, lease_until: float = FOREVER) -> Claim:
        return await self._claimed(jti, sql.RECLAIM, (now, sql.lease_of(lease_until), jti, now))

    async def assign(self, jti: str, now: float, *, to: str, until: float, by: Actor) -> Claim:
        return await self._claimed(jti, sql.ASSIGN, (to, until, jti, now, now, by.person),
                                   audit_events.assigned(now, to, until, by))

    async def unassign(self, jti: str, now: float, *, by: Actor) -> bool:
        return await self._audited(sql.UNASSIGN, (jti, by.person, now),
                                   audit_events.released(now, by)) == 1

    async def _claimed(self, jti: str, statement: str, parameters: tuple[Any, ...],
                       audited: AuditEvent | None = None) -> Claim:
        def write(c: sqlite3.Connection) -> Claim:
            row = c.execute(statement, parameters).fetchone()
            if row is not None:
                record = sql.record_of(row)
                if audited is not None:
                    sql_audit.append(c, record.scope.key, record.jti, audited)
                return Claim(won=True, record=record)
            current = c.execute(sql.GET_PAUSE, (jti,)).fetchone()
            return Claim(won=False, record=None if current is None else sql.record_of(current))

        return await self._write(write)

    async def renew(self, jti: str, now: float, lease_until: float, *,
                    claimed_at: float | None = None) -> bool:
        return await self._changed(sql.RENEW, (sql.lease_of(lease_until), jti, now,
                                               claimed_at, claimed_at))

    async def release(self, jti: str, *, claimed_at: float | None = None) -> bool:
        return await self._changed(sql.RELEASE, (jti, claimed_at, claimed_at))

    async def interrupt(self, jti: str, now: float, *, claimed_at: float | None = None) -> bool:
        return await self._changed(sql.INTERRUPT, (jti, claimed_at, claimed_at))

    async def finish(self, finish: Finish, tail: TranscriptTail | None = None) -> None:
        def write(c: sqlite3.Connection) -> None:
            finish_claimed(c, finish)
            if tail is not None:
                append_tail(c, tail)

        await self._write(write)

    async def pauses(self, scope: Scope, now: float, *, status: Listing = "outstanding",
                     limit: int = 100, after: PageAfter | None = None) -> list[PauseRecord]:
        rows = await self._read(lambda c: c.execute(
            sql.list_statement(status), sql.list_parameters(scope, now, limit, after)).fetchall())
        return [sql.record_of(row) for row in rows]

    async def outstanding_counts(self, now: float) -> dict[tuple[str, str], int]:
        return sql.counts_of(await self._read(
            lambda c: c.execute(sql.OUTSTANDING_COUNTS, (now,)).fetchall()))

    async def waiting_contracts(self, now: float) -> list[WaitingContract]:
        return sql.contracts_of(await self._read(
            lambda c: c.execute(sql.WAITING_CONTRACTS, (now,)).fetchall()))

    async def answered(self, scope: Scope, *, limit: int = 20) -> list[PauseRecord]:
        rows = await self._read(lambda c: c.execute(sql.ANSWERED, (scope.key, limit)).fetchall())
        return [sql.record_of(row) for row in rows]

    async def session_paused(self, scope: Scope, session_id: str, now: float) -> bool:
        row = await self._read(lambda c: c.execute(sql.SESSION_PAUSED,
                                                   (scope.key, session_id, now)).fetchone())
        return row is not None

    async def session_pause(self, scope: Scope, session_id: str, now: float) -> PauseRecord | None:
        row = await self._read(lambda c: c.execute(sql.SESSION_PAUSE,
                                                   (scope.key, session_id, now)).fetchone())
        return None if row is None else sql.record_of(row)

    async def revoke(self, jti: str, now: float, *, by: Actor = SYSTEM) -> bool:
        return await self._audited(sql.REVOKE, (now, jti), audit_events.revoked(now, by)) == 1

    async def cast_vote(self, vote: Vote, now: float) -> bool:
        return await self._audited(sql.CAST_VOTE, sql.vote_row(vote, now),
                                   audit_events.voted(vote)) == 1

    async def votes(self, jti: str) -> list[Vote]:
        return [sql.vote_of(row) for row in
                await self._read(lambda c: c.execute(sql.VOTES, (jti,)).fetchall())]

    async def sweep_expired(self, now: float, *, limit: int = SWEEP_BATCH) -> int:
        def write(c: sqlite3.Connection) -> int:
            expired = audit_rows(c, c.execute(sql.SWEEP, (now, limit)).fetchall(),
                                 audit_events.expired(now))
            return expired + c.execute(sql.SWEEP_LEASES, (now, limit)).rowcount

        return await self._write(write)

    async def _audited(self, statement: str, parameters: tuple[Any, ...],
                       event: AuditEvent) -> int:
        """Run a statement that returns ``(scope, jti)`` of each row it changed, and audit each
        in its transaction; how many it changed."""
        return await self._write(lambda c: audit_rows(
            c, c.execute(statement, parameters).fetchall(), event))


def audit_rows(conn: sqlite3.Connection, changed: list[Any], event: AuditEvent) -> int:
    """Append ``event`` for each ``(scope, jti)`` row changed; how many there were."""
    for scope, jti in changed:
        sql_audit.append(conn, scope, jti, event)
    return len(changed)


def finish_claimed(conn: sqlite3.Connection, finish: Finish) -> None:
    changed = conn.execute(sql.FINISH, (finish.status, finish.finished_at,
                                        dump_json(finish.outcome), finish.jti,
                                        finish.claimed_at, finish.claimed_at)).fetchall()
    if len(changed) != 1:
        raise StoreError(f"pause {finish.jti} is not claimed; its outcome cannot be recorded")
    audit_rows(conn, changed, audit_events.finished(finish))
