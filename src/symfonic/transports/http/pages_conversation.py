"""The conversation that led to a pause, as the inbox shows it: compact, escaped, collapsible.

A person deciding on a pause wants the user's request, what the agent said, and the tools it
called *with their results*, not the arguments alone. Every message is model or user content, so
all of it is escaped (never trusted as HTML). The view stays compact however long the session:

- a tool call is shown with its result under it (results are matched by ``tool_call_id``), and
  the paused call, which has no result yet, is marked as the one waiting for the person;
- a long text or result shows its first line or so, the rest in a ``<details>`` that opens on a
  click, with no script; a result past :data:`RESULT_CAP` characters is cut (the whole of it is
  in the transcript, not something to read in a browser);
- only the last :data:`RECENT` messages are open; earlier ones are folded into one ``<details>``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from symfonic.kernel.messages import Message, ToolCall

RECENT = 12
"""Messages shown open; earlier ones fold into one "earlier messages" disclosure."""
SHORT = 280
"""Texts longer than this (or of more than :data:`SHORT_LINES` lines) are folded."""
SHORT_LINES = 4
RESULT_CAP = 20_000
"""Characters of one text or result rendered at all; the rest is cut with a note."""


def conversation(messages: Sequence[Message], *, paused_call: str | None = None,
                 outstanding: bool = True) -> str:
    """The ``<section>`` that shows ``messages``; empty when there is nothing to show.

    Args:
        paused_call: The id of the call the pause stopped at: marked as waiting for the person
            while ``outstanding``, else as where the turn paused (the decision follows the
            conversation, since the conversation ends at the pause).
    """
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    called = {c.id for m in messages if m.role == "assistant" for c in m.tool_calls}
    shown = [m for m in messages if m.role != "tool" or m.tool_call_id not in called]
    if not shown:
        return ""
    mark = ("waiting for your answer" if outstanding
            else "the turn paused here for a person's decision (below)")
    items = [_message(m, results, paused_call, mark) for m in shown]
    earlier = ""
    if len(items) > RECENT:
        folded = len(items) - RECENT
        earlier = (f'<li class="earlier"><details><summary>{folded} earlier message'
                   f'{"s" if folded != 1 else ""}</summary><ol class="messages">'
                   f'{"".join(items[:folded])}</ol></details></li>')
        items = items[folded:]
    return ('<section class="conversation" aria-label="Conversation"><h3>Conversation</h3>'
            f'<ol class="messages">{earlier}{"".join(items)}</ol></section>')


def _message(message: Message, results: dict[str, Message], paused_call: str | None,
             mark: str) -> str:
    role = message.role
    who = {"user": "User", "assistant": "Agent", "system": "Instructions",
           "tool": "Tool result"}[role]
    body = _text(message.content) if message.content else ""
    calls = "".join(_call(c, results.get(c.id), paused_call, mark) for c in message.tool_calls)
    return (f'<li class="msg msg-{role}"><span class="who">{who}</span>'
            f"{body}{calls}</li>")


def _call(call: ToolCall, result: Message | None, paused_call: str | None, mark: str) -> str:
    arguments = call.raw_arguments if call.raw_arguments is not None else ", ".join(
        f"{k}={_show(v)}" for k, v in call.arguments.items())
    signature = f'<code class="signature">{escape(call.name)}({escape(arguments)})</code>'
    if result is not None:
        failed = result.content.startswith("Error")
        outcome = (f'<div class="result{" result-error" if failed else ""}">'
                   f'<span class="arrow" aria-hidden="true">→</span>'
                   f"{_text(result.content, code=True)}</div>")
    elif call.id == paused_call:
        outcome = f'<p class="waiting">{escape(mark)}</p>'
    else:
        outcome = '<p class="waiting">not run before the pause</p>'
    return f'<div class="call" data-call-id="{escape(call.id)}">{signature}{outcome}</div>'


def _text(text: str, *, code: bool = False) -> str:
    """``text``, escaped; folded into a disclosure when long, cut past :data:`RESULT_CAP`."""
    cut = ""
    if len(text) > RESULT_CAP:
        cut = f" … ({len(text) - RESULT_CAP:,} more characters not shown)"
        text = text[:RESULT_CAP]
    tag = "pre" if code else "p"
    lines = text.splitlines()
    if len(text) <= SHORT and len(lines) <= SHORT_LINES:
        return f'<{tag} class="text">{escape(text)}{escape(cut)}</{tag}>'
    head = (lines[0] if lines else text)[:SHORT // 2]
    return (f'<details class="long"><summary><span class="text">{escape(head)}</span> '
            f'<span class="more">({len(text):,} characters)</span></summary>'
            f'<{tag} class="text">{escape(text)}{escape(cut)}</{tag}></details>')


def _show(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)
