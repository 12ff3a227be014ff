"""API keys: which tenant a caller acts for, and what it may do there.

A key is ``sfk_<id>_<secret>``. Only its SHA-256 digest is kept, in the host's store (table
``symfonic_api_keys``), next to the tenant it maps to and its permissions, so a leaked database
grants nothing. A fast hash is enough here, unlike for passwords: the secret is 256 random bits,
which no dictionary or brute force reaches, and a slow KDF would only cost every request. The
``id`` part finds the record without scanning; the digest is compared in constant time.

Every server on one database sees the same keys: :class:`ApiKeys` keeps an in-memory view of the
store and, while the app runs, a background task polls the store's key version every
:data:`REFRESH_SECONDS` and reloads the view when it moved, so a key revoked by another process
(``symfonic keys revoke``) is refused within a second. A request with a known key never waits on
the store. One with a well-formed key the view does not hold reloads it first
(:meth:`ApiKeys.authenticate_fresh`), so a key just added by another process (``symfonic keys
add``, another server of ``--processes``) works on its first request; such reloads are at least
:data:`UNKNOWN_RELOAD_SECONDS` apart, so made-up keys cannot turn into load on the database.

The keys file of earlier versions (``.symfonic/api_keys.json``) is imported into the store once,
when the store holds no keys yet (:meth:`ApiKeys.load` names it).

A key maps to exactly one scope. Nothing a request carries (a path, a body, a token) can move it
to another tenant: the routes read the tenant from the key and, for a pause, check that the token
was minted in that same tenant before anything else happens.

Permissions (a key without the one a route needs gets 403, a missing or unknown key 401):

- ``runs``: start runs;
- ``pauses:read``: list pauses and read tickets (and open the inbox);
- ``pauses:answer``: resume and revoke pauses, take them for review and give them back.
- ``audit:read``: read the tenant's audit trail (``GET /v1/audit``). Keys made before it existed
  do not hold it: grant it to a new key.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import json
import logging
import math
import secrets
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from symfonic.kernel.people import Person
from symfonic.kernel.scope import Scope
from symfonic.platform.tickets import Answerer
from symfonic.transports.http.accounts.keys import KeyRecord, KeyStore

__all__ = ["DEFAULT_KEYS_FILE", "DEVELOPMENT_LABEL", "KEYS_FILE_VARIABLE", "PERMISSIONS",
           "REFRESH_SECONDS", "UNKNOWN_RELOAD_SECONDS", "ApiKey", "ApiKeys", "Permission",
           "import_keys_file", "new_key", "read_keys_file", "readable_label"]

Permission = Literal["runs", "pauses:read", "pauses:answer", "audit:read"]
PERMISSIONS: tuple[Permission, ...] = ("runs", "pauses:read", "pauses:answer", "audit:read")
KEYS_FILE_VARIABLE = "SYMFONIC_API_KEYS"
DEFAULT_KEYS_FILE = Path(".symfonic/api_keys.json")
"""The keys file of earlier versions: imported into an empty store, never written."""
KEYS_FORMAT = 1
"""Version of the keys file. 1: ``{"format": 1, "keys": [record, ...]}``."""
REFRESH_SECONDS = 0.5
"""How often a running app looks for keys added or revoked elsewhere."""
UNKNOWN_RELOAD_SECONDS = 0.05
"""The least time between two reloads of the view for keys it does not hold: a flood of
made-up keys costs at most 20 version queries a second (each request waiting for the next
reload), a new key one."""
DEVELOPMENT_LABEL = "development"
"""The label ``symfonic serve`` gives the key it prints, followed by the URL it serves: the URL
tells apart the development keys of servers sharing a database (each replaces only its own)."""
_PREFIX = "sfk"
log = logging.getLogger(__name__)

ApiKey = KeyRecord
"""One key as stored (its digest, tenant, permissions): never the key itself."""


def new_key(tenant: str, *, permissions: Iterable[str] = PERMISSIONS, label: str = "",
            now: float | None = None, person: Person | None = None) -> tuple[str, KeyRecord]:
    """A fresh key for ``tenant`` and its record: the key is shown once, only the record kept.
    With ``person``, the key acts as that person; without, it is a service key.

    Raises:
        ValueError: an invalid tenant or an unknown permission.
    """
    scope = Scope(tenant=tenant)  # validates the tenant
    granted = frozenset(permissions)
    unknown = granted - set(PERMISSIONS)
    if unknown:
        raise ValueError(f"unknown permissions {sorted(unknown)}; use {list(PERMISSIONS)}")
    key_id = secrets.token_hex(6)
    key = f"{_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
    return key, KeyRecord(id=key_id, digest=_digest(key), tenant=scope.tenant, permissions=granted,
                          label=label, created_at=time.time() if now is None else now,
                          person=person)


def read_keys_file(path: str | Path) -> list[KeyRecord]:
    """The records of an earlier version's keys file; none when it does not exist.

    Raises:
        ValueError: the file is of a newer format than this symfonic knows, or damaged.
    """
    path = Path(path)
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        version = data.get("format")
        records = data["keys"]
        if version != KEYS_FORMAT:
            raise ValueError(f"{path} has keys format {version!r}; this symfonic reads {KEYS_FORMAT}")
        return [_from_json(r) for r in records]
    except (KeyError, AttributeError, TypeError) as damaged:
        raise ValueError(f"{path} is not a symfonic keys file: {damaged}") from None
    except json.JSONDecodeError as damaged:
        raise ValueError(f"{path} is not a symfonic keys file: {damaged}") from None


async def import_keys_file(store: KeyStore, path: str | Path) -> int:
    """Copy the keys of ``path`` into ``store`` when it holds no keys yet; how many were copied."""
    records = read_keys_file(path)
    if not records or await store.keys_version() != 0:
        return 0
    return sum([await store.add_key(record) for record in records])


class ApiKeys:
    """The keys a service accepts: a view of the store's, refreshed while the app runs.

    Before :meth:`bind` (which ``create_app`` calls at startup), the view holds what was given or
    issued here; keys issued before binding are written to the store when it binds, and keys
    issued after are written at the next refresh.
    """

    def __init__(self, keys: Iterable[KeyRecord] = (), *, path: Path | None = None) -> None:
        self._keys = {key.id: key for key in keys}
        self._pending: dict[str, KeyRecord] = {}
        self._replacing: set[tuple[str, str]] = set()
        self._until_stopped: set[str] = set()
        self._store: KeyStore | None = None
        self._version = -1
        self._refreshing = asyncio.Lock()
        self._reloaded_at = -math.inf
        """When the latest reload asked the store for its version (the monotonic clock)."""
        self._unknown_reload_at = -math.inf
        """When the latest reload for an unknown key began."""
        self.path = path
        """An earlier version's keys file, imported into the store when it has no keys."""

    @classmethod
    def load(cls, path: str | Path) -> ApiKeys:
        """The keys of an earlier version's keys file, to import into the store once it binds
        (only when the store has no keys yet).

        Raises:
            ValueError: the file is of a newer format than this symfonic knows, or damaged.
        """
        return cls(read_keys_file(path), path=Path(path))

    @property
    def store(self) -> KeyStore | None:
        return self._store

    async def bind(self, store: KeyStore) -> None:
        """Make ``store`` the source: import the keys file if the store has none, write the keys
        issued here so far, and load the store's keys."""
        self._store = store
        if self.path is not None:
            imported = await import_keys_file(store, self.path)
            if imported:
                log.info("imported %d API keys from %s into the store", imported, self.path)
        await self.refresh()

    async def refresh(self) -> bool:
        """Write the keys issued here, then reload the view if the store's keys changed; whether
        the view was reloaded."""
        store = self._store
        if store is None:
            return False
        async with self._refreshing:
            return await self._refresh(store)

    async def _refresh(self, store: KeyStore) -> bool:
        for tenant, label in list(self._replacing):
            for old in await store.keys(tenant):
                if old.label == label and old.revoked_at is None and old.id not in self._pending:
                    await store.revoke_key(old.id, time.time())
            self._replacing.discard((tenant, label))
        for key_id, record in list(self._pending.items()):
            await store.add_key(record)
            self._pending.pop(key_id, None)
        self._reloaded_at = time.monotonic()
        version = await store.keys_version()
        if version == self._version:
            return False
        records = await store.keys()
        self._keys = {r.id: r for r in records} | self._pending
        self._version = version
        return True

    async def keep_fresh(self, every: float = REFRESH_SECONDS) -> None:
        """Refresh every ``every`` seconds until cancelled; a store that fails is tried again at
        the next tick, the view meanwhile staying as it was."""
        while True:
            await asyncio.sleep(every)
            try:
                await self.refresh()
            except Exception:  # the store is down: keep serving the last view
                log.warning("could not refresh the API keys from the store", exc_info=True)

    def issue(self, tenant: str, *, permissions: Iterable[Permission] = PERMISSIONS,
              label: str = "", replace: bool = False, until_stopped: bool = False,
              person: Person | None = None) -> str:
        """Make a key for ``tenant`` and return it: the only time it is ever visible.

        Accepted here at once; written to the store when it binds, or at the next refresh. With
        ``replace``, the other keys of ``tenant`` with this ``label`` are revoked then (how
        ``symfonic serve`` renews its development key). With ``until_stopped``, the key is
        revoked when the app stops (:meth:`close`). With ``person``, the key acts as them.
        """
        key, record = new_key(tenant, permissions=permissions, label=label, person=person)
        if until_stopped:
            self._until_stopped.add(record.id)
        if replace:
            self._replacing.add((record.tenant, label))
            for old in list(self._keys.values()):
                if old.tenant == record.tenant and old.label == label:
                    del self._keys[old.id]
                    self._pending.pop(old.id, None)
        self._keys[record.id] = self._pending[record.id] = record
        return key

    async def add(self, tenant: str, *, permissions: Iterable[Permission] = PERMISSIONS,
                  label: str = "", person: Person | None = None) -> str:
        """:meth:`issue`, written to the bound store before returning."""
        key = self.issue(tenant, permissions=permissions, label=label, person=person)
        await self.refresh()
        return key

    async def revoke(self, key_id: str, now: float | None = None) -> bool:
        """Stop accepting ``key_id``, here at once and, when bound, in the store."""
        record = self._keys.get(key_id)
        revoked = record is not None and record.revoked_at is None
        when = time.time() if now is None else now
        if record is not None and revoked:
            self._keys[key_id] = dataclasses.replace(record, revoked_at=when)
        self._pending.pop(key_id, None)
        if self._store is not None:
            revoked = await self._store.revoke_key(key_id, when) or revoked
            await self.refresh()
        return revoked

    async def close(self) -> None:
        """Revoke the keys issued ``until_stopped`` (the app's shutdown calls this)."""
        for key_id in list(self._until_stopped):
            try:
                await self.revoke(key_id)
            except Exception:  # the store is down: the key stays until replaced
                log.warning("could not revoke API key %s", key_id, exc_info=True)
            self._until_stopped.discard(key_id)

    def authenticate(self, presented: str | None) -> ApiKey | None:
        """The record of ``presented``, or None when it is no key of ours (or a revoked one)."""
        key_id = _key_id_of(presented)
        record = None if key_id is None else self._keys.get(key_id)
        digest = _digest(presented) if presented else ""
        if record is None or not hmac.compare_digest(digest, record.digest):
            return None
        return None if record.revoked_at is not None else record

    async def authenticate_fresh(self, presented: str | None) -> ApiKey | None:
        """:meth:`authenticate`, reloading the view first when ``presented`` is well formed but
        unknown here: a key added by another process since the last refresh.

        An unknown key is refused only after a reload that began after it arrived (the
        periodic one counts), so a key added just before it was used is found. Concurrent
        requests share one reload, and reloads for unknown keys are at least
        :data:`UNKNOWN_RELOAD_SECONDS` apart: under a flood of made-up keys a request waits for
        the next one instead of asking the store itself. A store that fails is logged and the
        key refused, the view staying as it was.
        """
        found = self.authenticate(presented)
        store = self._store
        key_id = _key_id_of(presented)
        if found is not None or store is None or key_id is None or key_id in self._keys:
            return found  # known (a wrong secret, or revoked), or not a key at all: no reload
        asked = time.monotonic()
        async with self._refreshing:
            if self._reloaded_at < asked:  # no reload began since this key arrived
                wait = self._unknown_reload_at + UNKNOWN_RELOAD_SECONDS - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                self._unknown_reload_at = time.monotonic()
                try:
                    await self._refresh(store)
                except Exception:
                    log.warning("could not reload the API keys for an unknown key",
                                exc_info=True)
                    return None
        return self.authenticate(presented)

    def get(self, key_id: str) -> ApiKey | None:
        """The live (not revoked) record of ``key_id``: an inbox session lasts while it does."""
        record = self._keys.get(key_id)
        return None if record is None or record.revoked_at is not None else record

    def person(self, tenant: str, person_id: str) -> Person | None:
        """The person ``person_id`` as a live key of ``tenant`` describes them (their groups
        included); None when no such key is known here. How a pause is given to someone else:
        the server knows them from their key, never from what the caller says of them."""
        return next((p for p in self.people(tenant) if p.id == person_id), None)

    def people(self, tenant: str) -> list[Person]:
        """Every person a live key of ``tenant`` acts as, once each (the first key's description
        of them): who an audience's groups resolve to when the pause is emailed."""
        found: dict[str, Person] = {}
        for record in self._keys.values():
            if record.tenant == tenant and record.revoked_at is None and record.person is not None:
                found.setdefault(record.person.id, record.person)
        return list(found.values())

    def label_of(self, key_id: str, tenant: str) -> str | None:
        """How a person reads ``key_id`` (see :func:`readable_label`), revoked keys included: a
        decision outlives the key that made it. None for a key unknown here or of another tenant,
        whose label is not this tenant's to read."""
        record = self._keys.get(key_id)
        return readable_label(record) if record is not None and record.tenant == tenant else None

    def __iter__(self) -> Iterator[ApiKey]:
        return iter(list(self._keys.values()))

    def __len__(self) -> int:
        return len(self._keys)


def _key_id_of(presented: str | None) -> str | None:
    """The id part of ``presented`` when it has the key format (``sfk_<id>_<secret>``, at most
    256 characters); None for anything else."""
    if not presented or len(presented) > 256:
        return None
    prefix, _, rest = presented.partition("_")
    key_id, _, secret = rest.partition("_")
    return key_id if prefix == _PREFIX and key_id and secret else None


def answerer_of(record: KeyRecord) -> Answerer:
    """Who a key answers as: its person, or a service for a key that is nobody's."""
    return record.person if record.person is not None else "service"


def readable_label(record: KeyRecord) -> str:
    """The key's name as a person reads it: the person it acts as, else its label, else
    ``key <id>``.

    The label of a ``symfonic serve`` development key is ``development <URL>`` because the URL is
    what keeps the keys of two servers apart, but to the person who answered with it, it is just
    "development key"; the id and the raw label stay on the record for an audit.
    """
    if record.person is not None:
        return record.person.display_name
    label = record.label.strip()
    if label == DEVELOPMENT_LABEL or label.startswith(f"{DEVELOPMENT_LABEL} http"):
        return "development key"
    return label or f"key {record.id}"


def _from_json(data: dict[str, Any]) -> KeyRecord:
    return KeyRecord(id=str(data["id"]), digest=str(data["digest"]), tenant=str(data["tenant"]),
                     permissions=frozenset(data.get("permissions", PERMISSIONS)),
                     label=str(data.get("label", "")), created_at=float(data.get("created_at", 0)))


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
