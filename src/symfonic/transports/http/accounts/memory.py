"""API keys and inbox sign-ins in memory (the HTTP transport's ports), for tests and ``memory://``."""

from __future__ import annotations

import dataclasses

from symfonic.transports.http.accounts.keys import KeyRecord
from symfonic.transports.http.accounts.sign_ins import SignIn


class MemoryKeys:
    """API keys by id, in this process only."""

    def __init__(self) -> None:
        self._keys: dict[str, KeyRecord] = {}

    async def add_key(self, record: KeyRecord) -> bool:
        if record.id in self._keys:
            return False
        self._keys[record.id] = record
        return True

    async def get_key(self, key_id: str) -> KeyRecord | None:
        return self._keys.get(key_id)

    async def keys(self, tenant: str | None = None) -> list[KeyRecord]:
        chosen = [k for k in self._keys.values() if tenant is None or k.tenant == tenant]
        return sorted(chosen, key=lambda k: (k.created_at, k.id))

    async def revoke_key(self, key_id: str, now: float) -> bool:
        record = self._keys.get(key_id)
        if record is None or record.revoked_at is not None:
            return False
        self._keys[key_id] = dataclasses.replace(record, revoked_at=now)
        return True

    async def keys_version(self) -> int:
        return len(self._keys) + sum(k.revoked_at is not None for k in self._keys.values())


class MemorySignIns:
    """Inbox sign-ins by their cookie's digest, until they expire, in this process only."""

    def __init__(self) -> None:
        self._sign_ins: dict[str, SignIn] = {}
        self._spent: dict[str, float] = {}

    async def open_sign_in(self, sign_in: SignIn) -> None:
        self._sign_ins[sign_in.digest] = sign_in

    async def find_sign_in(self, digest: str, now: float) -> SignIn | None:
        found = self._sign_ins.get(digest)
        return found if found is not None and found.expires_at > now else None

    async def end_sign_in(self, digest: str) -> bool:
        return self._sign_ins.pop(digest, None) is not None

    async def prune_sign_ins(self, now: float) -> int:
        expired = [d for d, s in self._sign_ins.items() if s.expires_at <= now]
        for digest in expired:
            del self._sign_ins[digest]
        self._spent = {id: until for id, until in self._spent.items() if until > now}
        return len(expired)

    async def spend_link(self, id: str, expires_at: float) -> bool:
        if id in self._spent:
            return False
        self._spent[id] = expires_at
        return True
