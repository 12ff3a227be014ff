"""The kernel's view of a tool: a name, a JSON schema, and an async body.

``symfonic.tools`` builds these from Python functions; capabilities build their own (``ask_user``).
The kernel only needs the shape below, so it never imports pydantic or any capability.
"""

from __future__ import annotations

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


class ToolArgumentsInvalid(SymfonicError, ValueError):
    """The model wrote arguments the tool's schema refuses; the message is shown to the model."""


class ToolTimedOut(SymfonicError, TimeoutError):
    """A tool ran past its timeout; the model is told, and the turn goes on.

    An async body is cancelled at the deadline; a sync body runs in a worker thread, which Python
    cannot stop, so it finishes in the background and its result is discarded.
    """


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
