"""API keys and inbox sign-ins in SQLite, over the store's shared database (the HTTP transport's
ports)."""

from __future__ import annotations

import sqlite3

from symfonic.stores.sqlite.database import SQLitePort
from symfonic.transports.http.accounts import sql as sql_accounts
from symfonic.transports.http.accounts.keys import KeyRecord
from symfonic.transports.http.accounts.sign_ins import SignIn


class SQLiteKeys(SQLitePort):
    """API keys, stored by id with their secret's digest only."""

    async def add_key(self, record: KeyRecord) -> bool:
        return await self._changed(sql_accounts.INSERT_KEY, sql_accounts.key_row(record))

    async def get_key(self, key_id: str) -> KeyRecord | None:
        row = await self._read(lambda c: c.execute(sql_accounts.GET_KEY, (key_id,)).fetchone())
        return None if row is None else sql_accounts.key_of(row)

    async def keys(self, tenant: str | None = None) -> list[KeyRecord]:
        statement, parameters = ((sql_accounts.ALL_KEYS, ()) if tenant is None
                                 else (sql_accounts.TENANT_KEYS, (tenant,)))
        return [sql_accounts.key_of(row) for row in
                await self._read(lambda c: c.execute(statement, parameters).fetchall())]

    async def revoke_key(self, key_id: str, now: float) -> bool:
        return await self._changed(sql_accounts.REVOKE_KEY, (now, key_id))

    async def keys_version(self) -> int:
        return int(await self._read(lambda c: c.execute(sql_accounts.KEYS_VERSION).fetchone()[0]))


class SQLiteSignIns(SQLitePort):
    """Inbox sign-ins, found by their cookie's digest until they expire."""

    async def open_sign_in(self, sign_in: SignIn) -> None:
        await self._changed(sql_accounts.INSERT_SIGN_IN, sql_accounts.sign_in_row(sign_in))

    async def find_sign_in(self, digest: str, now: float) -> SignIn | None:
        row = await self._read(lambda c: c.execute(sql_accounts.FIND_SIGN_IN, (digest, now)).fetchone())
        return None if row is None else sql_accounts.sign_in_of(row)

    async def end_sign_in(self, digest: str) -> bool:
        return await self._changed(sql_accounts.END_SIGN_IN, (digest,))

    async def prune_sign_ins(self, now: float) -> int:
        def prune(c: sqlite3.Connection) -> int:
            c.execute(sql_accounts.PRUNE_LINKS, (now,))
            return int(c.execute(sql_accounts.PRUNE_SIGN_INS, (now,)).rowcount)

        return await self._write(prune)

    async def spend_link(self, id: str, expires_at: float) -> bool:
        return await self._write(
            lambda c: c.execute(sql_accounts.SPEND_LINK, (id, expires_at)).fetchone() is not None)
