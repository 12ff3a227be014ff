"""Email: the people of a pause's audience, told by mail that a decision waits for them.

A webhook tells a machine; a person reads mail. With ``SYMFONIC_SMTP_URL`` set, ``symfonic serve``
sends one message per person of a pause's audience who has an email address, when the pause is
made, when it is reminded, and (to the people it adds) when it is escalated. Each message says
what is asked, of which call and with which arguments, who asked, until when, and carries a link
to the pause in the inbox.

How it stays durable, without reading people in the pause's own transaction:

- the pause writes its one announcement to the outbox in its transaction, as for the webhooks
  (:mod:`symfonic.services.outbox`);
- the sender, delivering that announcement, *fans it out* (:mod:`.recipients`): it resolves the
  audience to people through the tenant's person keys, as they are at that moment, and writes
  one outbox entry per person (topic :data:`EMAIL`). Their ids derive from the announcement's, so
  an announcement delivered twice writes them once;
- each person's entry is then delivered like any notification (at least once, retried with
  backoff, given up after the limit, listed by ``symfonic webhooks failed`` and put back by
  ``symfonic webhooks retry``), by SMTP (:mod:`.smtp`). Its id is in the ``Message-ID`` and in a
  ``Symfonic-Delivery-Id`` header, the same on every attempt;
- a pause's entries are found by the prefix of their ids, which is how the API and the inbox show
  who was reached, when, and how each delivery stands.

The people are resolved when the announcement is delivered rather than in the pause's
transaction because they are the HTTP transport's (person keys), which the core that writes the
pause does not read; the fan-out is as durable, since the announcement stays in the outbox until
every entry is written.

The link signs that person in to that pause only (:mod:`.links`): signed, short-lived, used once.
Opening it never answers anything: mail scanners open links. Its page asks for a button press to
sign in, and the pause's page then asks for the decision.

The package needs ``aiosmtplib`` (the ``[email]`` extra) only to send; building messages and
links needs the standard library alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

__all__ = ["EMAIL", "EmailConfig", "email_prefix"]

EMAIL = "email"
"""The topic of one message to one person (the outbox entry the fan-out writes)."""
LINK_SECONDS = 24 * 3600.0
"""How long an emailed link signs in, unless the pause expires sooner."""


def email_prefix(pause_id: str) -> str:
    """The prefix of the ids of every email about the pause ``pause_id``."""
    return f"{EMAIL}:{pause_id}:"


@dataclass(frozen=True, kw_only=True)
class EmailConfig:
    """Where to send mail from and through.

    Attributes:
        host: The SMTP server.
        port: Its port (25, 465 for ``smtps``, 587 for submission).
        sender: The ``From`` address.
        tls: ``smtps://``: TLS from the first byte. Otherwise STARTTLS is used when the server
            offers it.
        username: Sign in to the server with these, when given (from the URL's user info).
        password: See ``username``.
        timeout: Seconds one message may take, connecting included.
        link_seconds: How long a message's link signs in (never past the pause's expiry).
    """

    host: str
    port: int
    sender: str
    tls: bool = False
    username: str | None = None
    password: str | None = None
    timeout: float = 30.0
    link_seconds: float = LINK_SECONDS

    def __post_init__(self) -> None:
        if not self.host:
            raise ValueError("the SMTP URL names no host")
        if "@" not in self.sender or any(c in self.sender for c in "\r\n"):
            raise ValueError(f"SYMFONIC_SMTP_FROM must be an email address, not {self.sender!r}")
        if not self.link_seconds > 0 or not self.timeout > 0:
            raise ValueError("link_seconds and timeout must be positive")

    @classmethod
    def from_url(cls, url: str, sender: str, **options: float) -> EmailConfig:
        """``smtp://[user:password@]host[:port]`` or ``smtps://...``.

        Raises:
            ValueError: another scheme, no host, or a port that is no number.
        """
        parts = urlsplit(url.strip())
        if parts.scheme not in ("smtp", "smtps"):
            raise ValueError(f"SYMFONIC_SMTP_URL must start with smtp:// or smtps://, not {url!r}")
        tls = parts.scheme == "smtps"
        port = parts.port or (465 if tls else 25)
        return cls(host=parts.hostname or "", port=port, sender=sender, tls=tls,
                   username=unquote(parts.username) if parts.username else None,
                   password=unquote(parts.password) if parts.password else None, **options)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EmailConfig | None:
        """From ``SYMFONIC_SMTP_URL`` and ``SYMFONIC_SMTP_FROM`` (and, optionally,
        ``SYMFONIC_SMTP_TIMEOUT`` and ``SYMFONIC_EMAIL_LINK_SECONDS``); None when no URL is set.

        Raises:
            ValueError: a URL without a sender, or a value that is not what it should be.
        """
        env = os.environ if env is None else env
        url = env.get("SYMFONIC_SMTP_URL", "").strip()
        if not url:
            return None
        sender = env.get("SYMFONIC_SMTP_FROM", "").strip()
        if not sender:
            raise ValueError("SYMFONIC_SMTP_URL is set but SYMFONIC_SMTP_FROM, the address the "
                             "messages come from, is not")
        options = {name: float(env[variable]) for name, variable in
                   (("timeout", "SYMFONIC_SMTP_TIMEOUT"),
                    ("link_seconds", "SYMFONIC_EMAIL_LINK_SECONDS")) if env.get(variable)}
        return cls.from_url(url, sender, **options)
