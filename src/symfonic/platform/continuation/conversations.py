"""The conversation that led to a pause, read from its token: what a person needs to answer it.

A pause's question alone ("approve ``issue_refund(order_id=42, amount=59.9)``?") rarely says
enough: the person answering wants the user's request, what the agent said, and which tools it
called with what results. That is the session's transcript up to the pause, and no further: the
turn state records how many messages the session held when the pause committed
(``TurnState.transcript_position``, the paused round's assistant message being the last), so a
conversation read after the pause was answered (or while later turns of the session ran) still
shows what the person was shown when it was asked.

The token is verified and checked against its ledger row first (as a resume is), so a forged or
foreign token reads nothing; the scope the transcript is read in is the token's own, never a
caller's. A transport still checks the token's tenant against its caller's before calling this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from symfonic.kernel.messages import Message
from symfonic.platform.continuation.reading import reachable
from symfonic.platform.continuation.resuming import LedgerContinuation
from symfonic.services.conversation import TranscriptService

if TYPE_CHECKING:
    from symfonic.stores.opening import Store


async def conversation_upto(token: str, *, continuation: LedgerContinuation,
                            transcripts: TranscriptService, store: Store) -> Sequence[Message]:
    """The messages of the pause's session up to the pause, oldest first.

    A pause whose turn state is gone (a store that prunes them) falls back to the transcript up
    to the last assistant message that made the paused call; failing that, nothing.

    Raises:
        UnknownPauseToken: a bad token (by subclass), or one that names no recorded pause.
        ContinuationUnavailable: the store could not be reached.
    """
    record = await continuation.recorded(token)
    with reachable():
        state = await store.checkpoints.load_state(record.checkpoint_id)
        if state is not None and state.session_id == record.session_id:
            return await transcripts.load(record.scope, record.session_id,
                                          upto=state.transcript_position)
        messages = await transcripts.load(record.scope, record.session_id)
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message.role == "assistant" and any(c.id == record.tool_call_id
                                               for c in message.tool_calls):
            return messages[:position + 1]
    return []
