"""The kernel's view of a tool: a name, a JSON schema, and an async body.

``symfonic.tools`` builds these from Python functions; capabilities build their own (``ask_user``).
The kernel only needs the shape below, so it never imports pydantic or any capability.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from symfonic.errors import SymfonicError
from symfonic.kernel.stages import TurnRequest


@dataclass(frozen=True, kw_only=True)
class ToolSchema:
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ToolInvocation:
    """What a tool body may know about the call beyond its arguments.

    Attributes:
        request: The run the call belongs to.
        call_id: The model's id for the call.
        stage_notes: Reasons the round's stages gave when they declined. A reserved tool (such as
            ``ask_user``) reads them to explain to the model why it was not handled.
    """

    request: TurnRequest
    call_id: str
    stage_notes: tuple[str, ...] = ()
    approved: bool = False
    """True when a person approved this very call (an approval gate lets it through)."""
    idempotency_key: str = ""
    """Stable for this call of this turn, across pauses, hosts and recoveries (the turn's root run
    and the call's id): a tool that calls an outside service passes it along, so a call run again
    on recovery is recognised there and not applied twice."""
    continuation: Mapping[str, Any] | None = None
    """For a call that stopped earlier with :class:`ToolInputRequired`: ``{"state": ...,
    "answer": ...}``, the state the tool raised with and the person's answer (already validated
    against the schema it asked with). The tool finishes that call with them rather than starting
    it over; None for every other call."""


class ToolArgumentsInvalid(SymfonicError, ValueError):
    """The model wrote arguments the tool's schema refuses; the message is shown to the model."""


class ToolTimedOut(SymfonicError, TimeoutError):
    """A tool ran past its timeout; the model is told, and the turn goes on.

    An async body is cancelled at the deadline; a sync body runs in a worker thread, which Python
    cannot stop, so it finishes in the background and its result is discarded.
    """


class ToolInputRequired(Exception):
    """Raised by a tool body that cannot finish until a person answers (an MCP server's
    ``input_required``). A signal, like :class:`~symfonic.kernel.interrupts.InvocationPaused`, not
    an error: the turn pauses there, and on resume the same call is invoked again with
    :attr:`ToolInvocation.continuation` set.

    Attributes:
        question: What the person is shown (JSON).
        answer_schema: The JSON schema the answer must satisfy before the pause is claimed.
        state: What the tool needs to finish the call (JSON); kept in the turn state, never shown.
        kind: The pause's kind: ``"tool_input"``, or ``"mcp_input"`` for an MCP server.
    """

    def __init__(self, message: str, *, question: dict[str, Any], answer_schema: dict[str, Any],
                 state: dict[str, Any], kind: str = "tool_input") -> None:
        # Every field in ``args``: a durable worker records a step's exception by pickling it, and
        # an exception is rebuilt from its args.
        super().__init__(message, question, answer_schema, state, kind)
        self.message = message
        self.question = question
        self.answer_schema = answer_schema
        self.state = state
        self.kind = kind

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return (_input_required, self.args)


def _input_required(message: str, question: dict[str, Any], answer_schema: dict[str, Any],
                    state: dict[str, Any], kind: str) -> ToolInputRequired:
    return ToolInputRequired(message, question=question, answer_schema=answer_schema, state=state,
                             kind=kind)


class Toolset(Protocol):
    """Tools that live elsewhere (an MCP server), listed when a run compiles its plan."""

    async def list_tools(self) -> Sequence[Tool]:
        """The tools as they stand; a toolset caches its listing and refreshes it when told."""
        ...

    def describe(self) -> dict[str, Any]:
        """A stable description for the agent's pin: where the tools come from, not the listing,
        which may change while pauses are outstanding."""
        ...

    async def close(self) -> None:
        """Release connections and processes; the toolset may be used again afterwards."""
        ...


class Tool(Protocol):
    @property
    def schema(self) -> ToolSchema: ...

    async def invoke(self, arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        """Run the tool and return the text the model reads.

        Raises:
            ToolArgumentsInvalid: when ``arguments`` do not fit the schema; nothing ran.
        """
        ...

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check ``arguments`` without running anything; return them normalised.

        Raises:
            ToolArgumentsInvalid: when they do not fit the schema.
        """
        ...


class WrappedTool:
    """A tool around another: the same schema and validation, and whatever else of the inner tool
    a capability reads (``idempotent``, its function...); subclasses change :meth:`invoke` only.
    How the runtime records tool calls as steps or traces them, without the tool knowing."""

    def __init__(self, tool: Tool) -> None:
        self.tool = tool

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tool, name)

    @property
    def schema(self) -> ToolSchema:
        return self.tool.schema

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.tool.validate(arguments)

    async def invoke(self, arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        return await self.tool.invoke(arguments, invocation)
