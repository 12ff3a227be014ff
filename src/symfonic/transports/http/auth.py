"""API keys: which tenant a caller acts for, and what it may do there.

A key is ``sfk_<id>_<secret>``. Only its SHA-256 digest is kept (in memory and in the keys file),
next to the tenant it maps to and its permissions, so a leaked keys file grants nothing. A fast
hash is enough here, unlike for passwords: the secret is 256 random bits, which no dictionary or
brute force reaches, and a slow KDF would only cost every request. The ``id`` part finds the
record without scanning; the digest is compared in constant time.

A key maps to exactly one scope. Nothing a request carries (a path, a body, a token) can move it
to another tenant: the routes read the tenant from the key and, for a pause, check that the token
was minted in that same tenant before anything else happens.

Permissions (a key without the one a route needs gets 403, a missing or unknown key 401):

- ``runs``: start runs;
- ``pauses:read``: list pauses and read tickets (and open the inbox);
- ``pauses:answer``: resume and revoke pauses.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from symfonic.kernel.scope import Scope

__all__ = ["DEFAULT_KEYS_FILE", "KEYS_FILE_VARIABLE", "PERMISSIONS", "ApiKey", "ApiKeys", "Permission"]

Permission = Literal["runs", "pauses:read", "pauses:answer"]
PERMISSIONS: tuple[Permission, ...] = ("runs", "pauses:read", "pauses:answer")
KEYS_FILE_VARIABLE = "SYMFONIC_API_KEYS"
DEFAULT_KEYS_FILE = Path(".symfonic/api_keys.json")
KEYS_FORMAT = 1
"""Version of the keys file. 1: ``{"format": 1, "keys": [record, ...]}``."""
_PREFIX = "sfk"


@dataclass(frozen=True, kw_only=True)
class ApiKey:
    """One key as stored: never the key itself.

    Attributes:
        id: The public part of the key, used to find its record.
        digest: Hex SHA-256 of the whole key.
        tenant: The only tenant the key acts in.
        permissions: What the key may do there (see the module docstring).
        label: A note for operators (``development`` for the key ``symfonic serve`` prints).
    """

    id: str
    digest: str
    tenant: str
    permissions: frozenset[str]
    label: str = ""
    created_at: float = 0.0

    @property
    def scope(self) -> Scope:
        return Scope(tenant=self.tenant)

    def allows(self, permission: Permission) -> bool:
        return permission in self.permissions

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "digest": self.digest, "tenant": self.tenant,
                "permissions": sorted(self.permissions), "label": self.label,
                "created_at": self.created_at}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ApiKey:
        return cls(id=str(data["id"]), digest=str(data["digest"]), tenant=str(data["tenant"]),
                   permissions=frozenset(data.get("permissions", PERMISSIONS)),
                   label=str(data.get("label", "")), created_at=float(data.get("created_at", 0)))


class ApiKeys:
    """The keys a service accepts, optionally kept in a JSON file (digests only, mode 0600)."""

    def __init__(self, keys: Iterable[ApiKey] = (), *, path: Path | None = None) -> None:
        self._keys = {key.id: key for key in keys}
        self.path = path

    @classmethod
    def load(cls, path: str | Path) -> ApiKeys:
        """The keys in ``path``; none when the file does not exist yet.

        Raises:
            ValueError: the file is of a newer format than this symfonic knows, or damaged.
        """
        path = Path(path)
        if not path.exists():
            return cls(path=path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            version = data.get("format")
            records = data["keys"]
        except (ValueError, KeyError, AttributeError) as damaged:
            raise ValueError(f"{path} is not a symfonic keys file: {damaged}") from None
        if version != KEYS_FORMAT:
            raise ValueError(f"{path} has keys format {version!r}; this symfonic reads {KEYS_FORMAT}")
        return cls((ApiKey.from_json(r) for r in records), path=path)

    def issue(self, tenant: str, *, permissions: Iterable[Permission] = PERMISSIONS,
              label: str = "") -> str:
        """Make a key for ``tenant`` and return it: the only time it is ever visible.

        Saved to the keys file at once when there is one.
        """
        scope = Scope(tenant=tenant)  # validates the tenant
        granted = frozenset(permissions)
        unknown = granted - set(PERMISSIONS)
        if unknown:
            raise ValueError(f"unknown permissions {sorted(unknown)}; use {list(PERMISSIONS)}")
        key_id = secrets.token_hex(6)
        key = f"{_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
        self._keys[key_id] = ApiKey(id=key_id, digest=_digest(key), tenant=scope.tenant,
                                    permissions=granted, label=label, created_at=time.time())
        self.save()
        return key

    def authenticate(self, presented: str | None) -> ApiKey | None:
        """The record of ``presented``, or None when it is no key of ours."""
        if not presented or len(presented) > 256:
            return None
        prefix, _, rest = presented.partition("_")
        key_id, _, _ = rest.partition("_")
        record = self._keys.get(key_id) if prefix == _PREFIX else None
        digest = _digest(presented)
        if record is None or not hmac.compare_digest(digest, record.digest):
            return None
        return record

    def get(self, key_id: str) -> ApiKey | None:
        return self._keys.get(key_id)

    def remove(self, key_id: str) -> bool:
        removed = self._keys.pop(key_id, None) is not None
        if removed:
            self.save()
        return removed

    def remove_labelled(self, tenant: str, label: str) -> int:
        """Drop the keys of ``tenant`` with ``label``; how many went."""
        doomed = [k.id for k in self._keys.values() if k.tenant == tenant and k.label == label]
        for key_id in doomed:
            del self._keys[key_id]
        if doomed:
            self.save()
        return len(doomed)

    def save(self) -> None:
        """Write the keys file atomically, readable by its owner only."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staged = self.path.with_name(self.path.name + ".tmp")
        text = json.dumps({"format": KEYS_FORMAT, "keys": [k.to_json() for k in self]}, indent=2)
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(staged, self.path)

    def __iter__(self) -> Iterator[ApiKey]:
        return iter(list(self._keys.values()))

    def __len__(self) -> int:
        return len(self._keys)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
