"""The inbox's HTML, rendered on the server: plain strings, every outside value escaped.

No template engine (and so no extra dependency): the pages are few and small. Everything that
comes from a model, a person or a token is passed through :func:`html.escape`; the stylesheet and
the script are static files, so the pages run under a strict Content-Security-Policy with no
inline code at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from symfonic.kernel.messages import Message
from symfonic.platform.tickets import LedgerTicket
from symfonic.services.audit import AuditRecord
from symfonic.transports.http import forms, pages_conversation, pages_decisions

if TYPE_CHECKING:
    from symfonic.transports.http.reached import Reached

STATIC = "/inbox/static"
CALL_CHARS = 160
"""A card's heading shows the gated call up to this many characters (the table below has all)."""
InboxView = Literal["mine", "assigned", "all"]
"""The inbox's lists: what the signed-in person may answer now, what they took for review, or
every pending pause."""
_VIEWS: dict[str, tuple[str, str, str]] = {
    "mine": ("/inbox", "Waiting for me", "Nothing is waiting for you."),
    "assigned": ("/inbox?view=assigned", "Assigned to me", "You hold no pause for review."),
    "all": ("/inbox?view=all", "All", "Nothing is waiting for an answer."),
}
"""Each list's address, tab and empty-list sentence."""
REQUEST_CHARS = 200
"""A card shows the request that led to it up to this many characters (the conversation has all)."""


@dataclass(frozen=True, kw_only=True)
class PauseView:
    """A ticket with the form that answers it (None when it cannot be answered from here).

    Attributes:
        conversation: The session up to the pause (empty when not read, or nothing to show).
        who: Who answered, as a person reads it (the key's label), with the key's id for an
            audit.
    """

    ticket: LedgerTicket
    form: forms.AnswerForm | None
    conversation: Sequence[Message] = ()
    who: pages_decisions.Answerer = pages_decisions.NOBODY

    @property
    def purpose(self) -> str:
        return self.form.purpose if self.form else self.ticket.kind


def page(title: str, body: str, *, tenant: str | None = None, csrf: str | None = None) -> str:
    who = ""
    if tenant is not None and csrf is not None:
        who = (f'<form method="post" action="/inbox/logout" class="who">tenant '
               f"<strong>{escape(tenant)}</strong> <input type=\"hidden\" name=\"csrf\" "
               f'value="{escape(csrf)}"><button type="submit">Sign out</button></form>')
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)} · symfonic</title>"
            f'<link rel="icon" href="{STATIC}/favicon.svg" type="image/svg+xml">'
            f'<link rel="stylesheet" href="{STATIC}/inbox.css">'
            f'<script src="{STATIC}/inbox.js" defer></script></head>'
            f'<body><header><a href="/inbox" class="brand">symfonic inbox</a>{who}</header>'
            f"<main>{body}</main></body></html>")


def login(error: str | None = None, *, next_url: str = "/inbox", oidc: bool = False) -> str:
    """The sign-in page: single sign-on first when an identity provider is configured, then the
    API-key form (development, operators)."""
    problem = f'<p class="error" role="alert">{escape(error)}</p>' if error else ""
    sso = (f'<p><a class="button sso" href="/inbox/oidc/login?next={quote(next_url)}">'
           "Sign in with single sign-on</a></p><p class=\"hint\">or with an API key:</p>"
           if oidc else "")
    return page("Sign in", (
        f"<h1>Sign in</h1>{problem}{sso}"
        '<form method="post" action="/inbox/login" id="login">'
        f'<input type="hidden" name="next" value="{escape(next_url)}">'
        '<label>API key<input type="password" name="key" autocomplete="off" required '
        'placeholder="sfk_..."></label><button type="submit">Open the inbox</button></form>'
        "<p class=\"hint\"><code>symfonic serve</code> prints a development key, and an inbox "
        "link that signs in with it.</p>"))


def inbox(views: Sequence[PauseView], *, tenant: str, csrf: str, agents: Sequence[str],
          notice: str | None = None, more: str | None = None,
          history: Sequence[PauseView] = (), view: InboxView = "mine",
          me: str | None = None) -> str:
    """The pending pauses (each with its conversation folded), a form to start a run, and the
    recent decisions. ``#pending`` is what the script keeps live (``/inbox/events``).

    ``view``: ``mine``, the pauses the signed-in person (``me``) may answer now (the default),
    ``assigned``, those they took for review, or ``all`` of the tenant's pending pauses, those
    named for others included."""
    empty = _VIEWS[view][2]
    pending = "".join(card(v, csrf, me=me) for v in views) or f'<p class="empty">{empty}</p>'
    suffix = "" if view == "mine" else f"&view={view}"
    if more is not None:
        pending += (f'<p class="more"><a href="/inbox?after={quote(more)}{suffix}" rel="next">'
                    "More</a></p>")
    current = ' aria-current="page"'
    tabs = '<nav class="views">' + " ".join(
        f'<a href="{href}"{current if name == view else ""}>{label}</a>'
        for name, (href, label, _) in _VIEWS.items()) + "</nav>"
    note = f'<p class="notice" role="status">{escape(notice)}</p>' if notice else ""
    agent_options = "".join(f'<option value="{escape(a)}">{escape(a)}</option>' for a in agents)
    starter = (
        f'<details class="start"{"" if views else " open"}><summary>Start a run</summary>'
        '<form method="post" action="/inbox/runs" class="start-run">'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
        f'<label>Agent<select name="agent">{agent_options}</select></label>'
        '<label>Message<input type="text" name="input" required '
        'value="Please refund order 42."></label><button type="submit">Run</button></form></details>')
    decisions = pages_decisions.history([(v.ticket, v.purpose, v.who) for v in history])
    return page("Inbox", (
        f"<h1>{_HEADINGS[view]} "
        f"<span class=\"count\">{len(views)}</span></h1>{tabs}{note}"
        f'<section id="pending" data-count="{len(views)}" data-view="{view}" '
        f'aria-live="polite">{pending}</section>'
        f"{starter}{decisions}"), tenant=tenant, csrf=csrf)


_HEADINGS = {"mine": "Waiting for you", "assigned": "Assigned to you", "all": "All pending"}


def pause(view: PauseView, *, tenant: str, csrf: str, errors: Sequence[Mapping[str, Any]] = (),
          submitted: Mapping[str, str] | None = None, conflict: bool = False,
          me: str | None = None, history: Sequence[AuditRecord] = (),
          reached: Sequence[Reached] = ()) -> str:
    """One pause's page: its conversation open, then its form or what was decided, who was
    notified, and its history.

    Args:
        conflict: The person's answer was refused because the pause was answered already (a
            stale tab): say so above the decision that was applied.
    """
    return page(f"{view.ticket.name}", (
        '<p><a href="/inbox">← all pending</a></p>'
        + card(view, csrf, errors, submitted or {}, open_conversation=True, conflict=conflict,
               me=me) + pages_decisions.notified(reached) + pages_decisions.pause_history(history)),
        tenant=tenant, csrf=csrf)


def problem(status: int, error: str, detail: str) -> str:
    return page("Problem", f'<h1>{status}</h1><p class="error" data-error="{escape(error)}">'
                           f'{escape(detail)}</p><p><a href="/inbox">Back to the inbox</a></p>')


def card(view: PauseView, csrf: str, errors: Sequence[Mapping[str, Any]] | None = None,
         submitted: Mapping[str, str] | None = None, *, open_conversation: bool = False,
         conflict: bool = False, me: str | None = None) -> str:
    """One pause's ``<article>``: what is asked, the conversation that led to it, who is on it,
    and its form while outstanding or what was decided once answered (the inbox's events send it
    too). ``me``: the signed-in person's id, offered "Take it" or "Release" (None: a service key,
    which holds nothing)."""
    ticket = view.ticket
    token = escape(ticket.token)
    purpose = view.purpose
    heading = {"approval": f"Approve <code>{escape(_call(ticket))}</code>?",
               "ask_user": "A question"}.get(purpose, f"<code>{escape(ticket.name)}</code>")
    body = _context(view, open_conversation) + _question(ticket, purpose)
    if conflict:
        body += pages_decisions.conflict(ticket, view.who)
    if ticket.status == "outstanding":
        body += _holder(ticket, csrf, me, offer=view.form is not None)
    if ticket.status == "outstanding" and view.form is not None:
        problems = "".join(f"<li>{escape('.'.join(map(str, e.get('loc') or [])) or 'answer')}: "
                           f"{escape(str(e.get('msg', '')))}</li>" for e in errors or ())
        listed = f'<ul class="error" role="alert">{problems}</ul>' if problems else ""
        body += (f'<form method="post" action="/inbox/pauses/{token}" class="answer '
                 f'purpose-{escape(purpose)}">{listed}'
                 f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
                 f"{forms.render(view.form, submitted or {})}"
                 '<button type="submit" class="send">Send</button></form>')
    elif ticket.status == "outstanding":
        body += '<p class="hint">This pause cannot be answered from this service.</p>'
    else:
        body += pages_decisions.applied(ticket, purpose, view.who)
    link = f'<a href="/inbox/pauses/{token}" class="permalink">link</a>'
    return (f'<article class="pause" data-token="{token}" data-pause-id="{escape(ticket.jti)}" '
            f'data-status="{escape(ticket.status)}" data-assignee="{escape(ticket.assignee or "")}">'
            f"<h2><span>{heading}</span> {link}</h2>{_asked_by(view)}{body}</article>")


def _holder(ticket: LedgerTicket, csrf: str, me: str | None, *, offer: bool) -> str:
    """Who is on the pause, and the button that changes it: "Take it" while nobody holds it,
    "Release" for its holder; nothing to press for someone else's (their answer would be
    refused until the hold lapses)."""
    token = escape(ticket.token)

    def button(action: str, label: str) -> str:
        return (f'<form method="post" action="/inbox/pauses/{token}/{action}" class="hold">'
                f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
                f'<button type="submit" name="{action}" value="1">{label}</button></form>')

    if ticket.assignee is None:
        return button("take", "Take it") if offer and me is not None else ""
    until = pages_decisions.when(ticket.assigned_until or 0.0)
    if ticket.assignee == me:
        return (f'<div class="holder mine"><p class="meta">You are on it until {until}.</p>'
                f'{button("release", "Release")}</div>')
    return (f'<p class="meta holder">On it: <strong>{escape(ticket.assignee)}</strong> until '
            f"{until}; only they may answer it until then.</p>")


def _asked_by(view: PauseView) -> str:
    """Who asked, when, and for what request: what tells one card from the next at a glance
    (two refunds differ by their request and arguments, not by a session id)."""
    ticket = view.ticket
    meta = (f'<p class="meta asked-by">asked by agent <strong>{escape(ticket.agent)}</strong> in '
            f"session <code>{escape(ticket.session_id)}</code> at "
            f"{pages_decisions.when(ticket.issued_at)} · expires "
            f"{pages_decisions.when(ticket.expires_at)}</p>")
    meta += _who_may_answer(ticket)
    requests = [m.content for m in view.conversation if m.role == "user" and m.content.strip()]
    if not requests:
        return meta
    return meta + (f'<p class="request"><span class="label">Request</span> '
                   f"{escape(_clip(requests[-1], REQUEST_CHARS))}</p>")


def _who_may_answer(ticket: LedgerTicket) -> str:
    """The pause's audience and, with a quorum, who approved so far and how many are missing; and
    what happens if nobody answers: a person sees before deciding whether it is theirs, whether
    their vote completes it, and what their silence would decide."""
    parts = []
    if ticket.audience:
        parts.append(f"for {escape(', '.join(ticket.audience))}")
    if ticket.audience and ticket.requester:
        parts.append(f"asked by <strong>{escape(ticket.requester)}</strong>")
    if ticket.quorum > 1:
        approved = ", ".join(ticket.approved_by) or "nobody yet"
        parts.append(f"needs {ticket.quorum} approvals: approved by {escape(approved)}, "
                     f"waiting for {ticket.waiting_for}")
    if ticket.follow_ups:
        step = ticket.follow_ups[0]
        when = pages_decisions.when(float(step["at"]))
        parts.append(f"escalates to {escape(', '.join(step['to']))} at {when}"
                     if step["kind"] == "escalate" else f"next reminder at {when}")
    if ticket.on_expiry is not None:
        parts.append(f"if nobody answers in time: <code>{escape(_show(ticket.on_expiry))}</code>")
    return f'<p class="meta audience">{" · ".join(parts)}</p>' if parts else ""


def _call(ticket: LedgerTicket) -> str:
    """The gated call as the model wrote it, ``issue_refund(amount=59.9, order_id=42)``: the
    arguments are what a person approves, so they are in the card's heading."""
    question = ticket.question
    if not isinstance(question, dict):
        return ticket.name
    arguments = ", ".join(f"{k}={json.dumps(v, default=str, ensure_ascii=False)}"
                          for k, v in question.items())
    return _clip(f"{ticket.name}({arguments})", CALL_CHARS)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _context(view: PauseView, open_conversation: bool) -> str:
    shown = pages_conversation.conversation(view.conversation,
                                            paused_call=view.ticket.tool_call_id,
                                            outstanding=view.ticket.status == "outstanding")
    if not shown or open_conversation:
        return shown
    count = len(view.conversation)
    return (f'<details class="context"><summary>The conversation so far ({count} message'
            f'{"s" if count != 1 else ""})</summary>{shown}</details>')


def _question(ticket: LedgerTicket, purpose: str) -> str:
    question = ticket.question
    if purpose == "ask_user" and isinstance(question, dict):
        return f'<blockquote class="question">{escape(str(question.get("question", "")))}</blockquote>'
    if ticket.kind in ("tool_input", "mcp_input") and isinstance(question, dict):
        return _tool_input(question)
    if isinstance(question, dict) and question:
        rows = "".join(f"<tr><th>{escape(str(k))}</th><td><code>{escape(_show(v))}</code></td></tr>"
                       for k, v in question.items())
        caption = "<caption>Arguments</caption>" if purpose == "approval" else ""
        return f'<table class="question">{caption}{rows}</table>'
    return f'<pre class="question">{escape(_show(question))}</pre>'


def _tool_input(question: dict[str, Any]) -> str:
    """A tool's request for input: its message(s) as the question, then which tool asked and with
    what arguments (the schema is the form, not something to read)."""
    requests = question.get("requests")
    messages = ([str(r.get("message", "")) for r in requests.values() if isinstance(r, dict)]
                if isinstance(requests, dict) else [str(question.get("message", ""))])
    quoted = "".join(f'<blockquote class="question">{escape(m)}</blockquote>' for m in messages if m)
    rows = "".join(f"<tr><th>{escape(str(k))}</th><td><code>{escape(_show(v))}</code></td></tr>"
                   for k, v in question.items()
                   if k not in ("message", "requested_schema", "requests"))
    return quoted + (f'<table class="question asked-by">{rows}</table>' if rows else "")


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)
