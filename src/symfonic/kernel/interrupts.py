"""The pause signal and what it carries.

:class:`InvocationPaused` is a control-flow signal, not an error (hence no ``Error`` suffix): a stage
raises it to stop the run at a point where a person must answer. The runner turns it into the
run's last event, :class:`~symfonic.kernel.events.Paused`, so an adopter's error handling never
mistakes a question for a broken turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

InterruptKind = Literal["ask_user", "interrupt", "tool_input", "mcp_input"]


@dataclass(frozen=True, kw_only=True)
class PendingInterrupt:
    """A published pause: what was asked, and the handle to answer it with.

    Attributes:
        name: The interaction asked for: ``ask_user``, a declared interrupt, or the name of a tool
            that waits for approval.
        kind: ``"ask_user"`` for the free-form question; ``"tool_input"`` (``"mcp_input"`` for an
            MCP server's ``input_required``) when a running tool asked for input; ``"interrupt"``
            for everything else.
        payload: The question as stored, stamped with the interrupt name, schema version and
            issue time.
        token: The signed handle a person (or a transport) gives back to resume the turn.
        tool_call_id: The model's call that this pause answers.
        interrupt_id: The pause's id in the issuance ledger.
        run_id: The run that stopped.
        session_id: The session the run belongs to.
        expires_at: Epoch seconds after which the token is refused.
        resumable: True only when the turn state was acknowledged by durable storage. It is copied
            from the capability's report and never set by anything else: a pause that could not be
            stored is still published, honestly marked as not resumable.
    """

    name: str
    kind: InterruptKind
    payload: dict[str, Any] = field(default_factory=dict)
    token: str
    tool_call_id: str
    interrupt_id: str
    run_id: str
    session_id: str
    expires_at: float
    resumable: bool


class InvocationPaused(Exception):
    """Raised by a stage to stop the run until a person answers."""

    def __init__(self, interrupt: PendingInterrupt) -> None:
        super().__init__(f"paused for {interrupt.name!r} (call {interrupt.tool_call_id})")
        self.interrupt = interrupt
