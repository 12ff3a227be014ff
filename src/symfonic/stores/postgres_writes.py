"""The PostgreSQL store's writes: one round trip each, their checks made by the server.

A write (a pause's tail, turn state and ledger row; a resume's outcome and tail) is a handful of
statements sent in one pipeline on an autocommit connection and ended by one Sync. Until that
Sync the server runs them as one implicit transaction: all of them commit when it arrives, and
the first that fails makes the server skip the rest and roll back every one. Nothing waits for
an answer in between, so a write costs one round trip, where an explicit ``BEGIN``, a sync to
read the checks' answers, then ``COMMIT`` cost two (and a pause + resume about a fifth more of
the host's CPU, measured on the benchmark's cycle).

That needs the checks to fail on the server, inside the transaction, rather than in Python after
reading their answers: ``symfonic_expect`` is a small PL/pgSQL function that raises under an
SQLSTATE of symfonic's own when a value is not the one expected (the transcript's length an
append was made for, the one claimed row an outcome needs), and :func:`refusal` turns those
errors back into the exceptions every store raises. The function is created, or replaced when
its body changed, at open under the migration lock (:func:`install`): it holds no data, so it
needs no schema version.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import psycopg

from symfonic.services import audit_events
from symfonic.services.conversation import StoreError, TranscriptConflict, TranscriptTail
from symfonic.services.ledger import Finish
from symfonic.stores import sql, sql_audit, sql_transcripts
from symfonic.stores.json_text import dump_json

Connection = psycopg.AsyncConnection[Any]
Reader = Callable[[], Awaitable[None]]
"""Reads a write's answer (a row count) once the write committed."""

POSITION = "SY001"
"""An append's transcript is not the length it was made for."""
UNCLAIMED = "SY002"
"""An outcome for a pause that is not (or no longer) claimed."""

SIGNATURE = "symfonic_expect(BIGINT, BIGINT, TEXT, TEXT)"
"""``symfonic_expect(found, expected, sqlstate, text)``: ``text`` is the refusal, with ``%s`` where
the value found goes. The parameters are unnamed so that a later release may replace the body
(``CREATE OR REPLACE`` cannot rename a parameter)."""
_BODY = """
BEGIN
    IF $1 IS DISTINCT FROM $2 THEN
        RAISE EXCEPTION USING ERRCODE = $3, MESSAGE = format($4, $1);
    END IF;
    RETURN $1;
END
"""
FUNCTIONS = ((SIGNATURE, _BODY), (sql_audit.PG_SIGNATURE, sql_audit.PG_BODY))
"""The server-side functions the writes call: the checks, and the audit trail's append."""

_POSITION = sql.to_format_style(
    f"SELECT symfonic_expect(({sql_transcripts.NEXT_SEQ}), ?, '{POSITION}', ?)")
_INSERT_MESSAGES = sql.to_format_style(sql_transcripts.INSERT_MESSAGES)
_FINISH = sql.to_format_style(
    f"WITH finished AS ({sql.FINISH}) "
    f"SELECT symfonic_expect((SELECT COUNT(*) FROM finished), 1, '{UNCLAIMED}', ?), "
    f"(SELECT {sql_audit.pg_call()} FROM finished)")


async def install(conn: Connection) -> None:
    """Create the functions, or replace outdated ones; nothing when they are current, so that
    a role allowed only to read and write rows can open a database someone else migrated."""
    for signature, body in FUNCTIONS:
        installed = f"SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure('{signature}')"
        row = await (await conn.execute(installed)).fetchone()
        if row is None or row[0] != body:
            await conn.execute(f"CREATE OR REPLACE FUNCTION {signature} RETURNS BIGINT "
                               f"LANGUAGE plpgsql AS $${body}$$")


async def append(conn: Connection, tail: TranscriptTail) -> None:
    """Queue the tail's rows behind the check of the transcript's length.

    A writer that raced another to the same position fails on the primary key; the check
    catches the rest, a position the session has moved past or not yet reached.
    """
    if not tail.messages:
        return
    what = (f"session {_literal(tail.session_id)} holds %s messages; the append expected "
            f"{tail.start}")
    await conn.execute(_POSITION, (tail.scope.key, tail.session_id, tail.start, what))
    async with conn.cursor() as cursor:
        await cursor.executemany(_INSERT_MESSAGES, sql_transcripts.message_rows(tail))


async def finish(conn: Connection, outcome: Finish) -> None:
    """Queue the outcome, which fails the write unless exactly this pause's claimed row took it."""
    what = (f"pause {_literal(outcome.jti)} is not claimed; its outcome cannot be recorded "
            "(%s rows matched)")
    await conn.execute(_FINISH, (outcome.status, outcome.finished_at, dump_json(outcome.outcome),
                                 outcome.jti, outcome.claimed_at, outcome.claimed_at, what,
                                 *sql_audit.call_parameters(audit_events.finished(outcome))))


def _literal(text: str) -> str:
    """``text`` quoted, safe inside ``format()``'s template (a ``%`` would be read as a slot)."""
    return repr(text).replace("%", "%%")


def refusal(error: psycopg.Error) -> StoreError | None:
    """The store's exception for a check that failed on the server; None for any other error."""
    text = error.diag.message_primary or str(error)
    if error.sqlstate == POSITION:
        return TranscriptConflict(text)
    if error.sqlstate == UNCLAIMED:
        return StoreError(text)
    if isinstance(error, psycopg.errors.UniqueViolation) and error.diag.table_name == "symfonic_messages":
        return TranscriptConflict(f"another writer took the transcript position: {error}")
    return None
