"""API keys and inbox sign-ins in memory (the HTTP transport's ports)."""

from __future__ import annotations

import dataclasses

from symfonic.services.keys import KeyRecord
from symfonic.services.sign_ins import SignIn
from symfonic.stores.memory.database import MemoryPort


class MemoryKeys(MemoryPort):
    """API keys by id."""

    async def add_key(self, record: KeyRecord) -> bool:
        if record.id in self._db.keys:
            return False
        self._db.keys[record.id] = record
        return True

    async def get_key(self, key_id: str) -> KeyRecord | None:
        return self._db.keys.get(key_id)

    async def keys(self, tenant: str | None = None) -> list[KeyRecord]:
        chosen = [k for k in self._db.keys.values() if tenant is None or k.tenant == tenant]
        return sorted(chosen, key=lambda k: (k.created_at, k.id))

    async def revoke_key(self, key_id: str, now: float) -> bool:
        record = self._db.keys.get(key_id)
        if record is None or record.revoked_at is not None:
            return False
        self._db.keys[key_id] = dataclasses.replace(record, revoked_at=now)
        return True

    async def keys_version(self) -> int:
        return len(self._db.keys) + sum(k.revoked_at is not None for k in self._db.keys.values())


class MemorySignIns(MemoryPort):
    """Inbox sign-ins by their cookie's digest, until they expire."""

    async def open_sign_in(self, sign_in: SignIn) -> None:
        self._db.sign_ins[sign_in.digest] = sign_in

    async def find_sign_in(self, digest: str, now: float) -> SignIn | None:
        found = self._db.sign_ins.get(digest)
        return found if found is not None and found.expires_at > now else None

    async def end_sign_in(self, digest: str) -> bool:
        return self._db.sign_ins.pop(digest, None) is not None

    async def prune_sign_ins(self, now: float) -> int:
        expired = [d for d, s in self._db.sign_ins.items() if s.expires_at <= now]
        for digest in expired:
            del self._db.sign_ins[digest]
        return len(expired)
