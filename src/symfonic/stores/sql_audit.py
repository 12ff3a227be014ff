"""The audit trail in both relational stores (:mod:`symfonic.services.audit`).

A record is appended inside the transaction of the decision it records. Its place in the chain is
read and taken under a lock the tenant's appends share: SQLite's write lock (every write holds it
from ``BEGIN IMMEDIATE``), and in PostgreSQL a transaction-scoped advisory lock per tenant, taken
by ``symfonic_audit``, the function that reads the tenant's last record, hashes the new one and
inserts it on the server, so that a decision still costs one round trip. The lock serialises the
decisions of one tenant only at their end; other tenants never wait for it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from symfonic.services.audit import AuditEvent, AuditRecord, next_record

COLUMNS = "tenant, seq, at_us, jti, kind, person, credential, channel, detail, prev, digest"
LAST = "SELECT seq, digest FROM symfonic_audit WHERE tenant = ? ORDER BY seq DESC LIMIT 1"
INSERT = f"INSERT INTO symfonic_audit ({COLUMNS}) VALUES ({', '.join('?' * 11)})"
RECORDS = (f"SELECT {COLUMNS} FROM symfonic_audit WHERE tenant = ? AND seq > ? "
           "ORDER BY seq LIMIT ?")
TENANTS = "SELECT DISTINCT tenant FROM symfonic_audit ORDER BY tenant"
OF_PAUSE = (f"SELECT {COLUMNS} FROM symfonic_audit WHERE tenant = ? AND jti = ? "
            "ORDER BY seq LIMIT ?")


def append(conn: sqlite3.Connection, tenant: str, jti: str, event: AuditEvent) -> None:
    """SQLite: chain ``event`` after the tenant's last record, in the caller's transaction."""
    last = conn.execute(LAST, (tenant,)).fetchone()
    record = next_record(tenant, jti, event, None if last is None else (int(last[0]), str(last[1])))
    conn.execute(INSERT, row_of(record))


def row_of(record: AuditRecord) -> tuple[Any, ...]:
    return (record.tenant, record.seq, record.at_us, record.jti, record.kind, record.person,
            record.credential, record.channel, record.detail, record.prev, record.digest)


def record_of(row: Sequence[Any]) -> AuditRecord:
    return AuditRecord(tenant=row[0], seq=int(row[1]), at_us=int(row[2]), jti=row[3],
                       kind=row[4], person=row[5], credential=row[6], channel=row[7],
                       detail=row[8], prev=row[9], digest=row[10])


PG_SIGNATURE = "symfonic_audit(TEXT, TEXT, BIGINT, TEXT, TEXT, TEXT, TEXT, TEXT)"
"""``symfonic_audit(tenant, jti, at_us, kind, person, credential, channel, detail)``: appends the
record and returns its ``seq``. Its digest is :func:`symfonic.services.audit.chain_digest` of
:meth:`~symfonic.services.audit.AuditRecord.fields`, written out in PL/pgSQL."""
PG_BODY = """
DECLARE
    place BIGINT;
    before TEXT;
    material TEXT := '';
    part TEXT;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('symfonic_audit:' || $1, 0));
    SELECT seq, digest INTO place, before FROM symfonic_audit WHERE tenant = $1
        ORDER BY seq DESC LIMIT 1;
    place := COALESCE(place, 0) + 1;
    before := COALESCE(before, '');
    FOREACH part IN ARRAY ARRAY[before, place::text, $1, $3::text, $2, $4, COALESCE($5, ''),
                                COALESCE($6, ''), $7, $8] LOOP
        material := material || length(part)::text || ':' || part;
    END LOOP;
    INSERT INTO symfonic_audit (tenant, seq, at_us, jti, kind, person, credential, channel,
                                detail, prev, digest)
        VALUES ($1, place, $3, $2, $4, $5, $6, $7, $8, before,
                encode(sha256(convert_to(material, 'UTF8')), 'hex'));
    RETURN place;
END
"""
PG_CALL = "symfonic_audit({tenant}, {jti}, ?, ?, ?, ?, ?, ?)"
"""A call inside a statement, the tenant and pause taken from its rows; the six parameters are
:func:`call_parameters`'."""


def pg_call(tenant: str = "scope", jti: str = "jti") -> str:
    return PG_CALL.format(tenant=tenant, jti=jti)


def call_parameters(event: AuditEvent) -> tuple[Any, ...]:
    """The parameters of :func:`pg_call` (the tenant and pause come from the statement's rows)."""
    return (event.at_us, event.kind, event.actor.person, event.actor.credential,
            event.actor.channel, event.detail_text())
