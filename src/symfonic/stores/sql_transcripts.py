"""How both relational stores keep a transcript: one row per appended segment.

A turn appends its messages in one write, so they are stored as one row: ``seq`` is the position
of the row's first message, ``span`` how many it holds, and ``body`` their JSON array. A cold
host reading a long session then fetches a row per segment, not a row per message, and decodes
each straight into messages. An append of more than :data:`MAX_SPAN` messages (a session imported
at once) is cut into rows of that size, so no single row grows without bound and a read of a
prefix decodes little past it.

Rows written before schema 21 hold one message each, as a JSON object, with ``span`` NULL. They
are never rewritten: the reader takes both shapes, row by row, so a database migrated with long
sessions in it needs no copy.

The primary key stays (scope, session, seq). Two writers appending at the same position collide
on it, as they did when each message had its row, and the append's check of the session's end
catches a writer whose position is stale. Reading from a position inside a row is what costs a
second part in the load: the rows starting at or after it, and the one row that starts before
it and may run past it (found by the primary key, backwards, with no bound on spans).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from symfonic.kernel.messages import Message, decode_stored, stored_messages
from symfonic.services.conversation import StoredFormatError, TranscriptTail
from symfonic.stores.json_text import dump_json, load_json

__all__ = ["INSERT_MESSAGES", "LOAD_MESSAGES", "LOAD_MESSAGES_PAGE", "MAX_SPAN", "NEXT_SEQ",
           "load_parameters", "load_range", "message_rows", "messages_of"]

MAX_SPAN = 64
"""The most messages one row holds; a longer append is stored as several rows."""

_WHERE = "scope = ? AND session_id = ?"
NEXT_SEQ = (f"SELECT COALESCE((SELECT seq + COALESCE(span, 1) FROM symfonic_messages "
            f"WHERE {_WHERE} ORDER BY seq DESC LIMIT 1), 0)")
"""The session's length: where its last row ends (0 when it has none)."""
INSERT_MESSAGES = ("INSERT INTO symfonic_messages (scope, session_id, seq, span, body) "
                   "VALUES (?, ?, ?, ?, ?)")
LOAD_MESSAGES = (
    f"SELECT seq, span, body FROM (SELECT seq, span, body FROM symfonic_messages WHERE {_WHERE} "
    f"AND seq < ? ORDER BY seq DESC LIMIT 1) AS straddling WHERE seq + COALESCE(span, 1) > ? "
    f"UNION ALL SELECT seq, span, body FROM symfonic_messages WHERE {_WHERE} "
    f"AND seq >= ? AND seq < ? ORDER BY seq")
"""The rows holding positions ``first`` up to ``end``: the one that starts before ``first`` and
reaches into it, then those starting in the range (:func:`load_parameters`)."""
LOAD_MESSAGES_PAGE = LOAD_MESSAGES + " LIMIT ?"

Row = Sequence[Any]
"""A stored row as read: ``(seq, span, body)``."""


def load_range(start: int, upto: int | None) -> tuple[int, int]:
    """The positions of a load: from ``start`` up to (not including) ``upto``."""
    return start, upto if upto is not None else 2**62


def load_parameters(scope_key: str, session_id: str, first: int, end: int) -> tuple[Any, ...]:
    """:data:`LOAD_MESSAGES`'s parameters for the positions ``first`` up to ``end``."""
    return (scope_key, session_id, min(first, end), first, scope_key, session_id, first, end)


def message_rows(tail: TranscriptTail) -> list[tuple[str, str, int, int, str]]:
    """``tail``'s rows: its messages in runs of at most :data:`MAX_SPAN`, each a JSON array."""
    messages = tail.messages
    rows = []
    for offset in range(0, len(messages), MAX_SPAN):
        run = messages[offset:offset + MAX_SPAN]
        body = dump_json([message.to_dict() for message in run])
        rows.append((tail.scope.key, tail.session_id, tail.start + offset, len(run), body))
    return rows


def messages_of(rows: Sequence[Row], first: int = 0, end: int | None = None) -> list[Message]:
    """The messages at positions ``first`` up to ``end`` (default: all) of ``rows``, which are
    the rows :data:`LOAD_MESSAGES` read for that range, in order.

    Each segment row is decoded as it was read, straight into messages, in one pass: joining
    them into one array first cost more than the decoding it saved, two copies of the whole
    session. Rows from before schema 21 (a message each) are joined, run by run, since a decode
    per message would cost more than the copy.

    Raises:
        StoredFormatError: a row is not what this library writes (not JSON, not a message, or
            holding another number of messages than its span says).
    """
    messages: list[Message] = []
    singles: list[str] = []  # a run of rows from before schema 21
    for _seq, span, body in rows:
        if span is None:
            singles.append(body)
            continue
        if singles:
            messages += _decoded(f"[{','.join(singles)}]", len(singles))
            singles = []
        messages += _decoded(body, span)
    if singles:
        messages += _decoded(f"[{','.join(singles)}]", len(singles))
    skip = max(first - rows[0][0], 0) if rows else 0  # into the row that starts before ``first``
    if skip or end is not None:
        return messages[skip:None if end is None else skip + max(end - first, 0)]
    return messages


def _decoded(array: str, count: int) -> list[Message]:
    """The ``count`` messages of ``array``: in one pass when they are as this library writes
    them, otherwise parsed and read one by one, to name what is wrong."""
    messages = decode_stored(array)
    if messages is None:
        try:
            messages = stored_messages(_parse(array))
        except (ValueError, TypeError, KeyError, AttributeError) as damaged:
            raise StoredFormatError(f"a stored message cannot be read: {damaged!r}") from damaged
    if len(messages) != count:
        raise StoredFormatError(f"a stored transcript row holds {len(messages)} messages where "
                                f"its span says {count}")
    return messages


def _parse(joined: str) -> list[Any]:
    try:
        batch = load_json(joined)
    except ValueError as damaged:
        raise StoredFormatError(f"a stored message cannot be read: {damaged!r}") from damaged
    if not isinstance(batch, list):
        raise StoredFormatError("stored transcript rows are not messages")
    return batch
