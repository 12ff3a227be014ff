"""The MCP tool calls: run an agent's turn, or answer its pause, for the API key's tenant.

A call without ``requestState`` starts a turn; when the turn pauses, the call is answered with an
``InputRequiredResult``: one form-mode elicitation (:mod:`.forms`) keyed by the pause's id, and
the pause token as the ``requestState`` (:mod:`.state`). The client's retry carries the form's
response and that state, and goes to ``host.continuation.resume_stream``, which verifies, claims
(at most once, across processes and restarts) and resumes: nothing about a pause is decided
here. Before it, the token's tenant is checked against the key's offline, so another tenant's
token is refused exactly like an unknown one, before anything is read.

What the person's response means:

- ``accept``: the form's content is the answer. One that fails the pause's schema is refused
  (``answer_invalid``) and the pause stays answerable: retry with a corrected answer.
- ``decline`` (the person refuses to answer): the pause is **revoked**, so no one can answer it
  later and its session takes new turns; the call ends with a tool error result saying so.
  Declining an approval therefore ends the turn without running the tool and without telling
  the model (reject it with ``approved: false`` and a reason for that).
- ``cancel`` (dismissed without a choice): **nothing changes**; the call ends with a tool error
  result whose ``_meta`` holds the ``requestState``, so the question can be answered later.

A retry with the state and no response at all (the spec's state-only round) asks the same
question again while the pause is outstanding.

Turns run in the app's run pump (:class:`~symfonic.transports.http.sse.RunPump`), not in the
request: a client that disconnects does not cut a resumed turn off half-way, and the app's
shutdown drains MCP turns with its others. A pause on a connection of a protocol version before
2026-07-28, which has no ``InputRequiredResult``, is a tool error result naming the pause, to be
answered in the inbox or over the HTTP API.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitResult,
    InputRequiredResult,
    InputResponses,
    ListToolsResult,
    PaginatedRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from symfonic import PauseExpired, RunOutcome, SymfonicError, UnknownPauseToken
from symfonic.outcome import collect
from symfonic.platform.tickets import LedgerTicket
from symfonic.transports.http.auth import ApiKey, Permission
from symfonic.transports.http.service import Service
from symfonic.transports.mcp.errors import (
    forbidden,
    invalid,
    mcp_error,
    state_refused,
    unknown_tool,
)
from symfonic.transports.mcp.forms import answer_of, form_of, question_text
from symfonic.transports.mcp.state import state_of, token_in
from symfonic.transports.mcp.tools import (
    PAUSE_ID,
    REQUEST_STATE,
    SESSION_ID,
    call_of,
    error_result,
    finished,
    tool_of,
)

KEY_SCOPE = "symfonic.mcp.key"
"""Where the mount's authentication leaves the caller's API key in the ASGI scope."""
_ANSWERED = ("claimed", "interrupted", "completed", "paused_again", "failed")


class AgentTools:
    """The low-level server's ``tools/list`` and ``tools/call`` handlers over ``service``'s host."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.host = service.host

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """For the SDK's ``Mcp-Param-*`` header checks, without listing every tool per call."""
        spec = self.host.specs.get(name)
        return tool_of(spec).input_schema if spec is not None else None

    async def list_tools(self, ctx: ServerRequestContext[Any, Any],
                         params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=[tool_of(spec) for _, spec in sorted(self.host.specs.items())])

    async def call_tool(self, ctx: ServerRequestContext[Any, Any],
                        params: CallToolRequestParams) -> CallToolResult | InputRequiredResult:
        if params.name not in self.host.specs:
            raise unknown_tool(params.name)
        key = _key(ctx)
        try:
            if params.request_state is not None:
                return await self._answer(ctx, key, params.name, params.request_state,
                                          params.input_responses)
            if params.input_responses:
                raise invalid("response_invalid", "input_responses without the requestState they "
                              "answer: send back the requestState of the InputRequiredResult")
            return await self._start(ctx, key, params.name, params.arguments)
        except SymfonicError as refused:
            raise mcp_error(refused) from None

    async def _start(self, ctx: ServerRequestContext[Any, Any], key: ApiKey, name: str,
                     arguments: dict[str, Any] | None) -> CallToolResult | InputRequiredResult:
        _require(key, "runs")
        call = call_of(arguments)
        agent = self.host.agent(name, key.scope)
        self.service.check_accepting()
        feed = self.service.pump.start(agent.stream(call.message, session_id=call.session_id,
                                                    requested_by=key.person))
        outcome = await collect(feed.events())
        return await self._ended(ctx, outcome, outcome.session_id)

    async def _answer(self, ctx: ServerRequestContext[Any, Any], key: ApiKey, name: str,
                      state: str, responses: InputResponses | None) -> CallToolResult | InputRequiredResult:
        _require(key, "pauses:answer")
        token = token_in(state)
        if token is None:
            raise state_refused("malformed_state", "the requestState was not issued by this server "
                                "(or by a newer one)")
        self._check_tenant(token, key.tenant)
        ticket = await self.host.continuation.ticket(token)
        if ticket.agent != name:
            raise state_refused("wrong_tool", f"this requestState answers a call of {ticket.agent}, "
                                f"not of {name}")
        response = (responses or {}).get(ticket.jti)
        if response is None:
            if responses:
                raise invalid("response_invalid", f"input_responses holds no response to "
                              f"{ticket.jti}, the one input request of this requestState")
            return self._ask_again(ticket, ctx)
        if not isinstance(response, ElicitResult):
            raise invalid("response_invalid", f"the response to {ticket.jti} is not an "
                          "elicitation result")
        meta = {SESSION_ID: ticket.session_id, PAUSE_ID: ticket.jti}
        if response.action == "decline":
            return await self._decline(token, ticket, meta, key)
        if response.action == "cancel":
            return error_result("The question was dismissed and is still open: call again with "
                                "the same requestState (in this result's _meta) to answer it.",
                                {**meta, REQUEST_STATE: state})
        self.service.check_accepting()  # before the claim: a claimed pause must get its turn
        events = await self.host.continuation.resume_stream(token, answer_of(ticket, response.content),
                                                            answered_by=f"mcp:{key.id}",
                                                            person=key.person)
        outcome = await collect(self.service.pump.start(events).events())
        return await self._ended(ctx, outcome, ticket.session_id)

    def _ask_again(self, ticket: LedgerTicket,
                   ctx: ServerRequestContext[Any, Any]) -> CallToolResult | InputRequiredResult:
        if ticket.status in _ANSWERED:
            raise state_refused("pause_already_resumed", "the pause was already answered (its "
                                f"turn is {ticket.status})", status=ticket.status)
        return self._asked(ticket, ctx)

    async def _decline(self, token: str, ticket: LedgerTicket, meta: dict[str, Any],
                       key: ApiKey) -> CallToolResult:
        if not await self.host.revoke(token, by=key.person, credential=f"mcp:{key.id}"):
            fresh = await self.host.continuation.ticket(token)
            raise state_refused("pause_already_resumed", "the pause was already answered (its "
                                f"turn is {fresh.status}); it was not withdrawn", status=fresh.status)
        return error_result(f"The person declined to answer {ticket.name!r}: the question was "
                            "withdrawn and the turn ends here.", meta)

    async def _ended(self, ctx: ServerRequestContext[Any, Any], outcome: RunOutcome,
                     session_id: str) -> CallToolResult | InputRequiredResult:
        if outcome.status != "paused":
            return finished(outcome, session_id)
        interrupt = outcome.interrupt
        assert interrupt is not None  # a paused outcome carries its interrupt
        meta = {SESSION_ID: session_id, PAUSE_ID: interrupt.interrupt_id}
        if not interrupt.resumable:
            return error_result(f"The turn stopped to ask {interrupt.name!r}, but its pause could "
                                "not be stored, so it cannot be answered: start again.", meta)
        return self._asked(await self.host.continuation.ticket(interrupt.token), ctx)

    def _asked(self, ticket: LedgerTicket,
               ctx: ServerRequestContext[Any, Any]) -> CallToolResult | InputRequiredResult:
        """The pause as an input request, or, where a client cannot be asked in-band, a tool error
        result that says where to answer it."""
        meta = {SESSION_ID: ticket.session_id, PAUSE_ID: ticket.jti}
        form = form_of(ticket)
        elsewhere = (f"The turn waits for a person's answer to: {question_text(ticket)} Answer "
                     f"pause {ticket.jti} in the inbox or over the HTTP API")
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return error_result(f"{elsewhere} (this MCP connection predates input requests).", meta)
        if form is None:
            return error_result(f"{elsewhere} (its answer does not fit an MCP form).", meta)
        return InputRequiredResult(input_requests={ticket.jti: ElicitRequest(params=form)},
                                   request_state=state_of(ticket.token), _meta=meta)

    def _check_tenant(self, token: str, tenant: str) -> None:
        """Pass when ``token`` verifies offline and is ``tenant``'s; another tenant's is refused
        as unknown whatever its state (an expired one included), before anything is read."""
        try:
            scope = self.host.continuation.scope_of(token)
        except PauseExpired as expired:
            if expired.scope is None or expired.scope.tenant != tenant:
                raise UnknownPauseToken("no such pause in this tenant") from None
            raise
        if scope.tenant != tenant:
            raise UnknownPauseToken("no such pause in this tenant")


def _key(ctx: ServerRequestContext[Any, Any]) -> ApiKey:
    """The API key the mount authenticated this request with (it lets none through without)."""
    request = ctx.request
    key = request.scope.get(KEY_SCOPE) if request is not None else None
    if key is None:
        raise RuntimeError("the MCP mount let a request through without an API key")
    assert isinstance(key, ApiKey)
    return key


def _require(key: ApiKey, permission: Permission) -> None:
    if not key.allows(permission):
        raise forbidden(permission)

