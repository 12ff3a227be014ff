"""The SQL of the HTTP transport's ports, shared by both relational adapters: API keys and the
inbox's sign-ins. Their tables are created by the one migration sequence of
:mod:`symfonic.stores.sql` (a database has one schema version), in its placeholder style."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from symfonic.kernel.people import Person
from symfonic.services.conversation import StoredFormatError
from symfonic.transports.http.accounts.keys import KeyRecord
from symfonic.transports.http.accounts.sign_ins import SignedInPerson, SignIn

T = TypeVar("T")
KEY_COLUMNS = "id, tenant, digest, permissions, label, created_at, revoked_at, person"
INSERT_KEY = (f"INSERT INTO symfonic_api_keys ({KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
              "ON CONFLICT (id) DO NOTHING")
GET_KEY = f"SELECT {KEY_COLUMNS} FROM symfonic_api_keys WHERE id = ?"
ALL_KEYS = f"SELECT {KEY_COLUMNS} FROM symfonic_api_keys ORDER BY created_at, id"
TENANT_KEYS = (f"SELECT {KEY_COLUMNS} FROM symfonic_api_keys WHERE tenant = ? "
               "ORDER BY created_at, id")
REVOKE_KEY = "UPDATE symfonic_api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"
KEYS_VERSION = "SELECT COUNT(*) + COUNT(revoked_at) FROM symfonic_api_keys"
"""Adds plus revocations: rows are never deleted, so every change makes it grow."""


def key_row(record: KeyRecord) -> tuple[Any, ...]:
    return (record.id, record.tenant, record.digest, json.dumps(sorted(record.permissions)),
            record.label, record.created_at, record.revoked_at,
            _dumped(record.person))


def _dumped(person: Person | SignedInPerson | None) -> str | None:
    """A person column as stored: JSON, NULL for none."""
    return None if person is None else json.dumps(person.to_dict(), sort_keys=True)


def _loaded(text: str | None, read: Callable[[Any], T], what: str) -> T | None:
    """A person column read back with ``read``.

    Raises:
        StoredFormatError: it is not what this library wrote.
    """
    try:
        return None if text is None else read(json.loads(text))
    except ValueError as damaged:
        raise StoredFormatError(f"{what} is damaged: {damaged}") from damaged


def key_of(row: Sequence[Any]) -> KeyRecord:
    """A stored key row as a record.

    Raises:
        StoredFormatError: its person is not what this library wrote.
    """
    person = _loaded(row[7], Person.from_dict, f"the person of key {row[0]}")
    return KeyRecord(id=row[0], tenant=row[1], digest=row[2],
                     permissions=frozenset(json.loads(row[3])), label=row[4],
                     created_at=float(row[5]), revoked_at=None if row[6] is None else float(row[6]),
                     person=person)


SIGN_IN_COLUMNS = "digest, key_id, csrf, expires_at, person"
INSERT_SIGN_IN = f"INSERT INTO symfonic_sign_ins ({SIGN_IN_COLUMNS}) VALUES (?, ?, ?, ?, ?)"
FIND_SIGN_IN = f"SELECT {SIGN_IN_COLUMNS} FROM symfonic_sign_ins WHERE digest = ? AND expires_at > ?"
END_SIGN_IN = "DELETE FROM symfonic_sign_ins WHERE digest = ?"
PRUNE_SIGN_INS = "DELETE FROM symfonic_sign_ins WHERE expires_at <= ?"
SPEND_LINK = ("INSERT INTO symfonic_inbox_links (id, expires_at) VALUES (?, ?) "
              "ON CONFLICT (id) DO NOTHING RETURNING id")
PRUNE_LINKS = "DELETE FROM symfonic_inbox_links WHERE expires_at <= ?"


def sign_in_row(sign_in: SignIn) -> tuple[Any, ...]:
    return sign_in.digest, sign_in.key_id, sign_in.csrf, sign_in.expires_at, _dumped(sign_in.person)


def sign_in_of(row: Sequence[Any]) -> SignIn:
    """A stored sign-in.

    Raises:
        StoredFormatError: its person is not what this library wrote.
    """
    person = _loaded(row[4], SignedInPerson.from_dict, "a sign-in's person")
    return SignIn(digest=row[0], key_id=row[1], csrf=row[2], expires_at=float(row[3]),
                  person=person)
