"""A real SMTP server for the tests: ``aiosmtpd`` on loopback, keeping what it received.

It runs on its own thread (aiosmtpd's :class:`Controller`), so a test can stop it and start it
again on the same port, to play a mail server that is down for a while.
"""

from __future__ import annotations

import email
import email.policy
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from typing import Any
from urllib.parse import unquote

from aiosmtpd.controller import Controller

from tests.support.servers import free_port

LINK = re.compile(r"(https?://\S+/inbox/link\?t=[A-Za-z0-9_.%-]+)")


class Mailbox:
    """Every message the server accepted, in order, parsed; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: list[EmailMessage] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        with self._lock:
            self._messages.append(message)
        return "250 Message accepted for delivery"

    @property
    def messages(self) -> list[EmailMessage]:
        with self._lock:
            return list(self._messages)

    def to(self, address: str) -> list[EmailMessage]:
        return [m for m in self.messages if address in str(m["To"])]


def text_of(message: EmailMessage) -> str:
    body = message.get_body(preferencelist=("plain",))
    assert body is not None
    return str(body.get_content())


def link_in(message: EmailMessage) -> str:
    """The inbox link a message carries (decoded as a browser would follow it)."""
    found = LINK.search(text_of(message))
    assert found is not None, text_of(message)
    return unquote(found.group(1))


class SmtpServer:
    """aiosmtpd on ``127.0.0.1:port``, started and stopped at will; ``mailbox`` outlives it."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.mailbox = Mailbox()
        self._controller: Controller | None = None

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port)
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None


@contextmanager
def smtp_server(*, started: bool = True) -> Iterator[SmtpServer]:
    server = SmtpServer()
    if started:
        server.start()
    try:
        yield server
    finally:
        server.stop()
