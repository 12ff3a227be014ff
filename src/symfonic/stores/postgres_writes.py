"""The PostgreSQL store's writes: one statement and one round trip each, checked by the server.

A write (a pause's tail, turn state and ledger row; a resume's outcome and tail) is gathered
into one statement (:class:`OneStatement`): each of its changes a data-modifying ``WITH`` clause,
each check an expression of the final ``SELECT``. It is sent in a pipeline ended by one Sync,
on an autocommit connection: until the Sync the server runs what the pipeline holds as one
implicit transaction (the statement, and the rows of a very long tail right behind it), so all of
it commits or none does, and a write costs one round trip, where an explicit ``BEGIN``, a sync to
read the checks' answers, then ``COMMIT`` cost two. The changes were once separate statements
in that pipeline; as one, the driver converts, binds and tracks one statement where it handled up
to six, and the server parses and plans one (docs/design-notes.md has the A/B).

That needs the checks to fail on the server, inside the statement, rather than in Python after
reading their answers: ``symfonic_expect`` is a small PL/pgSQL function that raises under an
SQLSTATE of symfonic's own when a value is not the one expected (the transcript's length an
append was made for, the one claimed row an outcome needs), and :func:`refusal` turns those
errors back into the exceptions every store raises. The function is created, or replaced when
its body changed, at open under the migration lock (:func:`install`): it holds no data, so it
needs no schema version.

Every clause and the final ``SELECT`` read the snapshot taken as the statement starts, so a
check never sees the statement's own rows: the transcript's length is the one before the append.
PostgreSQL runs the ``SELECT`` (the checks) before the clauses nobody reads, so a tail written
at a position the session has moved past fails its check, typed, rather than on the key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import psycopg

from symfonic.services import audit_events
from symfonic.services.conversation import StoreError, TranscriptConflict, TranscriptTail
from symfonic.services.ledger import Finish
from symfonic.services.outbox import Notification
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
    f"symfonic_expect(({sql_transcripts.NEXT_SEQ}), ?, '{POSITION}', ?)")
_INSERT_MESSAGES = sql.to_format_style(sql_transcripts.INSERT_MESSAGES)
_INSERT_NOTIFICATIONS = sql.to_format_style(sql.INSERT_NOTIFICATION)
_FINISH = sql.to_format_style(sql.FINISH)
ROWS_IN_STATEMENT = 256
"""Rows of one table a write's statement holds in its ``VALUES``; the rest of a larger write (a
long history appended at once) follows in the same pipeline, inside the same transaction, so the
statement stays far below the protocol's 65,535 parameters. A ``VALUES`` list makes a statement
of its own per row count (the driver prepares each once it recurs); arrays through ``unnest``
make one, but cost the host more to send than a pause's few rows (measured, and declined)."""
_AUDIT = sql.to_format_style(sql_audit.pg_call())


class OneStatement:
    """A write's changes and checks, sent as one statement (see the module docstring).

    :meth:`change` adds a data-modifying statement as a ``WITH`` clause and returns its name,
    through which a check may read what its ``RETURNING`` returned; :meth:`insert` adds rows;
    :meth:`check` adds an expression to the final ``SELECT``. Parameters follow the text's
    order: the clauses', then the checks'. Statements are in psycopg's placeholder style.
    """

    __slots__ = ("_changes", "_checks", "_overflow")

    def __init__(self) -> None:
        self._changes: list[tuple[str, Sequence[Any]]] = []
        self._checks: list[tuple[str, Sequence[Any]]] = []
        self._overflow: list[tuple[str, Sequence[Sequence[Any]]]] = []

    def change(self, statement: str, parameters: Sequence[Any]) -> str:
        name = f"w{len(self._changes)}"
        self._changes.append((f"{name} AS ({statement})", parameters))
        return name

    def insert(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        """Add ``rows`` for ``statement``, an ``INSERT`` of one row's ``VALUES``: up to
        :data:`ROWS_IN_STATEMENT` of them in this statement, the rest right after it."""
        if not rows:
            return
        head, group = statement.split(" VALUES ")
        inline = rows[:ROWS_IN_STATEMENT]
        self.change(f"{head} VALUES {', '.join([group] * len(inline))}",
                    [value for row in inline for value in row])
        if len(rows) > ROWS_IN_STATEMENT:
            self._overflow.append((statement, rows[ROWS_IN_STATEMENT:]))

    def check(self, expression: str, parameters: Sequence[Any] = ()) -> None:
        self._checks.append((expression, parameters))

    def text(self) -> tuple[str, list[Any]]:
        """The statement and its parameters."""
        if not self._changes and not self._checks:
            raise ValueError("a write with nothing to write")
        clauses = ", ".join(clause for clause, _ in self._changes)
        selected = ", ".join(check for check, _ in self._checks) or "1"
        parameters = [value for _, values in (*self._changes, *self._checks) for value in values]
        return (f"WITH {clauses} SELECT {selected}" if clauses else f"SELECT {selected}"), parameters

    async def send(self, conn: Connection) -> None:
        """Queue the statement, and any rows past it, on ``conn``, inside the pipeline whose
        Sync commits them all; should the statement fail, the server skips the rest."""
        statement, parameters = self.text()
        await conn.execute(statement, parameters)
        for insert, rows in self._overflow:
            async with conn.cursor() as cursor:
                await cursor.executemany(insert, rows)


async def install(conn: Connection) -> None:
    """Create the functions, or replace outdated ones; nothing when they are current, so that
    a role allowed only to read and write rows can open a database someone else migrated."""
    for signature, body in FUNCTIONS:
        installed = f"SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure('{signature}')"
        row = await (await conn.execute(installed)).fetchone()
        if row is None or row[0] != body:
            await conn.execute(f"CREATE OR REPLACE FUNCTION {signature} RETURNS BIGINT "
                               f"LANGUAGE plpgsql AS $${body}$$")


def append(write: OneStatement, tail: TranscriptTail) -> None:
    """Add the tail's rows, behind the check of the transcript's length.

    A writer that raced another to the same position fails on the primary key; the check
    catches the rest, a position the session has moved past or not yet reached.
    """
    if not tail.messages:
        return
    what = (f"session {_literal(tail.session_id)} holds %s messages; the append expected "
            f"{tail.start}")
    write.insert(_INSERT_MESSAGES, sql_transcripts.message_rows(tail))
    write.check(_POSITION, (tail.scope.key, tail.session_id, tail.start, what))


def notify(write: OneStatement, notifications: Sequence[Notification]) -> None:
    """Add the notifications' outbox rows."""
    write.insert(_INSERT_NOTIFICATIONS, sql.notification_rows(notifications))


def finish(write: OneStatement, outcome: Finish) -> None:
    """Add the outcome, which fails the write unless exactly this pause's claimed row took it,
    and its audit record."""
    what = (f"pause {_literal(outcome.jti)} is not claimed; its outcome cannot be recorded "
            "(%s rows matched)")
    finished = write.change(_FINISH, (outcome.status, outcome.finished_at,
                                      dump_json(outcome.outcome), outcome.jti,
                                      outcome.claimed_at, outcome.claimed_at))
    write.check(f"symfonic_expect((SELECT COUNT(*) FROM {finished}), 1, '{UNCLAIMED}', %s)",
                (what,))
    write.check(f"(SELECT {_AUDIT} FROM {finished})",
                sql_audit.call_parameters(audit_events.finished(outcome)))


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
