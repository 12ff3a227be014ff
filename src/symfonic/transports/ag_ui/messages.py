"""A thread's messages as AG-UI shows them, and what a run's input adds to them.

The server holds the thread: its transcript is the conversation, and ``MESSAGES_SNAPSHOT`` is
made from it, so a page reloaded after a restart (or opened on another device) shows what was
said. The transcript stores no message ids, so a message's id is its position in the thread
(:func:`message_id`): stable, since a transcript is only ever appended to.

A run's ``messages`` are the client's copy of the thread. The client resends them all, and the
server never takes its copy's word for what was said: of them, only the user messages whose ids
are not the thread's own are new, and they are the run's input. A resume needs none, and one
that resends the history it has is read the same.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ag_ui.core import (
    AssistantMessage,
    FunctionCall,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)

from symfonic.kernel.messages import Message as Stored

ID_PREFIX = "symfonic:"
"""What every id of a thread's stored message starts with."""


def message_id(position: int) -> str:
    """The id of the thread's message at ``position`` (0 for its first)."""
    return f"{ID_PREFIX}{position}"


def snapshot(transcript: Sequence[Stored]) -> list[Message]:
    """The thread's messages, in order, as AG-UI messages with their positional ids."""
    shown: list[Message] = []
    for position, stored in enumerate(transcript):
        identity = message_id(position)
        if stored.role == "user":
            shown.append(UserMessage(id=identity, content=stored.content))
        elif stored.role == "assistant":
            calls = [ToolCall(id=call.id, function=FunctionCall(
                name=call.name, arguments=json.dumps(dict(call.arguments))))
                for call in stored.tool_calls]
            shown.append(AssistantMessage(id=identity, content=stored.content or None,
                                          tool_calls=calls or None))
        elif stored.role == "tool":
            shown.append(ToolMessage(id=identity, content=stored.content,
                                     tool_call_id=stored.tool_call_id or ""))
        else:
            shown.append(SystemMessage(id=identity, content=stored.content))
    return shown


def new_input(messages: Sequence[Message], stored: int) -> str | None:
    """The text of the run's new user messages (those that are not among the thread's ``stored``
    messages), joined by blank lines; None when there are none."""
    own = {message_id(position) for position in range(stored)}
    texts = [_text(message) for message in messages
             if isinstance(message, UserMessage) and message.id not in own]
    said = [text for text in texts if text.strip()]
    return "\n\n".join(said) if said else None


def _text(message: UserMessage) -> str:
    """A user message's text: its string, or its text parts (an image or a file part is not
    something the agent's model is sent here, so it is left out rather than described)."""
    if isinstance(message.content, str):
        return message.content
    return "\n".join(part.text for part in message.content if isinstance(part, TextPart))
