"""The SQL both relational adapters share: schema, statements and row mapping.

Statements are written with ``?`` placeholders (SQLite's style); the PostgreSQL adapter converts
them with :func:`to_format_style`. The schema is a version-indexed list of migrations, applied in
order by each adapter under its own lock (SQLite's write lock, PostgreSQL's advisory lock).

Transcripts are rows keyed by (scope, session, seq): appending writes only the new rows, which is
why a pause costs the same at any history length (their format: :mod:`symfonic.stores.sql_transcripts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.services.conversation import StoredFormatError
from symfonic.services.ledger import (
    EXPIRY_FORMAT,
    FOREVER,
    LEDGER_FORMAT,
    POLICY_FORMAT,
    Listing,
    PageAfter,
    PauseRecord,
    WaitingContract,
    contract_key,
)
from symfonic.services.outbox import Notification, OutboxEntry
from symfonic.services.turn_state import TurnState, TurnStateFormatError
from symfonic.services.votes import Vote
from symfonic.stores.json_text import dump_json, load_json

PAUSE_COLUMNS = ("jti, scope, run_id, root_run_id, session_id, thread_id, checkpoint_id, name, "
                 "kind, tool_call_id, pin, payload, answer_schema, issued_at, expires_at, status, "
                 "claimed_at, finished_at, outcome, format, lease_expires_at, decision, answered_by, "
                 "requester, policy, assignee, assigned_until, on_expiry, timers, next_timer_at, tools")

INSERT_CHECKPOINT = ("INSERT INTO symfonic_checkpoints (checkpoint_id, scope, session_id, state) "
                     "VALUES (?, ?, ?, ?)")
LOAD_CHECKPOINT = "SELECT state FROM symfonic_checkpoints WHERE checkpoint_id = ?"
INSERT_PAUSE = (f"INSERT INTO symfonic_pauses ({PAUSE_COLUMNS}) VALUES "
                f"({', '.join('?' * len(PAUSE_COLUMNS.split(',')))})")
GET_PAUSE = f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE jti = ?"
GET_PAUSED = (f"SELECT {PAUSE_COLUMNS}, (SELECT state FROM symfonic_checkpoints "
              f"WHERE checkpoint_id = ?) FROM symfonic_pauses WHERE jti = ?")
"""The row and, in its last column, the turn state of the checkpoint given (NULL if none)."""
FREE_FOR = "(assignee IS NULL OR assigned_until <= ? OR assignee = ?)"
"""The pause is nobody's at the time given, or is the person's given (two parameters: now, the
person; a NULL person matches only a pause nobody holds)."""
CLAIM = (f"UPDATE symfonic_pauses SET status = 'claimed', claimed_at = ?, lease_expires_at = ?, "
         f"decision = ?, answered_by = ? WHERE jti = ? AND status = 'outstanding' AND expires_at > ? "
         f"AND {FREE_FOR} RETURNING {PAUSE_COLUMNS}")
CLAIM_AT_EXPIRY = (f"UPDATE symfonic_pauses SET status = 'claimed', claimed_at = ?, "
                   f"lease_expires_at = ?, decision = ?, answered_by = ? WHERE jti = ? "
                   f"AND status = 'outstanding' AND expires_at <= ? AND on_expiry IS NOT NULL "
                   f"RETURNING {PAUSE_COLUMNS}")
"""The system's claim of a pause that expired and decides itself: the other side of the moment
from :data:`CLAIM`'s ``expires_at > ?``, so a late answer and the decision never both win. Its
parameters are :data:`CLAIM`'s first six."""
DUE_ON_EXPIRY = (f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE status = 'outstanding' "
                 "AND on_expiry IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?")
DUE_TIMERS = (f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE status = 'outstanding' "
              "AND next_timer_at <= ? AND expires_at > ? ORDER BY next_timer_at LIMIT ?")
FIRE_TIMER = ("UPDATE symfonic_pauses SET timers = ?, next_timer_at = ?, policy = ?, format = ? "
              "WHERE jti = ? AND status = 'outstanding' AND next_timer_at = ? AND expires_at > ? "
              "RETURNING scope, jti")
"""A step taken once: only while it is still the pause's next (compare-and-set on its time)."""
ASSIGN = (f"UPDATE symfonic_pauses SET assignee = ?, assigned_until = ? WHERE jti = ? "
          f"AND status = 'outstanding' AND expires_at > ? AND {FREE_FOR} RETURNING {PAUSE_COLUMNS}")
UNASSIGN = ("UPDATE symfonic_pauses SET assignee = NULL, assigned_until = NULL WHERE jti = ? "
            "AND status = 'outstanding' AND assignee = ? AND assigned_until > ? RETURNING scope, jti")
LAPSED = "(status = 'interrupted' OR (status = 'claimed' AND lease_expires_at <= ?))"
"""A turn waiting for recovery: interrupted, or claimed with a lapsed lease (one parameter: now)."""
RECLAIM = (f"UPDATE symfonic_pauses SET status = 'claimed', claimed_at = ?, lease_expires_at = ? "
           f"WHERE jti = ? AND {LAPSED} RETURNING {PAUSE_COLUMNS}")
HELD = " AND (CAST(? AS DOUBLE PRECISION) IS NULL OR claimed_at = CAST(? AS DOUBLE PRECISION))"
"""Ends a holder's write (renew, release, interrupt, finish): it applies only to the claim that
holder won, told by its ``claimed_at``, never to a later claim a recovery made after the holder's
lease lapsed (two parameters, both that ``claimed_at``; NULL for an unfenced write). Without it a
holder that stalled past its lease would renew, or finish, the recovery's claim and run on beside
it."""
RENEW = ("UPDATE symfonic_pauses SET lease_expires_at = ? WHERE jti = ? AND status = 'claimed' "
         "AND (lease_expires_at IS NULL OR lease_expires_at > ?)" + HELD)
RELEASE = ("UPDATE symfonic_pauses SET status = 'outstanding', claimed_at = NULL, "
           "lease_expires_at = NULL, decision = NULL, answered_by = NULL "
           "WHERE jti = ? AND status = 'claimed'" + HELD)
ANSWERED = (f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE scope = ? AND claimed_at IS NOT NULL "
            "ORDER BY claimed_at DESC, jti DESC LIMIT ?")
"""A scope's answered pauses, the latest answer first (on the partial index of version 5)."""
INTERRUPT = ("UPDATE symfonic_pauses SET status = 'interrupted' WHERE jti = ? AND status = 'claimed'"
             + HELD)
FINISH = ("UPDATE symfonic_pauses SET status = ?, finished_at = ?, outcome = ? "
          "WHERE jti = ? AND status = 'claimed'" + HELD + " RETURNING scope, jti")
LIST_OUTSTANDING = (f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE scope = ? "
                    "AND status = 'outstanding' AND expires_at > ? AND (issued_at, jti) > (?, ?) "
                    "ORDER BY issued_at, jti LIMIT ?")
IN_FLIGHT = "status IN ('claimed', 'interrupted')"
"""The predicate of the in-flight pauses' partial index (version 22), written as the index writes
it: SQLite uses a partial index only for a query that states its predicate (PostgreSQL would
prove it from :data:`LAPSED`; SQLite does not)."""
LIST_INTERRUPTED = (f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE scope = ? AND {IN_FLIGHT} "
                    f"AND {LAPSED} AND (issued_at, jti) > (?, ?) ORDER BY issued_at, jti LIMIT ?")
CAST_VOTE = ("INSERT INTO symfonic_pause_votes (jti, round, person, arguments, answered_by, cast_at) "
             "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM symfonic_pauses WHERE jti = ? "
             f"AND status = 'outstanding' AND expires_at > ? AND {FREE_FOR}) ON CONFLICT DO NOTHING "
             "RETURNING (SELECT scope FROM symfonic_pauses p WHERE p.jti = symfonic_pause_votes.jti) "
             "AS scope, jti")
"""A vote, written only while its pause is answerable and only once per person and round (and
one edit per round): :mod:`symfonic.services.votes`. Parameters: :func:`vote_row`. On PostgreSQL
a vote racing the winning claim may read the pause still outstanding and land just after the
claim (and after it in the audit trail): it counts for nothing, since the claim was won."""
VOTES = ("SELECT jti, round, person, arguments, answered_by, cast_at FROM symfonic_pause_votes "
         "WHERE jti = ?")
OUTSTANDING_COUNTS = ("SELECT scope, pin, COUNT(*) FROM symfonic_pauses WHERE status = 'outstanding' "
                      "AND expires_at > ? GROUP BY scope, pin")

WAITING_CONTRACTS = ("SELECT pin, name, kind, answer_schema, tools, COUNT(*) FROM symfonic_pauses "
                     "WHERE status IN ('claimed', 'interrupted') OR (status = 'outstanding' AND "
                     "(expires_at > ? OR on_expiry IS NOT NULL)) "
                     "GROUP BY pin, name, kind, answer_schema, tools")
"""The pauses a deploy must not strand, grouped by definition and contract (one scan)."""


def contracts_of(rows: Any) -> list[WaitingContract]:
    """:data:`WAITING_CONTRACTS`' rows as groups, one per contract.

    The statement groups by the stored text, and one contract may be stored as two texts (the
    standard encoder's, before :mod:`.json_text`, and orjson's, which writes non-ASCII as UTF-8):
    groups whose values are equal are counted as one."""
    groups: dict[str, WaitingContract] = {}
    for pin, name, kind, schema, tools, count in rows:
        contract = WaitingContract(
            pin=str(pin), name=str(name), kind=str(kind),
            answer_schema=None if schema is None else load_json(schema),
            tools=None if tools is None else load_json(tools), count=int(count))
        key = contract_key(contract.pin, contract.name, contract.kind, contract.answer_schema,
                           contract.tools)
        seen = groups.get(key)
        groups[key] = contract if seen is None else replace(seen, count=seen.count + contract.count)
    return list(groups.values())


def counts_of(rows: Any) -> dict[tuple[str, str], int]:
    """(tenant, agent) → count, from :data:`OUTSTANDING_COUNTS`' rows (a pin's agent is the part
    before its ``@``; one agent's pins of several definitions add up)."""
    counts: dict[tuple[str, str], int] = {}
    for scope, pin, count in rows:
        key = (str(scope), str(pin).partition("@")[0])
        counts[key] = counts.get(key, 0) + int(count)
    return counts


SESSION_PAUSED = ("SELECT 1 FROM symfonic_pauses WHERE scope = ? AND session_id = ? "
                  "AND status = 'outstanding' AND (expires_at > ? OR on_expiry IS NOT NULL) LIMIT 1")
"""Whether a session waits on a pause: an unexpired one, or one past its expiry whose decision
(``on_expiry``) is still to be taken: its turn goes on soon, so a new turn must not start."""
SESSION_PAUSE = (f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE scope = ? AND session_id = ? "
                 "AND status = 'outstanding' AND (expires_at > ? OR on_expiry IS NOT NULL) "
                 "ORDER BY issued_at DESC, jti DESC LIMIT 1")
"""The pause :data:`SESSION_PAUSED` finds, whole: what a client reloading the session is shown."""
REVOKE = ("UPDATE symfonic_pauses SET status = 'revoked', finished_at = ? "
          "WHERE jti = ? AND status = 'outstanding' RETURNING scope, jti")
SWEEP = ("UPDATE symfonic_pauses SET status = 'expired' WHERE jti IN (SELECT jti FROM symfonic_pauses "
         "WHERE status = 'outstanding' AND expires_at <= ? AND on_expiry IS NULL "
         "ORDER BY expires_at LIMIT ?) RETURNING scope, jti")
SWEEP_LEASES = ("UPDATE symfonic_pauses SET status = 'interrupted' WHERE jti IN (SELECT jti FROM "
                "symfonic_pauses WHERE status = 'claimed' AND lease_expires_at <= ? "
                "ORDER BY lease_expires_at LIMIT ?)")
"""One batch of a sweep each, on the partial indexes of version 9 (the order makes PostgreSQL's
planner walk the index instead of scanning the table until it found enough rows)."""
SKIP_LOCKED = ("LIMIT ?)", "LIMIT ? FOR UPDATE SKIP LOCKED)")
"""PostgreSQL's sweeps pass over rows a concurrent claim holds: they are changing anyway."""

OUTBOX_COLUMNS = ("id, topic, scope, payload, created_at, attempts, next_attempt_at, last_error, "
                  "delivered_at, failed_at")
INSERT_NOTIFICATION = ("INSERT INTO symfonic_outbox (id, topic, scope, payload, created_at, "
                       "attempts, next_attempt_at) VALUES (?, ?, ?, ?, ?, 0, ?)")
OUTBOX_ADD = INSERT_NOTIFICATION + " ON CONFLICT (id) DO NOTHING"
"""A notification written after the fact it announces (a fan-out), once whatever the retries."""
OUTBOX_WITH_PREFIX = (f"SELECT {OUTBOX_COLUMNS} FROM symfonic_outbox WHERE substr(id, 1, ?) = ? "
                      "ORDER BY created_at, id LIMIT ?")
PENDING = "delivered_at IS NULL AND failed_at IS NULL"
_DUE = f"{PENDING} AND next_attempt_at <= ?"


CLAIM_DUE = (f"UPDATE symfonic_outbox SET attempts = attempts + 1, next_attempt_at = ? "
             f"WHERE id IN (SELECT id FROM symfonic_outbox WHERE {_DUE} "
             f"ORDER BY next_attempt_at, created_at, id LIMIT ?) RETURNING {OUTBOX_COLUMNS}")
"""SQLite's claim of the oldest due rows: one more attempt each, hidden until the lease's end
(parameters: lease end, now, limit). Writers are serialised by ``BEGIN IMMEDIATE``, so no two
claims overlap."""
CLAIM_DUE_SKIP_LOCKED = (
    f"WITH claimable AS MATERIALIZED (SELECT id FROM symfonic_outbox WHERE {_DUE} "
    f"ORDER BY next_attempt_at, created_at, id LIMIT ? FOR UPDATE SKIP LOCKED) "
    f"UPDATE symfonic_outbox AS o SET attempts = o.attempts + 1, next_attempt_at = ? "
    f"FROM claimable WHERE o.id = claimable.id "
    f"RETURNING {', '.join(f'o.{c}' for c in OUTBOX_COLUMNS.split(', '))}")
"""PostgreSQL's (parameters: now, limit, lease end). Concurrent claimers skip the rows another
has locked instead of queueing behind it and then finding them taken, so each claims different
rows, at once. The rows are chosen once, in a materialised CTE: as ``id IN (subquery)`` the
planner may run the locking subquery again per row, and each run, no longer seeing the rows this
statement just pushed into the future, would claim further ones past the limit."""
OUTBOX_DELIVERED = ("UPDATE symfonic_outbox SET delivered_at = ?, failed_at = NULL "
                    "WHERE id = ? AND delivered_at IS NULL")
OUTBOX_RETRY_LATER = (f"UPDATE symfonic_outbox SET next_attempt_at = ?, last_error = ?, "
                      f"attempts = COALESCE(?, attempts) WHERE id = ? AND {PENDING}")
OUTBOX_GIVE_UP = f"UPDATE symfonic_outbox SET failed_at = ?, last_error = ? WHERE id = ? AND {PENDING}"
OUTBOX_RETRY = ("UPDATE symfonic_outbox SET failed_at = NULL, attempts = 0, next_attempt_at = ? "
                "WHERE id = ? AND failed_at IS NOT NULL")
OUTBOX_PRUNE = ("DELETE FROM symfonic_outbox WHERE id IN (SELECT id FROM symfonic_outbox "
                "WHERE delivered_at IS NOT NULL AND delivered_at < ? LIMIT ?)")
OUTBOX_FAILED = (f"SELECT {OUTBOX_COLUMNS} FROM symfonic_outbox WHERE failed_at IS NOT NULL "
                 "ORDER BY failed_at, id LIMIT ?")
OUTBOX_FAILED_IN_SCOPE = (f"SELECT {OUTBOX_COLUMNS} FROM symfonic_outbox WHERE scope = ? AND "
                          "failed_at IS NOT NULL ORDER BY failed_at, id LIMIT ?")


def to_format_style(statement: str) -> str:
    """``?`` placeholders to ``%s`` (psycopg's style); no statement here contains a literal ?."""
    return statement.replace("?", "%s")


def list_statement(status: Listing) -> str:
    return LIST_OUTSTANDING if status == "outstanding" else LIST_INTERRUPTED


def list_parameters(scope: Scope, now: float, limit: int,
                    after: PageAfter | None) -> tuple[Any, ...]:
    """The parameters of :func:`list_statement`'s query, in order (both take the same)."""
    issued, jti = after if after is not None else (float("-inf"), "")
    return (scope.key, now, issued, jti, limit)


def lease_of(lease_until: float) -> float | None:
    """A lease as stored: NULL for one that never lapses (infinity is not portable SQL)."""
    return None if lease_until == FOREVER else lease_until


def pause_row(record: PauseRecord) -> tuple[Any, ...]:
    return (record.jti, record.scope.key, record.run_id, record.root_run_id, record.session_id,
            record.thread_id, record.checkpoint_id, record.name, record.kind, record.tool_call_id,
            record.pin, dump_json(record.payload),
            None if record.answer_schema is None else dump_json(record.answer_schema),
            record.issued_at, record.expires_at, record.status, record.claimed_at,
            record.finished_at, None if record.outcome is None else dump_json(record.outcome),
            _format_of(record), record.lease_expires_at,
            None if record.decision is None else dump_json(record.decision), record.answered_by,
            record.requester, None if record.policy is None else dump_json(record.policy),
            record.assignee, record.assigned_until,
            None if record.on_expiry is None else dump_json(record.on_expiry),
            _timers_of(record), record.next_timer_at,
            None if record.tools is None else dump_json(record.tools))


def fire_parameters(after: PauseRecord, due_at: float, now: float) -> tuple[Any, ...]:
    """The parameters of :data:`FIRE_TIMER`."""
    return (_timers_of(after), after.next_timer_at,
            None if after.policy is None else dump_json(after.policy), _format_of(after),
            after.jti, due_at, now)


def _timers_of(record: PauseRecord) -> str | None:
    return dump_json(list(record.timers)) if record.timers else None


def _format_of(record: PauseRecord) -> int:
    """The oldest ledger format that holds the row, so older readers refuse only what they would
    misread (:data:`~symfonic.services.ledger.LEDGER_FORMAT`)."""
    if record.on_expiry is not None:
        return EXPIRY_FORMAT
    return 1 if record.policy is None else POLICY_FORMAT


def record_of(row: Sequence[Any]) -> PauseRecord:
    """A ledger row as a record.

    Raises:
        StoredFormatError: the row was written by a newer symfonic, or is damaged.
    """
    if not isinstance(row[19], int) or row[19] > LEDGER_FORMAT or row[19] < 1:
        raise StoredFormatError(f"pause {row[0]} is stored in ledger format {row[19]!r}; this "
                                f"symfonic reads 1..{LEDGER_FORMAT}: upgrade symfonic")
    try:
        return _record(row)
    except (ValueError, TypeError) as damaged:
        raise StoredFormatError(f"pause {row[0]}'s ledger row is damaged: {damaged!r}") from damaged


def paused_of(row: Sequence[Any] | None) -> tuple[PauseRecord | None, TurnState | None]:
    """A :data:`GET_PAUSED` row as the record and the turn state (either may be missing)."""
    if row is None:
        return None, None
    return record_of(row), None if row[-1] is None else turn_state_of(row[-1])


def _record(row: Sequence[Any]) -> PauseRecord:
    return PauseRecord(
        jti=row[0], scope=Scope(tenant=row[1]), run_id=row[2], root_run_id=row[3],
        session_id=row[4], thread_id=row[5], checkpoint_id=row[6], name=row[7], kind=row[8],
        tool_call_id=row[9], pin=row[10], payload=load_json(row[11]),
        answer_schema=None if row[12] is None else load_json(row[12]), issued_at=row[13],
        expires_at=row[14], status=row[15], claimed_at=row[16], finished_at=row[17],
        outcome=None if row[18] is None else load_json(row[18]), lease_expires_at=row[20],
        decision=None if row[21] is None else load_json(row[21]), answered_by=row[22],
        requester=row[23], policy=None if row[24] is None else load_json(row[24]),
        assignee=row[25], assigned_until=row[26],
        on_expiry=None if row[27] is None else load_json(row[27]),
        timers=() if row[28] is None else tuple(load_json(row[28])),
        tools=None if row[30] is None else load_json(row[30]))


def notification_rows(notifications: Sequence[Notification]) -> list[tuple[Any, ...]]:
    """Outbox rows for :data:`INSERT_NOTIFICATION`: each due from its creation."""
    return [(n.id, n.topic, n.scope.key, dump_json(n.payload), n.created_at, n.created_at)
            for n in notifications]


def failed_statement(scope: Scope | None, limit: int) -> tuple[str, tuple[Any, ...]]:
    if scope is None:
        return OUTBOX_FAILED, (limit,)
    return OUTBOX_FAILED_IN_SCOPE, (scope.key, limit)


def claimed_of(rows: Sequence[Sequence[Any]]) -> list[OutboxEntry]:
    """The rows a claim returned, oldest first (``RETURNING`` promises no order; the claimed
    rows share their new ``next_attempt_at``, so creation orders them)."""
    return sorted(entries_of(rows), key=lambda e: (e.notification.created_at, e.notification.id))


def entries_of(rows: Sequence[Sequence[Any]]) -> list[OutboxEntry]:
    """Outbox rows as entries, in the rows' order.

    Raises:
        StoredFormatError: a row's payload is not the JSON object this library wrote.
    """
    entries = []
    for row in rows:
        try:
            payload = load_json(row[3])
            notification = Notification(id=row[0], topic=row[1], scope=Scope(tenant=row[2]),
                                        payload=payload, created_at=row[4])
        except (ValueError, TypeError) as damaged:
            raise StoredFormatError(f"outbox entry {row[0]} is damaged: {damaged!r}") from damaged
        if not isinstance(payload, dict):
            raise StoredFormatError(f"outbox entry {row[0]}'s payload is not a JSON object")
        entries.append(OutboxEntry(notification=notification, attempts=row[5],
                                   next_attempt_at=row[6], last_error=row[7],
                                   delivered_at=row[8], failed_at=row[9]))
    return entries


def turn_state_of(text: str) -> TurnState:
    """A stored turn state.

    Raises:
        StoredFormatError: not JSON, damaged, or of a newer format (``TurnStateFormatError``).
    """
    try:
        data = load_json(text)
    except ValueError as damaged:
        raise TurnStateFormatError(f"a stored turn state is not JSON: {damaged}") from damaged
    if not isinstance(data, dict):
        raise TurnStateFormatError("a stored turn state is not a JSON object")
    return TurnState.from_dict(data)


def vote_row(vote: Vote, now: float) -> tuple[Any, ...]:
    return (vote.jti, vote.round, vote.person,
            None if vote.arguments is None else dump_json(vote.arguments), vote.answered_by,
            vote.cast_at, vote.jti, now, now, vote.person)


def vote_of(row: Sequence[Any]) -> Vote:
    """A stored vote as a record.

    Raises:
        StoredFormatError: its arguments are not the JSON this library wrote.
    """
    try:
        arguments = None if row[3] is None else load_json(row[3])
    except ValueError as damaged:
        raise StoredFormatError(f"a vote on pause {row[0]} is damaged: {damaged!r}") from damaged
    return Vote(jti=row[0], round=int(row[1]), person=row[2], arguments=arguments,
                answered_by=row[4], cast_at=float(row[5]))
