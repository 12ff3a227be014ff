"""Session listeners: who is told, in the pause's own commit, that a session paused.

Some surfaces follow a session rather than a pause: an A2A task with push configs must learn that
its turn now waits for input, whichever process paused it (a worker, or a server that does not
serve A2A at all). The announcement cannot be sent from memory after the commit (a crash in
between loses it) nor decided by the transport (it is not there when a worker pauses). So a
transport that wants to hear of a session's pauses *registers a listener*: a row of the store's
``symfonic_session_listeners`` table (memory: ``MemoryDatabase.listeners``) naming the tenant,
the session, an outbox topic and the listener's own id (an A2A task id, say). When a pause is
issued, the ledger writes, in the pause's transaction, one outbox notification per topic that
listens to that session, with the payload :func:`pause_announcement`; the topic's router
delivers it as the transport sees fit.

The core never learns what a listener is: it reads a topic and writes a payload. The transport
owns the rows' lifetime and writes them in its own transactions (the A2A transport adds one with
a live task's first push config and removes it with the last one, or when the task ends); an
empty table costs a pause one index read.

Columns (schema version 10): ``scope``, ``session_id``, ``topic``, ``listener``, the four making
the primary key; an index on ``(topic, listener)`` lets a transport remove its own.
"""

from __future__ import annotations

from typing import Any

from symfonic.services.ledger import PauseRecord

__all__ = ["pause_announcement"]


def pause_announcement(record: PauseRecord) -> dict[str, Any]:
    """The payload of a pause announced to its session's listeners: which pause, in which
    session, on which agent. Never its token: a listener is told, it does not answer."""
    return {"pause_id": record.jti, "session_id": record.session_id,
            "agent": record.pin.partition("@")[0]}
