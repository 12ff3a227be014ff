"""People: who answers a pause, as the deployment knows them, never as a caller names them.

A :class:`Person` comes from a credential the server trusts: an API key bound to the person
(``symfonic keys add --person``), and later a sign-in. Nothing a request carries sets it, so a
stored "answered by" names somebody the server authenticated. A key bound to no person is a
*service key*: a machine acting for its tenant.

Ids and group names end up in stored rows, audience entries (``person:ID``, ``group:NAME``) and
signed claims, so they are held to the same alphabet as tenants: no separators, spaces or control
characters that could make one entry read as another.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Person", "groups_from"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$")
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,255}$")
_DISPLAY_LIMIT = 200


@dataclass(frozen=True, kw_only=True)
class Person:
    """Somebody who may answer pauses.

    Attributes:
        id: Stable and unique within the deployment (an employee id, an OpenID subject); what
            audiences and records name.
        name: How people read them; the id when empty.
        email: Where to reach them; may be empty.
        groups: The groups they belong to (``finance``, ``support``), matched by ``group:NAME``.

    Raises:
        ValueError: an id or group outside the allowed alphabet, a name with control characters
            or over 200 characters, or an email that is not ``local@domain``.
    """

    id: str
    name: str = ""
    email: str = ""
    groups: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _NAME.match(self.id):
            raise ValueError(f"invalid person id {self.id!r}: use 1-128 letters, digits or "
                             "._:@+- starting with a letter or digit")
        if not isinstance(self.name, str) or len(self.name) > _DISPLAY_LIMIT or not self.name.isprintable():
            raise ValueError(f"invalid name for person {self.id!r}: printable, at most "
                             f"{_DISPLAY_LIMIT} characters")
        if not isinstance(self.email, str) or (self.email and not _EMAIL.match(self.email)):
            raise ValueError(f"invalid email for person {self.id!r}: {self.email!r}")
        groups = frozenset(self.groups)
        bad = sorted(g for g in groups if not isinstance(g, str) or not _NAME.match(g))
        if bad:
            raise ValueError(f"invalid group names for person {self.id!r}: {bad}")
        object.__setattr__(self, "groups", groups)

    @property
    def display_name(self) -> str:
        return self.name or self.id

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "email": self.email,
                "groups": sorted(self.groups)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Person:
        """Raises:
            ValueError: the mapping does not describe a valid person.
        """
        try:
            groups: Iterable[Any] = data.get("groups") or ()
            return cls(id=data["id"], name=data.get("name") or "", email=data.get("email") or "",
                       groups=frozenset(groups))
        except (KeyError, TypeError) as wrong:
            raise ValueError(f"not a person: {data!r}") from wrong


def groups_from(text: str) -> frozenset[str]:
    """``"finance, support"`` as groups; empty entries dropped (a trailing comma is harmless)."""
    return frozenset(part.strip() for part in text.split(",") if part.strip())
