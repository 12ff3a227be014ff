"""A real MCP server for the toolset tests, run over stdio or streamable HTTP.

Every request it receives is appended to a JSON-lines log (``--log``), so a test can count the
listings and see exactly which calls and retries reached the server. Its request state is sealed
under a fixed key, so a restarted server still accepts state minted by the one before it, as a
deployment sharing its keys would.

Usage: ``python tools_server.py --log PATH [--fd N] [--page-size N]``; with ``--fd`` it serves
streamable HTTP on the already listening socket ``N`` (inherited from the test), else stdio.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer, RequestStateSecurity
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    ImageContent,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    TextContent,
    ToolAnnotations,
)

NAME = "orders"
KEY = "symfonic-tests-request-state-key-0123456789abcdef"
"""Fixed, so state sealed by one run of the server is accepted by the next."""
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["confirm"],
}


def build(log: Path, page_size: int) -> MCPServer:
    security = RequestStateSecurity(keys=[KEY], bind_principal=None)
    server = MCPServer(NAME, log_level="WARNING", request_state_security=security)

    def record(entry: dict[str, Any]) -> None:
        with log.open("a") as file:
            file.write(json.dumps(entry) + "\n")

    async def logged(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params: dict[str, Any] = dict(ctx.params or {})
        if ctx.method == "tools/list":
            record({"method": "tools/list", "cursor": params.get("cursor")})
            return paginate(await call_next(replace(ctx, params={k: v for k, v in params.items()
                                                                 if k != "cursor"})),
                            params.get("cursor"))
        if ctx.method == "tools/call":
            meta = params.get("_meta") or {}
            headers = getattr(ctx.request, "headers", None) or {}
            record({"method": "tools/call", "tool": params.get("name"),
                    "arguments": params.get("arguments"),
                    "state": params.get("requestState"),
                    "responses": params.get("inputResponses"),
                    "key": meta.get("io.symfonic/idempotency-key"),
                    "authorization": headers.get("authorization")})
        return await call_next(ctx)

    def paginate(result: HandlerResult, cursor: str | None) -> HandlerResult:
        """MCPServer lists every tool at once; pages make the client walk the cursors."""
        if not page_size or not isinstance(result, dict):
            return result
        start = int(cursor or 0)
        page = dict(result)
        page["tools"] = result["tools"][start:start + page_size]
        if start + page_size < len(result["tools"]):
            page["nextCursor"] = str(start + page_size)
        return page

    server.middleware.append(logged)

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True))
    def add(a: int, b: int) -> str:
        """Add two integers."""
        return str(a + b)

    @server.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    @server.tool(name="files.read")
    def read_file(path: str) -> str:
        """A name with a dot, which model providers refuse."""
        return f"contents of {path}"

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails, as a tool error."""
        raise ToolError(f"refused: {reason}")

    @server.tool()
    def structured() -> CallToolResult:
        """Structured content and no text."""
        return CallToolResult(content=[], structured_content={"total": 3, "currency": "EUR"})

    @server.tool()
    def picture() -> CallToolResult:
        """A caption and an image."""
        image = ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")
        return CallToolResult(content=[TextContent(type="text", text="a red dot"), image])

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Adds a tool and tells the client the listing changed."""
        server.add_tool(echo, name="echo_again", description="Added later.")
        await ctx.notify_tools_changed()
        return "grown"

    @server.tool()
    def crash() -> str:
        """The server process dies in the middle of the call."""
        os._exit(3)

    @server.tool()
    async def wait(seconds: float) -> str:
        """Answers after a while."""
        await anyio.sleep(seconds)
        return "waited"

    @server.tool()
    async def refund(amount: int, ctx: Context) -> CallToolResult | InputRequiredResult:
        """Refunds after a person confirms; asks again while the person leaves it unconfirmed."""
        answer = (ctx.input_responses or {}).get("confirm")
        if isinstance(answer, ElicitResult) and answer.content and answer.content.get("confirm") is True:
            note = answer.content.get("note") or "none"
            return text(f"refunded {amount} after {ctx.request_state} (note: {note})")
        ask = ElicitRequest(params=ElicitRequestFormParams(message=f"Refund {amount} EUR?",
                                                           requested_schema=CONFIRM_SCHEMA))
        return InputRequiredResult(input_requests={"confirm": ask}, request_state=f"refund-{amount}")

    @server.tool()
    async def transfer(amount: int, ctx: Context) -> CallToolResult | InputRequiredResult:
        """Asks two questions at once."""
        answers = ctx.input_responses or {}
        if answers:
            parts = {key: value.content for key, value in answers.items() if isinstance(value, ElicitResult)}
            return text(f"transfer {amount}: {json.dumps(parts, sort_keys=True)} state={ctx.request_state}")
        account = {"type": "object", "properties": {"iban": {"type": "string"}}, "required": ["iban"]}
        return InputRequiredResult(input_requests={
            "account": ElicitRequest(params=ElicitRequestFormParams(message="Which account?",
                                                                    requested_schema=account)),
            "confirm": ElicitRequest(params=ElicitRequestFormParams(message="Confirm the transfer?",
                                                                    requested_schema=CONFIRM_SCHEMA)),
        }, request_state="transfer")

    @server.tool()
    async def summarize(ctx: Context) -> CallToolResult | InputRequiredResult:
        """Asks the client's model (sampling), which no person can answer through a form."""
        message = SamplingMessage(role="user", content=TextContent(type="text", text="Summarize"))
        return InputRequiredResult(input_requests={"sample": CreateMessageRequest(
            params=CreateMessageRequestParams(messages=[message], max_tokens=10))})

    @server.tool()
    async def sign_in(ctx: Context) -> CallToolResult | InputRequiredResult:
        """Sends the person to a URL (URL-mode elicitation)."""
        return InputRequiredResult(input_requests={"login": ElicitRequest(params=ElicitRequestURLParams(
            message="Sign in", url="https://example.invalid/login"))})

    @server.tool()
    async def roots(ctx: Context) -> CallToolResult | InputRequiredResult:
        """Asks for the client's roots, which the client answers by itself."""
        answer = (ctx.input_responses or {}).get("roots")
        if isinstance(answer, ListRootsResult):
            return text(f"{len(answer.roots)} roots")
        return InputRequiredResult(input_requests={"roots": ListRootsRequest()}, request_state="roots")

    @server.tool()
    async def lost(ctx: Context) -> CallToolResult | InputRequiredResult:
        """Asks for the roots again and again."""
        return InputRequiredResult(input_requests={"roots": ListRootsRequest()})

    @server.tool()
    async def slow(ctx: Context) -> CallToolResult | InputRequiredResult:
        """Not ready yet the first two times: state only, no question."""
        rounds = int(ctx.request_state or 0)
        if rounds < 2:
            return InputRequiredResult(request_state=str(rounds + 1))
        return text(f"ready after {rounds} retries")

    return server


def text(value: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=value)])


async def serve_http(server: MCPServer, fd: int) -> None:
    import uvicorn

    app = server.streamable_http_app()
    listener = socket.socket(fileno=fd)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[listener])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--fd", type=int)
    parser.add_argument("--page-size", type=int, default=0)
    options = parser.parse_args()
    server = build(options.log, options.page_size)
    with options.log.open("a") as file:
        file.write(json.dumps({"method": "start", "pid": os.getpid()}) + "\n")
    if options.fd is None:
        server.run("stdio")
    else:
        anyio.run(serve_http, server, options.fd)


if __name__ == "__main__":
    main()
