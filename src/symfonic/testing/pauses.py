"""Well-formed pauses to write straight into a store, for the conformance suites and store tests.

They are what the human capability would write, built without running an agent, so a store test
says exactly which rows it starts from.
"""

from __future__ import annotations

import uuid

from symfonic.capabilities.human.issuing import pause_notification
from symfonic.kernel.messages import Message, ToolCall
from symfonic.kernel.scope import Scope
from symfonic.kernel.stages import AnsweredCall
from symfonic.services.conversation import TranscriptTail
from symfonic.services.ledger import Finish, PauseIssue, PauseRecord
from symfonic.services.turn_state import TurnState

__all__ = ["ACME", "GLOBEX", "NOW", "pause_issue", "tail"]

NOW = 1_800_000_000.0
ACME = Scope(tenant="acme")
GLOBEX = Scope(tenant="globex")


def tail(scope: Scope, session: str, start: int, *texts: str) -> TranscriptTail:
    return TranscriptTail(scope=scope, session_id=session, start=start,
                          messages=tuple(Message("user", t) for t in texts))


def pause_issue(scope: Scope = ACME, session: str = "s1", start: int = 0, *,
                ttl: float = 3600, issued_at: float = NOW, finishes: Finish | None = None,
                messages: int = 2, notify: bool = False) -> PauseIssue:
    """A well-formed pause: ``messages`` new transcript rows, its turn state and ledger row, and
    (``notify``) the notification a host with notifications on writes with it."""
    jti, checkpoint = uuid.uuid4().hex, uuid.uuid4().hex
    call = ToolCall(id=f"call-{jti[:6]}", name="ask_user", arguments={"question": "why?"})
    other = ToolCall(id=f"other-{jti[:6]}", name="lookup", arguments={"id": 1})
    new = [Message("user", f"hello {i}") for i in range(messages - 1)]
    new.append(Message("assistant", "", (call, other)))
    state = TurnState(checkpoint_id=checkpoint, scope=scope, session_id=session, thread_id=session,
                      run_id="run-1", root_run_id="run-0", transcript_position=start + len(new),
                      round=(call, other), paused_call_id=call.id,
                      resolved={"earlier": AnsweredCall(call_id="earlier", content="yes")})
    record = PauseRecord(jti=jti, scope=scope, run_id="run-1", root_run_id="run-0",
                         session_id=session, thread_id=session, checkpoint_id=checkpoint,
                         name="ask_user", kind="ask_user", tool_call_id=call.id, pin="agent@1",
                         payload={"interrupt": "ask_user", "question": {"question": "why?"}},
                         answer_schema={"type": "string"}, issued_at=issued_at,
                         expires_at=issued_at + ttl)
    return PauseIssue(record=record, state=state, finishes=finishes,
                      tail=TranscriptTail(scope=scope, session_id=session, start=start,
                                          messages=tuple(new)),
                      notifications=(pause_notification(record),) if notify else ())
