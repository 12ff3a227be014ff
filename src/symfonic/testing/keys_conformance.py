"""The API keys' conformance suite: what every store must show as a :class:`KeyStore`.

:class:`~symfonic.testing.conformance.StoreConformance` inherits it, so every adapter runs it
unchanged. The behaviours: a record comes back as it was added, an id is taken once, listing is
per tenant and oldest first, revoking marks (never deletes) and happens once, and the version
grows with every change and with nothing else.
"""

from __future__ import annotations

import asyncio
from typing import Any

from symfonic.testing.pauses import NOW
from symfonic.transports.http.accounts import KeyRecord, accounts_of


def record(key_id: str, tenant: str = "acme", *, at: float = NOW, label: str = "") -> KeyRecord:
    return KeyRecord(id=key_id, tenant=tenant, digest="d" * 64 + key_id,
                     permissions=frozenset({"runs", "pauses:read"}), label=label, created_at=at)


class KeysConformance:
    """KeyStore behaviours; ``store`` is a fixture the subclass provides."""

    async def test_a_key_comes_back_as_added(self, store: Any) -> None:
        added = record("k1", label="ci")
        assert await accounts_of(store).keys.add_key(added)
        assert await accounts_of(store).keys.get_key("k1") == added
        assert await accounts_of(store).keys.get_key("nope") is None

    async def test_an_id_is_taken_once(self, store: Any) -> None:
        assert await accounts_of(store).keys.add_key(record("k1"))
        assert not await accounts_of(store).keys.add_key(record("k1", "globex"))
        kept = await accounts_of(store).keys.get_key("k1")
        assert kept is not None and kept.tenant == "acme"
        assert await accounts_of(store).keys.keys_version() == 1

    async def test_keys_are_listed_per_tenant_oldest_first(self, store: Any) -> None:
        for key_id, tenant, at in (("b", "acme", NOW + 2), ("a", "acme", NOW + 1),
                                   ("c", "globex", NOW)):
            await accounts_of(store).keys.add_key(record(key_id, tenant, at=at))
        assert [k.id for k in await accounts_of(store).keys.keys("acme")] == ["a", "b"]
        assert [k.id for k in await accounts_of(store).keys.keys("globex")] == ["c"]
        assert [k.id for k in await accounts_of(store).keys.keys()] == ["c", "a", "b"]
        assert list(await accounts_of(store).keys.keys("initech")) == []

    async def test_revoking_marks_the_key_once(self, store: Any) -> None:
        await accounts_of(store).keys.add_key(record("k1"))
        assert await accounts_of(store).keys.revoke_key("k1", NOW + 5)
        assert not await accounts_of(store).keys.revoke_key("k1", NOW + 6)
        assert not await accounts_of(store).keys.revoke_key("nope", NOW + 6)
        revoked = await accounts_of(store).keys.get_key("k1")
        assert revoked is not None and revoked.revoked_at == NOW + 5 and revoked.revoked
        assert [k.id for k in await accounts_of(store).keys.keys()] == ["k1"]  # kept, marked

    async def test_the_version_grows_with_every_change_only(self, store: Any) -> None:
        versions = [await accounts_of(store).keys.keys_version()]
        assert versions == [0]
        await accounts_of(store).keys.add_key(record("k1"))
        versions.append(await accounts_of(store).keys.keys_version())
        await accounts_of(store).keys.add_key(record("k2"))
        versions.append(await accounts_of(store).keys.keys_version())
        await accounts_of(store).keys.get_key("k1")
        await accounts_of(store).keys.keys()
        assert await accounts_of(store).keys.keys_version() == versions[-1]  # reads change nothing
        await accounts_of(store).keys.revoke_key("k1", NOW)
        versions.append(await accounts_of(store).keys.keys_version())
        await accounts_of(store).keys.revoke_key("k1", NOW)  # already revoked: no change
        assert await accounts_of(store).keys.keys_version() == versions[-1]
        assert versions == sorted(set(versions))

    async def test_concurrent_adds_are_all_kept(self, store: Any) -> None:
        added = await asyncio.gather(*(accounts_of(store).keys.add_key(record(f"k{n}", at=NOW + n))
                                       for n in range(10)))
        assert all(added)
        assert len(await accounts_of(store).keys.keys()) == 10
        assert await accounts_of(store).keys.keys_version() == 10
