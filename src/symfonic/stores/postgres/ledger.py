"""The pause ledger in PostgreSQL.

The claim is one conditional ``UPDATE ... RETURNING``: under READ COMMITTED a concurrent claimer
blocks on the row lock, then re-checks ``status = 'outstanding'`` against the committed row and
matches nothing, so exactly one host wins however many race. A pause's transcript tail, turn
state and ledger row (and its notifications) commit in one transaction, sent in one round trip.
"""

from __future__ import annotations

from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.services import ledger
from symfonic.services.conversation import TranscriptTail
from symfonic.services.ledger import FOREVER, Claim, Finish, Listing, PageAfter, PauseIssue, PauseRecord
from symfonic.services.votes import Vote
from symfonic.stores import postgres_writes as writes
from symfonic.stores import sql
from symfonic.stores.postgres.database import Connection, PostgresPort, Reader, S
from symfonic.stores.sql_listeners import announce_pause_pg

SWEEPS = tuple(sql.to_format_style(s.replace(*sql.SKIP_LOCKED)) for s in (sql.SWEEP, sql.SWEEP_LEASES))


class PostgresLedger(PostgresPort):
    """Pauses: issued, claimed once, renewed, finished, listed, swept."""

    async def issue(self, issue: PauseIssue) -> None:
        async def write(conn: Connection) -> list[Reader]:
            await writes.append(conn, issue.tail)
            await conn.execute(S["INSERT_CHECKPOINT"], (
                issue.state.checkpoint_id, issue.state.scope.key, issue.state.session_id,
                sql.dump_json(issue.state.to_dict())))
            await conn.execute(S["INSERT_PAUSE"], sql.pause_row(issue.record))
            if issue.finishes is not None:
                await writes.finish(conn, issue.finishes)
            if issue.notifications:
                async with conn.cursor() as cursor:
                    await cursor.executemany(S["INSERT_NOTIFICATION"],
                                             sql.notification_rows(issue.notifications))
            await announce_pause_pg(conn, issue.record)  # to its session's listeners, if any
            return []

        await self._write(write)

    async def get(self, jti: str) -> PauseRecord | None:
        rows = await self._fetchall(S["GET_PAUSE"], (jti,))
        return None if not rows else sql.record_of(rows[0])

    async def claim(self, jti: str, now: float, *, lease_until: float = FOREVER,
                    decision: dict[str, Any] | None = None, answered_by: str | None = None) -> Claim:
        stored = None if decision is None else sql.dump_json(decision)
        return await self._claimed(jti, S["CLAIM"], (now, sql.lease_of(lease_until), stored, answered_by,
                                                 jti, now))

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
        async def write(conn: Connection) -> list[Reader]:
            await writes.finish(conn, finish)
            if tail is not None:
                await writes.append(conn, tail)
            return []

        await self._write(write)

    async def pauses(self, scope: Scope, now: float, *, status: Listing = "outstanding",
                     limit: int = 100, after: PageAfter | None = None) -> list[PauseRecord]:
        rows = await self._fetchall(sql.to_format_style(sql.list_statement(status)),
                                    sql.list_parameters(scope, now, limit, after))
        return [sql.record_of(row) for row in rows]

    async def outstanding_counts(self, now: float) -> dict[tuple[str, str], int]:
        return sql.counts_of(await self._fetchall(S["OUTSTANDING_COUNTS"], (now,)))

    async def answered(self, scope: Scope, *, limit: int = 20) -> list[PauseRecord]:
        return [sql.record_of(row) for row in await self._fetchall(S["ANSWERED"], (scope.key, limit))]

    async def session_paused(self, scope: Scope, session_id: str, now: float) -> bool:
        return bool(await self._fetchall(S["SESSION_PAUSED"], (scope.key, session_id, now)))

    async def revoke(self, jti: str, now: float) -> bool:
        return await self._rowcount(S["REVOKE"], (now, jti)) == 1

    async def cast_vote(self, vote: Vote, now: float) -> bool:
        return await self._rowcount(S["CAST_VOTE"], sql.vote_row(vote, now)) == 1

    async def votes(self, jti: str) -> list[Vote]:
        return [sql.vote_of(row) for row in await self._fetchall(S["VOTES"], (jti,))]

    async def sweep_expired(self, now: float, *, limit: int = ledger.SWEEP_BATCH) -> int:
        return (await self._rowcount(SWEEPS[0], (now, limit))
                + await self._rowcount(SWEEPS[1], (now, limit)))
