"""The schema of both relational stores: its migrations, in order, and the plan that applies them.

Each adapter applies :func:`migration_plan` under its own lock (SQLite's write lock, PostgreSQL's
advisory lock), so several processes opening one database at once migrate it once. Statements use
``?`` placeholders, as in :mod:`symfonic.stores.sql`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from symfonic.services.conversation import StoredFormatError


class PostgresOnly(str):
    """A migration statement only PostgreSQL runs: a storage setting SQLite has no words for."""

    __slots__ = ()


MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE symfonic_messages (
            scope TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL,
            body TEXT NOT NULL, PRIMARY KEY (scope, session_id, seq))""",
        """CREATE TABLE symfonic_checkpoints (
            checkpoint_id TEXT PRIMARY KEY, scope TEXT NOT NULL, session_id TEXT NOT NULL,
            state TEXT NOT NULL)""",
        """CREATE TABLE symfonic_pauses (
            jti TEXT PRIMARY KEY, scope TEXT NOT NULL, run_id TEXT NOT NULL,
            root_run_id TEXT NOT NULL, session_id TEXT NOT NULL, thread_id TEXT NOT NULL,
            checkpoint_id TEXT NOT NULL REFERENCES symfonic_checkpoints (checkpoint_id),
            name TEXT NOT NULL, kind TEXT NOT NULL, tool_call_id TEXT NOT NULL, pin TEXT NOT NULL,
            payload TEXT NOT NULL, answer_schema TEXT, issued_at DOUBLE PRECISION NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL, status TEXT NOT NULL,
            claimed_at DOUBLE PRECISION, finished_at DOUBLE PRECISION, outcome TEXT,
            format INTEGER NOT NULL)""",
        """CREATE INDEX symfonic_pauses_by_scope
            ON symfonic_pauses (scope, status, issued_at)""",
        """CREATE INDEX symfonic_pauses_by_session
            ON symfonic_pauses (scope, session_id, status)""",
    ),
    (
        "ALTER TABLE symfonic_pauses ADD COLUMN lease_expires_at DOUBLE PRECISION",
        # No index on the lease: it would be rewritten at every claim and outcome (SQLite's
        # bytes per pause + resume grew by a quarter), and only sweeps scan for lapsed leases,
        # as they already do for expired pauses. Listing is per scope, on its index.
        "ALTER TABLE symfonic_pauses ADD COLUMN decision TEXT",
    ),
    (
        """CREATE TABLE symfonic_outbox (
            id TEXT PRIMARY KEY, topic TEXT NOT NULL, scope TEXT NOT NULL, payload TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at DOUBLE PRECISION NOT NULL, delivered_at DOUBLE PRECISION,
            failed_at DOUBLE PRECISION, last_error TEXT)""",
        """CREATE INDEX symfonic_outbox_due ON symfonic_outbox (next_attempt_at, created_at)
            WHERE delivered_at IS NULL AND failed_at IS NULL""",
        """CREATE INDEX symfonic_outbox_failed ON symfonic_outbox (scope, failed_at)
            WHERE failed_at IS NOT NULL""",
    ),
    (
        """CREATE TABLE symfonic_api_keys (
            id TEXT PRIMARY KEY, tenant TEXT NOT NULL, digest TEXT NOT NULL,
            permissions TEXT NOT NULL, label TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
            revoked_at DOUBLE PRECISION)""",
    ),
    (
        "ALTER TABLE symfonic_pauses ADD COLUMN answered_by TEXT",
        # Partial: a pause's issue writes no entry (claimed_at is NULL until it is answered), so
        # only a claim pays for the index the inbox's recent decisions are read from.
        """CREATE INDEX symfonic_pauses_answered ON symfonic_pauses (scope, claimed_at)
            WHERE claimed_at IS NOT NULL""",
        """CREATE TABLE symfonic_sign_ins (
            digest TEXT PRIMARY KEY, key_id TEXT NOT NULL, csrf TEXT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX symfonic_sign_ins_expiry ON symfonic_sign_ins (expires_at)",
    ),
    (
        """CREATE INDEX symfonic_outbox_delivered ON symfonic_outbox (delivered_at)
            WHERE delivered_at IS NOT NULL""",
    ),
    (
        """CREATE TABLE symfonic_a2a_tasks (
            id TEXT PRIMARY KEY, scope TEXT NOT NULL, agent TEXT NOT NULL,
            context_id TEXT NOT NULL, state TEXT NOT NULL, pause_id TEXT, result TEXT,
            created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL)""",
        """CREATE INDEX symfonic_a2a_tasks_by_scope
            ON symfonic_a2a_tasks (scope, agent, created_at, id)""",
    ),
    (
        """CREATE TABLE symfonic_a2a_push_configs (
            task_id TEXT NOT NULL, id TEXT NOT NULL, scope TEXT NOT NULL,
            context_id TEXT NOT NULL, url TEXT NOT NULL, token TEXT, authentication TEXT,
            created_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (task_id, id))""",
        # Every pause looks its session up here, in its own transaction (an empty index read
        # when nobody listens); version 10 moved that lookup to the session listeners.
        """CREATE INDEX symfonic_a2a_push_configs_by_context
            ON symfonic_a2a_push_configs (scope, context_id)""",
    ),
    (
        # A page starts at its cursor (issued_at, jti) in the index, however many came before.
        "DROP INDEX symfonic_pauses_by_scope",
        """CREATE INDEX symfonic_pauses_by_scope
            ON symfonic_pauses (scope, status, issued_at, jti)""",
        # Partial: a sweep reads only what it may change; a pause adds an entry to each.
        """CREATE INDEX symfonic_pauses_expiring ON symfonic_pauses (expires_at)
            WHERE status = 'outstanding'""",
        """CREATE INDEX symfonic_pauses_leased ON symfonic_pauses (lease_expires_at)
            WHERE status = 'claimed'""",
    ),
    (
        # A pause reads its session's listeners on the primary key, in its own transaction.
        """CREATE TABLE symfonic_session_listeners (
            scope TEXT NOT NULL, session_id TEXT NOT NULL, topic TEXT NOT NULL,
            listener TEXT NOT NULL, PRIMARY KEY (scope, session_id, topic, listener))""",
        """CREATE INDEX symfonic_session_listeners_by_listener
            ON symfonic_session_listeners (topic, listener)""",
        # The A2A tasks that listened through version 9 (a live task with a push config) go on
        # listening: what the pause's announcement read from the A2A tables until now.
        """INSERT INTO symfonic_session_listeners (scope, session_id, topic, listener)
            SELECT DISTINCT p.scope, p.context_id, 'a2a.task.status', p.task_id
            FROM symfonic_a2a_push_configs p JOIN symfonic_a2a_tasks t ON t.id = p.task_id
            WHERE t.state NOT IN ('completed', 'failed', 'canceled')""",
    ),
    (
        "ALTER TABLE symfonic_api_keys ADD COLUMN person TEXT",
    ),
    (
        "ALTER TABLE symfonic_pauses ADD COLUMN requester TEXT",
        "ALTER TABLE symfonic_pauses ADD COLUMN policy TEXT",
    ),
    (
        """CREATE TABLE symfonic_pause_votes (
            jti TEXT NOT NULL REFERENCES symfonic_pauses (jti), round INTEGER NOT NULL,
            person TEXT NOT NULL, arguments TEXT, answered_by TEXT,
            cast_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (jti, round, person))""",
        # One edit opens a round: a second edit racing for the same round is refused here.
        """CREATE UNIQUE INDEX symfonic_pause_votes_edits ON symfonic_pause_votes (jti, round)
            WHERE arguments IS NOT NULL""",
    ),
    (
        "ALTER TABLE symfonic_pauses ADD COLUMN assignee TEXT",
        "ALTER TABLE symfonic_pauses ADD COLUMN assigned_until DOUBLE PRECISION",
        """CREATE TABLE symfonic_audit (
            tenant TEXT NOT NULL, seq BIGINT NOT NULL, at_us BIGINT NOT NULL, jti TEXT NOT NULL,
            kind TEXT NOT NULL, person TEXT, credential TEXT, channel TEXT NOT NULL,
            detail TEXT NOT NULL, prev TEXT NOT NULL, digest TEXT NOT NULL,
            PRIMARY KEY (tenant, seq))""",
    ),
    (
        "ALTER TABLE symfonic_sign_ins ADD COLUMN person TEXT",
    ),
    (
        "ALTER TABLE symfonic_pauses ADD COLUMN on_expiry TEXT",
        # Partial: only pauses that decide themselves are read by the expiry decisions' poll.
        """CREATE INDEX symfonic_pauses_deciding ON symfonic_pauses (expires_at)
            WHERE status = 'outstanding' AND on_expiry IS NOT NULL""",
    ),
    (
        "ALTER TABLE symfonic_pauses ADD COLUMN timers TEXT",
        "ALTER TABLE symfonic_pauses ADD COLUMN next_timer_at DOUBLE PRECISION",
        # Partial: the timers' poll reads only the pauses that still have a step to take.
        """CREATE INDEX symfonic_pauses_timed ON symfonic_pauses (next_timer_at)
            WHERE status = 'outstanding' AND next_timer_at IS NOT NULL""",
    ),
    (
        # A pause's page reads its own records; an audit append writes one more entry.
        "CREATE INDEX symfonic_audit_by_pause ON symfonic_audit (tenant, jti, seq)",
    ),
    (
        # The inbox links sent by email that were used: each signs in once.
        """CREATE TABLE symfonic_inbox_links (
            id TEXT PRIMARY KEY, expires_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX symfonic_inbox_links_expiry ON symfonic_inbox_links (expires_at)",
    ),
    (
        "ALTER TABLE symfonic_pauses ADD COLUMN tools TEXT",
    ),
    (
        "ALTER TABLE symfonic_messages ADD COLUMN span INTEGER",
    ),
    (
        # Only the waiting pauses are listed by tenant, and only in-flight ones by lapsed lease:
        # a partial index per listing, keyed without the status, so a claim moves one entry out
        # of the first into the second and an outcome drops it, instead of moving an entry
        # within one index that held every pause at every status.
        "DROP INDEX symfonic_pauses_by_scope",
        """CREATE INDEX symfonic_pauses_waiting ON symfonic_pauses (scope, issued_at, jti)
            WHERE status = 'outstanding'""",
        """CREATE INDEX symfonic_pauses_in_flight ON symfonic_pauses (scope, issued_at, jti)
            WHERE status IN ('claimed', 'interrupted')""",
        # A session is asked only whether it waits, and which pause it waits on.
        "DROP INDEX symfonic_pauses_by_session",
        """CREATE INDEX symfonic_pauses_waiting_by_session
            ON symfonic_pauses (scope, session_id, issued_at, jti) WHERE status = 'outstanding'""",
    ),
    (
        # Segments are stored as written, out of line but not compressed: a host that has not
        # read a session reads it whole, and decompressing was half the time of fetching it.
        PostgresOnly("ALTER TABLE symfonic_messages ALTER COLUMN body SET STORAGE EXTERNAL"),
    ),
)
"""Version N of the schema is reached by applying ``MIGRATIONS[N-1]``. Version 1: first tables.
Version 2: claims hold a lease and the applied decision (interrupted turns, recovery). Version 3:
the outbox, notifications written with the pause they announce (partial indexes keep the sender's
poll reading only pending rows, however many were delivered). Version 4: API keys (digests only),
shared by every server on the database. Version 5: who answered a pause, the recent decisions'
index, and the inbox's sign-ins, shared by every server too. Version 6: delivered outbox entries
indexed by delivery time, so pruning old ones reads only those. Version 7: A2A tasks (the task id
a client holds, its tenant, agent, session and pause; :mod:`symfonic.transports.a2a.tasks`).
Version 8: A2A push configs (where a task's changes of state are POSTed), indexed by session so
that a pause found its listeners in its own transaction. Version 9: listings seek their cursor,
and a sweep's batches find their rows on indexes of the outstanding and claimed pauses alone.
Version 10: session listeners (:mod:`symfonic.services.listeners`), so that the core announces a
pause to whoever follows its session without reading a transport's tables; the A2A tasks that
listened are copied in. Version 11: an API key may act as a person (JSON: id, name, email,
groups); NULL for a service key, as every key was before. Version 12: who started a paused turn
(a person's id) and who may answer it (JSON: audience, quorum, whether the requester may); NULL
for a pause anyone of its tenant may answer, as every pause was before. Version 13: the votes of
pauses that need several approvals (:mod:`symfonic.services.votes`). Version 14: who took a pause
for review and until when; the audit trail (:mod:`symfonic.services.audit`), one hash chain per
tenant, its primary key the order the chain is read in. Version 15: an inbox sign-in may act as a
person an OpenID provider vouched for (JSON: tenant, person, permissions, issuer) instead of an
API key; NULL for a key's sign-in, as every sign-in was before. Version 16: the answer a pause
gives itself once it expired unanswered (JSON ``{"answer": ...}``; NULL: it just expires), and
the index the expiry decisions are found on. Version 17: the reminders and escalation still to
come (JSON), and when the next is due, indexed for the timers' poll. Version 18: the audit
trail indexed by pause, for a pause's own history. Version 19: the inbox links an email carried
that were used (:mod:`symfonic.transports.email.links`), kept until they expire so that each signs
in once. Version 20: the parameter schemas of a paused round's tools (JSON), the part of a pause's
contract the row did not hold yet; NULL for a pause stored before, judged by its pin. Version 21:
a transcript row holds an appended segment, ``span`` messages from ``seq`` as a JSON array
(:mod:`symfonic.stores.sql_transcripts`); NULL for the rows stored before, one message each,
read as they are. Version 22: the ledger's listings on partial indexes keyed without the status
(the waiting pauses by tenant and by session, the in-flight ones by tenant), so that a change of
status moves no entry within an index. Bytes a pause + resume writes:
``python -m bench.sqlite_pages``. Version 23 (PostgreSQL only): transcript segments written from
then on are stored uncompressed (``STORAGE EXTERNAL``); those written before stay compressed and
read as they are. ``python -m bench.transcript_rows`` measures both.

The A2A, API-key and sign-in tables belong to their transports' ports, but are created here: a
database has one schema version, and every process that opens it migrates it, whatever it serves."""

SCHEMA_TABLE = "CREATE TABLE IF NOT EXISTS symfonic_schema (version INTEGER NOT NULL)"
SCHEMA_VERSION = "SELECT version FROM symfonic_schema"
SCHEMA_INSERT = "INSERT INTO symfonic_schema (version) VALUES (?)"
SCHEMA_UPDATE = "UPDATE symfonic_schema SET version = ?"


def migration_plan(row: Sequence[Any] | None, *,
                   postgres: bool) -> list[tuple[str, tuple[int, ...]]]:
    """The statements (with their parameters) that bring a schema at ``row`` (its version row, or
    None) to the latest, ending with the one that records the new version; none when current.
    ``postgres`` says whether the :class:`PostgresOnly` statements are among them.

    Raises:
        StoredFormatError: the database is newer than this symfonic: refuse rather than misread it.
    """
    version = 0 if row is None else int(row[0])
    if version > len(MIGRATIONS):
        raise StoredFormatError(f"the database schema is version {version}; this symfonic knows "
                         f"{len(MIGRATIONS)}: upgrade symfonic")
    if version == len(MIGRATIONS) and row is not None:
        return []
    pending = [(statement, ()) for statements in MIGRATIONS[version:] for statement in statements
               if postgres or not isinstance(statement, PostgresOnly)]
    return [*pending, (SCHEMA_INSERT if row is None else SCHEMA_UPDATE, (len(MIGRATIONS),))]
