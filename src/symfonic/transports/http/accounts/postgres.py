"""API keys and inbox sign-ins in PostgreSQL (the HTTP transport's ports)."""

from __future__ import annotations

from symfonic.stores import sql as store_sql
from symfonic.stores.postgres.database import PostgresPort
from symfonic.transports.http.accounts import sql as sql_accounts
from symfonic.transports.http.accounts.keys import KeyRecord
from symfonic.transports.http.accounts.sign_ins import SignIn

_STATEMENTS = ("INSERT_KEY", "GET_KEY", "ALL_KEYS", "TENANT_KEYS", "REVOKE_KEY", "KEYS_VERSION",
               "INSERT_SIGN_IN", "FIND_SIGN_IN", "END_SIGN_IN", "PRUNE_SIGN_INS",
               "SPEND_LINK", "PRUNE_LINKS")
S = {name: store_sql.to_format_style(getattr(sql_accounts, name)) for name in _STATEMENTS}


class PostgresKeys(PostgresPort):
    """API keys, stored by id with their secret's digest only."""

    async def add_key(self, record: KeyRecord) -> bool:
        return await self._rowcount(S["INSERT_KEY"], sql_accounts.key_row(record)) == 1

    async def get_key(self, key_id: str) -> KeyRecord | None:
        rows = await self._fetchall(S["GET_KEY"], (key_id,))
        return sql_accounts.key_of(rows[0]) if rows else None

    async def keys(self, tenant: str | None = None) -> list[KeyRecord]:
        rows = await (self._fetchall(S["ALL_KEYS"], ()) if tenant is None
                      else self._fetchall(S["TENANT_KEYS"], (tenant,)))
        return [sql_accounts.key_of(row) for row in rows]

    async def revoke_key(self, key_id: str, now: float) -> bool:
        return await self._rowcount(S["REVOKE_KEY"], (now, key_id)) == 1

    async def keys_version(self) -> int:
        return int((await self._fetchall(S["KEYS_VERSION"], ()))[0][0])


class PostgresSignIns(PostgresPort):
    """Inbox sign-ins, found by their cookie's digest until they expire."""

    async def open_sign_in(self, sign_in: SignIn) -> None:
        await self._rowcount(S["INSERT_SIGN_IN"], sql_accounts.sign_in_row(sign_in))

    async def find_sign_in(self, digest: str, now: float) -> SignIn | None:
        rows = await self._fetchall(S["FIND_SIGN_IN"], (digest, now))
        return sql_accounts.sign_in_of(rows[0]) if rows else None

    async def end_sign_in(self, digest: str) -> bool:
        return await self._rowcount(S["END_SIGN_IN"], (digest,)) == 1

    async def prune_sign_ins(self, now: float) -> int:
        await self._rowcount(S["PRUNE_LINKS"], (now,))
        return await self._rowcount(S["PRUNE_SIGN_INS"], (now,))

    async def spend_link(self, id: str, expires_at: float) -> bool:
        """Not tried again on a lost connection: a spend that committed unseen would then read
        as spent by somebody else (the person follows their link again, and is told why)."""
        return bool(await self._fetchall(S["SPEND_LINK"], (id, expires_at), idempotent=False))
