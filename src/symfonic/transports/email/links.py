"""The link an email carries: it signs one person in to one pause, once, for a short while.

A message lands in a mailbox that others may read (a shared inbox, a forward, a scanner), so the
link is a narrow capability, not a key:

- **signed** with a key derived from the host's token secret for this purpose alone
  (:meth:`TokenKeys.derived`), so no pause token verifies as a link and no link as a token;
- **bound** to a tenant, a person and a pause: its session sees that pause and nothing else of
  the tenant, and acts as that person (whose key must still be live when the link is used);
- **short-lived**: a day by default, never past the pause's expiry;
- **used once**: signing in spends its id in the store (:meth:`SignInStore.spend_link`), so a
  copied link cannot sign in a second browser, on any server.

Opening it signs nobody in and answers nothing (mail scanners open links): its page asks for a
button press, and the pause's own page asks for the decision.

The encoding is ours and plain: ``<key id>.<base64url JSON claims>.<base64url HMAC-SHA256>``,
checked byte for byte before anything in it is read.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from hashlib import sha256
from typing import Any, Literal

from symfonic.capabilities.human.tokens import TokenKeys
from symfonic.errors import SymfonicError

__all__ = ["InboxLink", "LinkRefused", "LinkSigner"]

PURPOSE = "symfonic inbox link v1"
MAX_LINK_CHARS = 2048
_SHAPE = re.compile(r"^[0-9a-f]{12}\.[A-Za-z0-9_-]{1,1800}\.[A-Za-z0-9_-]{43}$")
RefusalReason = Literal["malformed", "forged", "expired", "spent", "wrong_person", "unknown_person"]


class LinkRefused(SymfonicError, PermissionError):
    """An emailed link that signs nobody in, and why (``reason``)."""

    def __init__(self, reason: RefusalReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, kw_only=True)
class InboxLink:
    """What a link grants: ``person`` of ``tenant`` signed in to ``pause`` until ``expires_at``.

    Attributes:
        id: Random; what the store spends, so the link signs in once.
    """

    tenant: str
    person: str
    pause: str
    expires_at: int
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", secrets.token_urlsafe(18))

    def to_dict(self) -> dict[str, Any]:
        return {"i": self.id, "t": self.tenant, "p": self.person, "j": self.pause,
                "x": self.expires_at}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InboxLink:
        """Raises:
            LinkRefused: ``malformed``, the claims are not ours.
        """
        fields = {"i": str, "t": str, "p": str, "j": str, "x": int}
        if set(data) != set(fields) or not all(type(data[k]) is kind for k, kind in fields.items()):
            raise LinkRefused("malformed", "not an inbox link: unexpected claims")
        return cls(id=data["i"], tenant=data["t"], person=data["p"], pause=data["j"],
                   expires_at=data["x"])


class LinkSigner:
    """Signs and reads links with the host's token keys (any server of the deployment reads a
    link another signed, as they share the token secret)."""

    def __init__(self, keys: TokenKeys) -> None:
        self._kid, self._keys = keys.derived(PURPOSE)

    def sign(self, link: InboxLink) -> str:
        body = _b64(json.dumps(link.to_dict(), separators=(",", ":"), sort_keys=True).encode())
        return f"{self._kid}.{body}.{self._mac(self._keys[self._kid], self._kid, body)}"

    def read(self, text: str, now: float) -> InboxLink:
        """The link ``text`` stands for, checked.

        Raises:
            LinkRefused: ``malformed`` (not a link of ours), ``forged`` (its signature does not
                verify under any key this host holds) or ``expired``.
        """
        if not isinstance(text, str) or len(text) > MAX_LINK_CHARS or not _SHAPE.match(text):
            raise LinkRefused("malformed", "not an inbox link")
        kid, body, mac = text.split(".")
        key = self._keys.get(kid)
        if key is None or not hmac.compare_digest(mac, self._mac(key, kid, body)):
            raise LinkRefused("forged", "the link's signature does not verify")
        try:
            claims = json.loads(_unb64(body))
        except (ValueError, binascii.Error):
            raise LinkRefused("malformed", "not an inbox link: unreadable claims") from None
        if not isinstance(claims, dict):
            raise LinkRefused("malformed", "not an inbox link: unreadable claims")
        link = InboxLink.from_dict(claims)
        if link.expires_at <= now:
            raise LinkRefused("expired", "the link expired: ask for the pause in the inbox")
        return link

    @staticmethod
    def _mac(key: bytes, kid: str, body: str) -> str:
        return _b64(hmac.new(key, f"{kid}.{body}".encode(), sha256).digest())


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
