"""Sending one message through SMTP, with ``aiosmtplib`` (the ``[email]`` extra).

One connection per message: messages go out when a pause is made or followed up, minutes apart,
and a connection kept open between them would mostly be a connection the server has dropped. A
message the server accepted is delivered as far as symfonic goes; any failure (the server down,
a refusal, a timeout) is returned as the reason, and the sender retries it with backoff under the
same delivery id.

Where it may connect is the operator's choice (``SYMFONIC_SMTP_URL``), never a request's: the
recipients are people the deployment's own keys describe, and only they are written in ``To``.
"""

from __future__ import annotations

from typing import Any

try:
    import aiosmtplib
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise ImportError("sending email needs its extra: pip install 'symfonic-runtime[email]'") \
        from missing

from symfonic.transports.email import EmailConfig
from symfonic.transports.email.messages import to_message

__all__ = ["SmtpMailer"]


class SmtpMailer:
    """Sends mail documents (:func:`~.messages.mail_document`) through the configured server."""

    def __init__(self, config: EmailConfig) -> None:
        self.config = config

    async def send(self, document: dict[str, Any]) -> str | None:
        """Send one message; None once the server accepted it, else why not."""
        config = self.config
        message = to_message(document, config.sender)
        try:
            refused, _ = await aiosmtplib.send(  # bytes: sent exactly as built, never refolded
                message.as_bytes(), sender=config.sender, recipients=[document["to"]], hostname=config.host,
                port=config.port, username=config.username, password=config.password,
                use_tls=config.tls, start_tls=None if not config.tls else False,
                timeout=config.timeout)
        except (aiosmtplib.SMTPConnectError, aiosmtplib.SMTPConnectTimeoutError, OSError) as failed:
            return f"SMTP {config.host}:{config.port} unreachable: {failed}"
        except aiosmtplib.SMTPException as failed:  # a refusal, a timeout mid-conversation
            return f"SMTP {config.host}:{config.port}: {failed}"
        if refused:
            return f"SMTP {config.host}:{config.port} refused {', '.join(sorted(refused))}"
        return None
