"""One tool of an MCP server, as the kernel sees a tool.

Arguments are checked here, against the server's own input schema, before anything is sent: the
model reads what is wrong and corrects itself, and the server never sees a call it would refuse.
A call carries the turn's idempotency key in ``_meta`` (``io.symfonic/idempotency-key``), the same
on every retry and on a recovered turn, so a server can recognise a call it already ran.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, cast

import jsonschema
from mcp.client import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import (
    HEADER_MISMATCH,
    CallToolResult,
    InputRequiredResult,
    InputResponses,
    PaginatedRequestParams,
    RequestParamsMeta,
)
from mcp_types import Tool as ToolDefinition

from symfonic.kernel.tool_contract import ToolArgumentsInvalid, ToolInvocation, ToolSchema
from symfonic.toolsets.mcp.connection import Connection
from symfonic.toolsets.mcp.errors import SDK_ERRORS, MCPToolError, translate
from symfonic.toolsets.mcp.input_required import automatic_responses, needs_person, pause, resume
from symfonic.toolsets.mcp.results import error_text, render

__all__ = ["IDEMPOTENCY_KEY", "MCPTool", "list_definitions"]

logger = logging.getLogger("symfonic.mcp")
IDEMPOTENCY_KEY = "io.symfonic/idempotency-key"
"""The ``_meta`` key of a call's idempotency key."""
MAX_ROUNDS = 10
"""Rounds of ``input_required`` answered without a person (roots, state only) before giving up."""
MAX_PAGES = 1000
"""A server whose cursors never end cannot hang a listing."""


class MCPTool:
    """A tool that runs on an MCP server.

    Attributes:
        server_name: The toolset's name.
        tool_name: The tool's name on the server; :attr:`schema` has the exposed (prefixed) name.
        definition: The tool as the server listed it.
        idempotent: The server's ``idempotentHint``: running the call twice does no harm, so a
            recovered turn may run it again. A hint from the server, which is trusted as far as the
            server is.
        timeout: Seconds the server has to answer each round of a call; the toolset's timeout
            unless changed here, for one slow tool.
    """

    def __init__(self, *, connection: Connection, server_name: str, exposed_name: str,
                 definition: ToolDefinition, timeout: float) -> None:
        self._connection = connection
        self.timeout = timeout
        self.server_name = server_name
        self.tool_name = definition.name
        self.definition = definition
        annotations = definition.annotations
        self.idempotent = bool(annotations is not None and annotations.idempotent_hint)
        self._schema = ToolSchema(name=exposed_name, description=definition.description or "",
                                  parameters=definition.input_schema)
        self._validator = _validator(definition.input_schema, server_name, definition.name)

    @property
    def schema(self) -> ToolSchema:
        return self._schema

    @property
    def name(self) -> str:
        return self._schema.name

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if self._validator is None:
            return arguments
        errors = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if errors:
            raise ToolArgumentsInvalid("; ".join(_describe(error) for error in errors[:5]))
        return arguments

    async def invoke(self, arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        """Call the tool; raise :class:`~symfonic.kernel.tool_contract.ToolInputRequired` where it needs a
        person, and finish that call with the answer when invoked again with the continuation.

        Raises:
            ToolArgumentsInvalid: the arguments fail the input schema; nothing was sent.
            ToolInputRequired: the server asks a person; the turn pauses.
            MCPToolError: the tool failed (``isError``), or the server refused the call or its state.
            MCPConnectionError: the server could not be reached, or the connection broke mid-call.
            ToolTimedOut: the server did not answer within the toolset's timeout.
        """
        self.validate(arguments)
        responses: InputResponses | None = None
        state: str | None = None
        if invocation.continuation is not None:
            responses, state = resume(invocation.continuation, server=self.server_name, tool=self.tool_name)
        result = await self._call(arguments, responses, state, invocation.idempotency_key)
        rounds, delay = 0, 0.05
        while isinstance(result, InputRequiredResult):
            if needs_person(result, server=self.server_name, tool=self.tool_name):
                raise pause(result, server=self.server_name, tool=self.tool_name, arguments=arguments)
            rounds += 1
            if rounds > MAX_ROUNDS:
                raise MCPToolError(f"MCP server {self.server_name!r} kept answering {self.tool_name!r} with "
                                   f"input_required for {MAX_ROUNDS} rounds; gave up",
                                   server=self.server_name, tool=self.tool_name)
            responses = automatic_responses(result)
            if responses is None:  # state only: the server is not ready yet
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
            result = await self._call(arguments, responses, result.request_state, invocation.idempotency_key)
        if result.is_error:
            raise MCPToolError(error_text(result), server=self.server_name, tool=self.tool_name)
        return render(result)

    async def _call(self, arguments: dict[str, Any], responses: InputResponses | None, state: str | None,
                    key: str) -> CallToolResult | InputRequiredResult:
        """One ``tools/call`` round, with the SDK's errors translated."""

        async def send(session: ClientSession) -> CallToolResult | InputRequiredResult:
            try:
                return await self._send(session, arguments, responses, state, key)
            except MCPError as mismatch:
                if mismatch.code != HEADER_MISMATCH:
                    raise
                # A new connection has not listed the tool, so it cannot mirror the arguments the
                # schema marks as headers: list on this session, and send once more.
                await list_definitions(session)
                return await self._send(session, arguments, responses, state, key)

        try:
            return await self._connection.request(send)
        except SDK_ERRORS as error:
            raise translate(error, server=self.server_name, tool=self.tool_name,
                            timeout=self.timeout) from error

    async def _send(self, session: ClientSession, arguments: dict[str, Any], responses: InputResponses | None,
                    state: str | None, key: str) -> CallToolResult | InputRequiredResult:
        meta = cast(RequestParamsMeta, {IDEMPOTENCY_KEY: key}) if key else None  # an open map
        return await session.call_tool(self.tool_name, arguments, input_responses=responses,
                                       request_state=state, meta=meta, allow_input_required=True,
                                       read_timeout_seconds=self.timeout)

    def __repr__(self) -> str:
        return f"MCPTool({self.name!r}, server={self.server_name!r})"


async def list_definitions(session: ClientSession) -> list[ToolDefinition]:
    """Every tool the server lists, following its cursors."""
    tools: list[ToolDefinition] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None or cursor in seen:
            return tools
        seen.add(cursor)
    return tools


def _validator(schema: Mapping[str, Any], server: str, tool: str) -> Any:
    """A validator for ``schema``, or None (the server alone checks) when the schema is itself invalid."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as invalid:
        logger.warning("MCP server %r lists tool %r with an invalid input schema (%s); its arguments are "
                       "checked by the server only", server, tool, invalid.message)
        return None
    return cls(schema)


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error.absolute_path) or "arguments"
    return f"{where}: {error.message}"
