"""What was decided on a pause, as the inbox shows it: the decision applied, who, when, and what
came of it; and the list of a tenant's recent decisions.

The decision shown is the one the ledger stored with the claim (``LedgerTicket.decision``), i.e.
what was *applied* to the paused call, not what a form last held: an edited amount shows the
edited value, and a person whose tab was stale sees the decision someone else made.

**A rejection must not look like a success.** After a rejection the turn usually *completes*
(the model reads the refusal and answers), so "Completed" alone would read as "it was done". A
rejection is therefore shown first, as ``Rejected: <reason>`` in its own style, and the turn's
output after it in a neutral style, as the agent's reply rather than as an outcome. The reason is
read back from the refusal the model was given (the core's wording: ``... Reason: <reason>``);
for an approval, an answered (rather than approved) decision is only ever a rejection.

Who answered is stored as the answering API key's id (the inbox's: the key its session signed in
with). A person reads the key's label instead (:class:`Answerer`; "development key" for the key
``symfonic serve`` prints), while the id, which never changes, stays on the element for an audit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

from symfonic.platform.tickets import LedgerTicket
from symfonic.services.audit import AuditRecord

if TYPE_CHECKING:
    from symfonic.transports.http.reached import Reached

REJECTED_PREFIX = "Reason: "


@dataclass(frozen=True, kw_only=True)
class Answerer:
    """Who answered a pause, as the inbox shows it.

    Attributes:
        name: What a person reads: the answering key's label
            (:func:`~symfonic.transports.http.auth.readable_label`), or ``answered_by`` as stored
            when it names no key of the tenant.
        key_id: The answering key's id when it is one: not in the text (an id means nothing to
            the person reading), but on the element (``data-key-id``, and its tooltip) so an
            audit can tell two keys of the same label apart.
    """

    name: str
    key_id: str | None = None

    def html(self) -> str:
        if self.key_id is None:
            return f'<strong class="answerer">{escape(self.name)}</strong>'
        key = escape(self.key_id)
        return (f'<strong class="answerer" data-key-id="{key}" title="API key {key}">'
                f"{escape(self.name)}</strong>")


NOBODY = Answerer(name="someone (not recorded)")
"""An answer stored without who gave it (by code that did not say)."""


def decision(ticket: LedgerTicket, purpose: str) -> tuple[str, str]:
    """``(kind, text)`` of the decision applied: kind is ``approved``, ``edited``, ``rejected``,
    ``answered`` or ``none`` (nothing stored: unanswered, or answered before decisions were
    kept)."""
    applied = ticket.decision
    if not applied:
        return "none", ""
    if applied.get("kind") == "approved":
        arguments = applied.get("arguments") or {}
        asked = ticket.question if isinstance(ticket.question, dict) else {}
        edits = [f"{k} {_show(asked.get(k))} → {_show(v)}" for k, v in arguments.items()
                 if asked.get(k) != v]
        edits += [f"{k} removed" for k in asked if k not in arguments]
        if edits:
            return "edited", f"Approved with edits: {', '.join(edits)}"
        return "approved", "Approved"
    content = str(applied.get("content", ""))
    if purpose == "approval":
        reason = content.rpartition(REJECTED_PREFIX)[2] if REJECTED_PREFIX in content else content
        return "rejected", f"Rejected: {reason}"
    return "answered", f"Answered: {content}"


def applied(ticket: LedgerTicket, purpose: str, who: Answerer) -> str:
    """The answered pause's block: its decision, who and when, then what came of it."""
    kind, text = decision(ticket, purpose)
    parts = []
    if kind != "none":
        parts.append(f'<p class="decision decision-{kind}" data-decision="{kind}">'
                     f"{escape(text)}</p>")
    if ticket.answered_at is not None and ticket.status not in ("expired", "revoked"):
        parts.append(f'<p class="meta answered">answered by {who.html()} at '
                     f"{when(ticket.answered_at)}</p>")
    parts.append(outcome(ticket, after_rejection=kind == "rejected"))
    return "".join(parts)


def outcome(ticket: LedgerTicket, *, after_rejection: bool = False) -> str:
    result = ticket.outcome or {}
    status = ticket.status
    if status == "completed":
        text = (f"The agent replied: {result.get('output', '')}" if after_rejection
                else f"Completed: {result.get('output', '')}")
    elif status == "paused_again":
        text = "Answered. The turn stopped again to ask something else: see the inbox."
    elif status == "failed":
        text = f"Failed: {result.get('error', '')}"
    elif status == "claimed":
        text = "Answered; the turn is running (or stopped before it could record its outcome)."
    elif status == "interrupted":
        text = "Answered, but the turn was interrupted before it ended: it can be recovered."
    else:
        text = f"No longer answerable ({status})."
    extra = " after-rejection" if after_rejection else ""
    return (f'<p class="outcome outcome-{escape(status)}{extra}" role="status">'
            f"{escape(text)}</p>")


def conflict(ticket: LedgerTicket, who: Answerer) -> str:
    """Why an answer was refused because the pause was answered already, and what was applied."""
    by = (f" by {who.html()} at {when(ticket.answered_at)}"
          if ticket.answered_at is not None else "")
    return (f'<p class="conflict" role="alert" data-error="pause_already_resumed">This pause was '
            f"already answered{by}, in another tab or by someone else; your answer "
            f"was not applied. What was applied:</p>")


def history(rows: Sequence[tuple[LedgerTicket, str, Answerer]]) -> str:
    """The recent decisions: ``(ticket, purpose, who)``, the latest answer first."""
    if not rows:
        return ('<section id="history" aria-label="Recent decisions"><h2>Recent decisions</h2>'
                '<p class="empty">No pause has been answered yet.</p></section>')
    listed = "".join(row(t, purpose, who) for t, purpose, who in rows)
    return ('<section id="history" aria-label="Recent decisions"><h2>Recent decisions</h2>'
            f'<ol class="decisions">{listed}</ol></section>')


def row(ticket: LedgerTicket, purpose: str, who: Answerer) -> str:
    """One recent decision: what was asked, the decision, who, when, what came of it."""
    kind, text = decision(ticket, purpose)
    asked = {"approval": f"Approve {ticket.name}?", "ask_user": "A question"}.get(
        purpose, ticket.name)
    question = ticket.question
    if purpose == "ask_user" and isinstance(question, dict):
        detail = str(question.get("question", ""))
    elif isinstance(question, dict):
        detail = ", ".join(f"{k}={_show(v)}" for k, v in question.items())
    else:
        detail = _show(question)
    short = outcome_line(ticket)
    answered = "" if ticket.answered_at is None else when(ticket.answered_at)
    return (f'<li class="decision-row" data-token="{escape(ticket.token)}" '
            f'data-decision="{kind}"><a href="/inbox/pauses/{escape(ticket.token)}">'
            f'{escape(asked)}</a> <span class="asked">{escape(_clip(detail, 120))}</span>'
            f'<span class="decision decision-{kind}">{escape(_clip(text, 160) or "—")}</span>'
            f'<span class="meta">by {who.html()} · {answered} · '
            f'<span class="status status-{escape(ticket.status)}">{escape(short)}</span>'
            "</span></li>")


def outcome_line(ticket: LedgerTicket) -> str:
    result = ticket.outcome or {}
    if ticket.status == "completed":
        return _clip(f"completed: {result.get('output', '')}", 120)
    if ticket.status == "failed":
        return _clip(f"failed: {result.get('error', '')}", 120)
    return {"paused_again": "asked again", "claimed": "running",
            "interrupted": "interrupted"}.get(ticket.status, ticket.status)


def when(epoch: float) -> str:
    """A moment, to the minute for reading, to the second in its ``datetime`` for an audit."""
    moment = datetime.fromtimestamp(epoch, UTC)
    return (f'<time datetime="{moment.isoformat(timespec="seconds")}">'
            f'{moment.strftime("%Y-%m-%d %H:%M UTC")}</time>')


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


_SAID = {"reminded": "reminder sent", "escalated": "escalated", "assigned": "taken for review",
         "released": "given back", "voted": "approved", "edited": "approved with edits",
         "answered": "answered", "revoked": "withdrawn", "expired": "expired",
         "completed": "turn completed", "paused_again": "turn paused again",
         "failed": "turn failed"}


def pause_history(records: Sequence[AuditRecord]) -> str:
    """A pause's own audit records, as a person reads them: who was reminded and when, whom it
    escalated to, who took it, voted and answered (``GET /v1/pauses/{token}/history``)."""
    if not records:
        return ""
    items = []
    for record in records:
        said = _SAID.get(record.kind, record.kind)
        detail = json.loads(record.detail) if record.detail else {}
        if record.kind == "escalated":
            said += f" to {', '.join(detail.get('to', []))}"
        if record.kind == "assigned" and detail.get("to") not in (None, record.person):
            said += f", to {detail['to']}"
        who = f" by <strong>{escape(record.person)}</strong>" if record.person else ""
        items.append(f'<li data-kind="{escape(record.kind)}">{when(record.at_us / 1_000_000)} '
                     f"{escape(said)}{who} <span class=\"hint\">({escape(record.channel)})</span>"
                     "</li>")
    return (f'<section class="history" aria-label="History"><h3>History</h3>'
            f'<ol>{"".join(items)}</ol></section>')


def notified(reached: Sequence[Reached]) -> str:
    """Who the pause's emails went to, and how each delivery stands
    (``GET /v1/pauses/{token}/notifications``)."""
    if not reached:
        return ""
    items = []
    for r in reached:
        state = {"delivered": f"delivered {when(r.delivered_at)}" if r.delivered_at else "delivered",
                 "failed": "given up", "pending": f"pending, {r.attempts} attempt(s)"}[r.status]
        error = (f' <span class="hint">{escape(_clip(r.last_error, 120))}</span>'
                 if r.last_error and r.status != "delivered" else "")
        items.append(f'<li data-status="{r.status}" data-person="{escape(r.person)}">'
                     f"{when(r.created_at)} <strong>{escape(r.name)}</strong> "
                     f"&lt;{escape(r.email)}&gt; ({escape(_EVENTS.get(r.event, r.event))}): "
                     f"{state}{error}</li>")
    return (f'<section class="notified" aria-label="Notified"><h3>Notified</h3>'
            f'<ol>{"".join(items)}</ol></section>')


_EVENTS = {"pause.created": "asked", "pause.reminded": "reminded", "pause.escalated": "escalated"}

