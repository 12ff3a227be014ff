"""One email to one person about one pause: what it says, built once, then as MIME.

The message is built in two steps. :func:`mail_document` gathers what a delivery sends, as JSON
(the same bytes on every attempt, and storable by a durable workflow between attempts);
:func:`to_message` turns it into an :class:`email.message.EmailMessage` at the moment of sending,
with the standard library alone. Everything a message shows comes from the ledger's record of the
pause and the person's key: the question, the call and its arguments, who asked, the expiry, and
the link (:mod:`.links`). Nothing in it answers the pause; the link says so.

Headers a receiver or a test can key on: ``Message-ID`` is derived from the delivery id, and
``Symfonic-Delivery-Id`` carries it as is, the same on every attempt, so a message sent twice
(at least once) is recognisable as one.
"""

from __future__ import annotations

import email.policy
import html
import json
from datetime import UTC, datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formataddr
from typing import Any

from symfonic.kernel.people import Person
from symfonic.services.ledger import PauseRecord
from symfonic.transports.webhooks import DELIVERY_ID_HEADER, EVENT_HEADER

__all__ = ["mail_document", "to_message"]

MAX_ARGUMENTS_CHARS = 4000
"""Arguments are shown up to this; the inbox shows the rest."""
_POLICY = email.policy.SMTP.clone(max_line_length=998)
"""Headers unfolded up to SMTP's line limit: the delivery id stays on its header's line."""
_SUBJECTS = {"pause.created": "Decision needed", "pause.reminded": "Reminder: decision needed",
             "pause.escalated": "Escalated to you: decision needed"}


def mail_document(*, record: PauseRecord, person: Person, event: str, link: str,
                  link_expires_at: float, requester: str | None, delivery_id: str,
                  domain: str) -> dict[str, Any]:
    """What one message to ``person`` says (see the module's docstring)."""
    question, arguments = _asked(record)
    shown = json.dumps(arguments, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    if len(shown) > MAX_ARGUMENTS_CHARS:
        shown = shown[:MAX_ARGUMENTS_CHARS] + "\n... (the rest is in the inbox)"
    agent = record.pin.partition("@")[0]
    return {
        "to": person.email, "to_name": person.display_name, "event": event,
        "subject": f"{_SUBJECTS.get(event, 'Decision needed')}: {record.name} ({agent})",
        "question": question, "call": record.name, "kind": record.kind, "agent": agent,
        "tenant": record.scope.tenant, "arguments": shown, "asked_by": requester,
        "expires_at": _when(record.expires_at), "link": link,
        "link_expires_at": _when(link_expires_at), "delivery_id": delivery_id,
        "message_id": f"<{delivery_id.replace(':', '.')}@{domain}>",
    }


def _asked(record: PauseRecord) -> tuple[str, Any]:
    """The question as a sentence, and what it is about: an approval's call arguments, a
    question's context, a tool's request for input."""
    asked = record.payload.get("question")
    if isinstance(asked, dict):
        text = asked.get("question") or asked.get("message")
        if isinstance(text, str) and text:
            return text, {k: v for k, v in asked.items()
                          if k not in ("question", "message", "requested_schema")}
        return f"May the agent run {record.name} with these arguments?", asked
    if isinstance(asked, str) and asked:
        return asked, {k: v for k, v in record.payload.items() if k != "question"}
    return f"May the agent run {record.name}?", {
        k: v for k, v in record.payload.items() if k != "question"}


def to_message(document: dict[str, Any], sender: str) -> EmailMessage:
    """The MIME message of ``document``: plain text, and the same as HTML."""
    message = EmailMessage(policy=_POLICY)
    message["From"] = sender
    message["To"] = formataddr((document["to_name"], document["to"]))
    message["Subject"] = document["subject"]
    message["Message-ID"] = document["message_id"]
    message[DELIVERY_ID_HEADER] = document["delivery_id"]
    message[EVENT_HEADER] = document["event"]
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(_text(document))
    message.add_alternative(_html(document), subtype="html")
    return message


def domain_of(sender: str) -> str:
    """The host part of the sender's address, for the ``Message-ID``."""
    try:
        return Address(addr_spec=sender).domain or "symfonic.invalid"
    except (ValueError, IndexError):
        return "symfonic.invalid"


def _lines(document: dict[str, Any]) -> list[tuple[str, str]]:
    asked = document["asked_by"] or "an agent run"
    return [("Question", document["question"]),
            ("Call", f"{document['call']} ({document['kind']}) of agent {document['agent']}, "
                     f"tenant {document['tenant']}"),
            ("Asked by", asked), ("Expires", document["expires_at"])]


def _text(document: dict[str, Any]) -> str:
    facts = "\n".join(f"{name}: {value}" for name, value in _lines(document))
    return (f"Hello {document['to_name']},\n\nA decision waits for you.\n\n{facts}\n\n"
            f"Arguments:\n{document['arguments']}\n\n"
            f"Open it in the inbox (this link signs you in to this pause only, once, until "
            f"{document['link_expires_at']}; nothing is decided until you press a button there):\n"
            f"{document['link']}\n\n-- symfonic (delivery {document['delivery_id']})\n")


def _html(document: dict[str, Any]) -> str:
    e = html.escape
    rows = "".join(f"<tr><th align=left>{e(n)}</th><td>{e(str(v))}</td></tr>"
                   for n, v in _lines(document))
    return (f"<p>Hello {e(document['to_name'])},</p><p>A decision waits for you.</p>"
            f"<table>{rows}</table><p>Arguments:</p><pre>{e(document['arguments'])}</pre>"
            f"<p><a href=\"{e(document['link'], quote=True)}\">Open it in the inbox</a>: this "
            f"link signs you in to this pause only, once, until "
            f"{e(document['link_expires_at'])}. Nothing is decided until you press a button "
            f"there.</p><p><small>symfonic, delivery {e(document['delivery_id'])}</small></p>")


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")
