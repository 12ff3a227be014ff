"""The API keys' conformance suite: what every store must show as a :class:`KeyStore`.

:class:`~symfonic.testing.conformance.StoreConformance` inherits it, so every adapter runs it
unchanged. The behaviours: a record comes back as it was added, an id is taken once, listing is
per tenant and oldest first, revoking marks (never deletes) and happens once, and the version
grows with every change and with nothing else.
"""

from __future__ import annotations

import asyncio
from typing import Any

from symfonic.services.keys import KeyRecord
from symfonic.testing.pauses import NOW


def record(key_id: str, tenant: str = "acme", *, at: float = NOW, label: str = "") -> KeyRecord:
    return KeyRecord(id=key_id, tenant=tenant, digest="d" * 64 + key_id,
                     permissions=frozenset({"runs", "pauses:read"}), label=label, created_at=at)


class KeysConformance:
    """KeyStore behaviours; ``store`` is a fixture the subclass provides."""

    async def test_a_key_comes_back_as_added(self, store: Any) -> None:
        added = record("k1", label="ci")
        assert await store.api_keys.add_key(added)
        assert await store.api_keys.get_key("k1") == added
        assert await store.api_keys.get_key("nope") is None

    async def test_an_id_is_taken_once(self, store: Any) -> None:
        assert await store.api_keys.add_key(record("k1"))
        assert not await store.api_keys.add_key(record("k1", "globex"))
        assert (await store.api_keys.get_key("k1")).tenant == "acme"
        assert await store.api_keys.keys_version() == 1

    async def test_keys_are_listed_per_tenant_oldest_first(self, store: Any) -> None:
        for key_id, tenant, at in (("b", "acme", NOW + 2), ("a", "acme", NOW + 1),
                                   ("c", "globex", NOW)):
            await store.api_keys.add_key(record(key_id, tenant, at=at))
        assert [k.id for k in await store.api_keys.keys("acme")] == ["a", "b"]
        assert [k.id for k in await store.api_keys.keys("globex")] == ["c"]
        assert [k.id for k in await store.api_keys.keys()] == ["c", "a", "b"]
        assert list(await store.api_keys.keys("initech")) == []

    async def test_revoking_marks_the_key_once(self, store: Any) -> None:
        await store.api_keys.add_key(record("k1"))
        assert await store.api_keys.revoke_key("k1", NOW + 5)
        assert not await store.api_keys.revoke_key("k1", NOW + 6)
        assert not await store.api_keys.revoke_key("nope", NOW + 6)
        revoked = await store.api_keys.get_key("k1")
        assert revoked.revoked_at == NOW + 5 and revoked.revoked
        assert [k.id for k in await store.api_keys.keys()] == ["k1"]  # kept, marked

    async def test_the_version_grows_with_every_change_only(self, store: Any) -> None:
        versions = [await store.api_keys.keys_version()]
        assert versions == [0]
        await store.api_keys.add_key(record("k1"))
        versions.append(await store.api_keys.keys_version())
        await store.api_keys.add_key(record("k2"))
        versions.append(await store.api_keys.keys_version())
        await store.api_keys.get_key("k1")
        await store.api_keys.keys()
        assert await store.api_keys.keys_version() == versions[-1]  # reads change nothing
        await store.api_keys.revoke_key("k1", NOW)
        versions.append(await store.api_keys.keys_version())
        await store.api_keys.revoke_key("k1", NOW)  # already revoked: no change
        assert await store.api_keys.keys_version() == versions[-1]
        assert versions == sorted(set(versions))

    async def test_concurrent_adds_are_all_kept(self, store: Any) -> None:
        added = await asyncio.gather(*(store.api_keys.add_key(record(f"k{n}", at=NOW + n))
                                       for n in range(10)))
        assert all(added)
        assert len(await store.api_keys.keys()) == 10
        assert await store.api_keys.keys_version() == 10
