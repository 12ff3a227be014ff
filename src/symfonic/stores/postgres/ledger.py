"""The pause ledger in PostgreSQL.

The claim is one conditional ``UPDATE ... RETURNING``: under READ COMMITTED a concurrent claimer
blocks on the row lock, then re-checks ``status = 'outstanding'`` against the committed row and
matches nothing, so exactly one host wins however many race. A pause's transcript tail, turn
state and ledger row (and its notifications) commit in one transaction, sent in one round trip.
"""

from __future__ import annotations

from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.services import audit_events, ledger
from symfonic.services.audit import SYSTEM, Actor, AuditEvent
from symfonic.services.conversation import TranscriptTail
from symfonic.services.ledger import (
    FOREVER,
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
from symfonic.stores import postgres_writes as writes
from symfonic.stores import sql, sql_audit
from symfonic.stores.json_text import dump_json
from symfonic.stores.postgres.database import PostgresPort, S
from symfonic.stores.sql_listeners import announce_pause_pg

_SWEEP_EXPIRED, _SWEEP_LEASES = (s.replace(*sql.SKIP_LOCKED) for s in (sql.SWEEP, sql.SWEEP_LEASES))


def _with_record(statement: str) -> str:
    """A claim-like statement that returns the row and audits it in the same statement."""
    return sql.to_format_style(f"WITH changed AS ({statement}) SELECT changed.*, "
                               f"{sql_audit.pg_call()} FROM changed")


def _audited(statement: str) -> str:
    """A statement returning ``(scope, jti)`` rows, each audited; tenants in a stable order, so
    that two transactions take the tenants' audit locks in the same order."""
    return sql.to_format_style(f"WITH changed AS ({statement}) SELECT {sql_audit.pg_call()} "
                               "FROM (SELECT * FROM changed ORDER BY scope, jti) AS c")


A = {"CLAIM": _with_record(sql.CLAIM), "ASSIGN": _with_record(sql.ASSIGN),
     "CLAIM_AT_EXPIRY": _with_record(sql.CLAIM_AT_EXPIRY),
     "UNASSIGN": _audited(sql.UNASSIGN), "REVOKE": _audited(sql.REVOKE),
     "CAST_VOTE": _audited(sql.CAST_VOTE), "SWEEP": _audited(_SWEEP_EXPIRED)}
"""The ledger's decisions, each with its audit record, in psycopg's style."""
SWEEP_LEASES = sql.to_format_style(_SWEEP_LEASES)
_FIRED = (f"WITH fired AS ({sql.FIRE_TIMER}), noted AS ("
          "INSERT INTO symfonic_outbox (id, topic, scope, payload, created_at, attempts, "
          "next_attempt_at) SELECT ?, ?, fired.scope, ?, ?, 0, ? FROM fired RETURNING 1) "
          f"SELECT {sql_audit.pg_call()}, (SELECT COUNT(*) FROM noted) FROM fired")
FIRE = {True: sql.to_format_style(_FIRED),
        False: sql.to_format_style(f"WITH fired AS ({sql.FIRE_TIMER}) "
                                   f"SELECT {sql_audit.pg_call()} FROM fired")}
"""A reminder or escalation in one statement: the step, its notification (when there is one)
and its audit record, each only if the step was still due."""
_TIMERS = sql.to_format_style(sql.DUE_TIMERS)
_DUE = sql.to_format_style(sql.DUE_ON_EXPIRY)


class PostgresLedger(PostgresPort):
    """Pauses: issued, claimed once, renewed, finished, listed, swept."""

    async def issue(self, issue: PauseIssue) -> None:
        write = writes.OneStatement()
        writes.append(write, issue.tail)
        write.change(S["INSERT_CHECKPOINT"], (issue.state.checkpoint_id, issue.state.scope.key,
                                             issue.state.session_id,
                                             dump_json(issue.state.to_dict())))
        write.change(S["INSERT_PAUSE"], sql.pause_row(issue.record))
        if issue.finishes is not None:
            writes.finish(write, issue.finishes)
        writes.notify(write, issue.notifications)
        announce_pause_pg(write, issue.record)  # to its session's listeners, if any
        await self._send(write)

    async def get(self, jti: str) -> PauseRecord | None:
        rows = await self._fetchall(S["GET_PAUSE"], (jti,))
        return None if not rows else sql.record_of(rows[0])

    async def get_paused(self, jti: str,
                         checkpoint_id: str) -> tuple[PauseRecord | None, TurnState | None]:
        rows = await self._fetchall(S["GET_PAUSED"], (checkpoint_id, jti))
        return sql.paused_of(rows[0] if rows else None)

    async def claim(self, jti: str, now: float, *, lease_until: float = FOREVER,
                    decision: dict[str, Any] | None = None, answered_by: str | None = None,
                    person: str | None = None, at_expiry: bool = False) -> Claim:
        stored = None if decision is None else dump_json(decision)
        parameters = (now, sql.lease_of(lease_until), stored, answered_by, jti, now)
        if at_expiry:
            event = audit_events.answered(now, decision, answered_by, None)
            return await self._claimed(jti, A["CLAIM_AT_EXPIRY"],
                                       (*parameters, *sql_audit.call_parameters(event)))
        event = audit_events.answered(now, decision, answered_by, person)
        return await self._claimed(jti, A["CLAIM"], (*parameters, now, person,
                                                     *sql_audit.call_parameters(event)))

    async def due_timers(self, now: float, *, limit: int = ledger.SWEEP_BATCH) -> list[PauseRecord]:
        return [sql.record_of(row) for row in await self._fetchall(_TIMERS, (now, now, limit))]

    async def fire_timer(self, firing: TimerFiring, now: float) -> bool:
        note = firing.notification
        parameters = sql.fire_parameters(firing.after, firing.due_at, now)
        if note is not None:
            _, topic, _, payload, created_at, due = sql.notification_rows((note,))[0]
            parameters = (*parameters, note.id, topic, payload, created_at, due)
        rows = await self._fetchall(FIRE[note is not None],
                                    (*parameters, *sql_audit.call_parameters(firing.event)),
                                    idempotent=False)
        return len(rows) == 1

    async def due_on_expiry(self, now: float, *, limit: int = ledger.SWEEP_BATCH) -> list[PauseRecord]:
        return [sql.record_of(row) for row in await self._fetchall(_DUE, (now, limit))]

    async def assign(self, jti: str, now: float, *, to: str, until: float, by: Actor) -> Claim:
        event = audit_events.assigned(now, to, until, by)
        return await self._claimed(jti, A["ASSIGN"], (to, until, jti, now, now, by.person,
                                                      *sql_audit.call_parameters(event)))

    async def unassign(self, jti: str, now: float, *, by: Actor) -> bool:
        return await self._decided("UNASSIGN", (jti, by.person, now),
                                   audit_events.released(now, by)) == 1

    async def _decided(self, name: str, parameters: tuple[Any, ...], event: AuditEvent) -> int:
        """Run one of :data:`A`'s audited statements; how many rows it changed."""
        rows = await self._fetchall(A[name], (*parameters, *sql_audit.call_parameters(event)),
                                    idempotent=False)
        return len(rows)

    async def reclaim(self, jti: str, now: float, *, lease_until: float = FOREVER) -> Claim:
        return await self._claimed(jti, S["RECLAIM"], (now, sql.lease_of(lease_until), jti, now))

    async def _claimed(self, jti: str, statement: str, parameters: tuple[Any, ...]) -> Claim:
        rows = await self._fetchall(statement, parameters, idempotent=False)
        if rows:
            return Claim(won=True, record=sql.record_of(rows[0]))
        return Claim(won=False, record=await self.get(jti))

    async def renew(self, jti: str, now: float, lease_until: float, *,
                    claimed_at: float | None = None) -> bool:
        return await self._rowcount(S["RENEW"], (sql.lease_of(lease_until), jti, now,
                                                  claimed_at, claimed_at)) == 1

    async def release(self, jti: str, *, claimed_at: float | None = None) -> bool:
        return await self._rowcount(S["RELEASE"], (jti, claimed_at, claimed_at)) == 1

    async def interrupt(self, jti: str, now: float, *, claimed_at: float | None = None) -> bool:
        return await self._rowcount(S["INTERRUPT"], (jti, claimed_at, claimed_at)) == 1

    async def finish(self, finish: Finish, tail: TranscriptTail | None = None) -> None:
        write = writes.OneStatement()
        writes.finish(write, finish)
        if tail is not None:
            writes.append(write, tail)
        await self._send(write)

    async def pauses(self, scope: Scope, now: float, *, status: Listing = "outstanding",
                     limit: int = 100, after: PageAfter | None = None) -> list[PauseRecord]:
        rows = await self._fetchall(sql.to_format_style(sql.list_statement(status)),
                                    sql.list_parameters(scope, now, limit, after))
        return [sql.record_of(row) for row in rows]

    async def outstanding_counts(self, now: float) -> dict[tuple[str, str], int]:
        return sql.counts_of(await self._fetchall(S["OUTSTANDING_COUNTS"], (now,)))

    async def waiting_contracts(self, now: float) -> list[WaitingContract]:
        return sql.contracts_of(await self._fetchall(S["WAITING_CONTRACTS"], (now,)))

    async def answered(self, scope: Scope, *, limit: int = 20) -> list[PauseRecord]:
        return [sql.record_of(row) for row in await self._fetchall(S["ANSWERED"], (scope.key, limit))]

    async def session_paused(self, scope: Scope, session_id: str, now: float) -> bool:
        return bool(await self._fetchall(S["SESSION_PAUSED"], (scope.key, session_id, now)))

    async def session_pause(self, scope: Scope, session_id: str, now: float) -> PauseRecord | None:
        rows = await self._fetchall(S["SESSION_PAUSE"], (scope.key, session_id, now))
        return sql.record_of(rows[0]) if rows else None

    async def revoke(self, jti: str, now: float, *, by: Actor = SYSTEM) -> bool:
        return await self._decided("REVOKE", (now, jti), audit_events.revoked(now, by)) == 1

    async def cast_vote(self, vote: Vote, now: float) -> bool:
        return await self._decided("CAST_VOTE", sql.vote_row(vote, now),
                                   audit_events.voted(vote)) == 1

    async def votes(self, jti: str) -> list[Vote]:
        return [sql.vote_of(row) for row in await self._fetchall(S["VOTES"], (jti,))]

    async def sweep_expired(self, now: float, *, limit: int = ledger.SWEEP_BATCH) -> int:
        return (await self._decided("SWEEP", (now, limit), audit_events.expired(now))
                + await self._rowcount(SWEEP_LEASES, (now, limit)))
