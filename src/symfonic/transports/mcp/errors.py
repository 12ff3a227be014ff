"""symfonic's typed refusals as MCP protocol errors, in one place, by type (never by message).

A refused ``requestState`` is answered exactly as the SDK's own request-state boundary answers
one, ``INVALID_PARAMS`` (-32602) with the message ``Invalid or expired requestState``, so a client
handles both alike; unlike the SDK's, ``data.reason`` says which refusal it was, since a client
must tell "answer again" from "someone already answered" from "it is gone":

======================================  ================  ====================================
refusal                                 JSON-RPC code     ``data.reason`` (+ more ``data``)
======================================  ================  ====================================
PauseAlreadyResumed (a replayed state)  -32602 state      ``pause_already_resumed`` + ``status``
PauseExpired                            -32602 state      ``pause_expired``
PauseRevoked                            -32602 state      ``pause_revoked``
MalformedPauseToken, forged, unreadable -32602 state      ``malformed_state``
UnknownPauseToken, another tenant's     -32602 state      ``unknown_pause`` (one answer for both)
a state of another tool                 -32602 state      ``wrong_tool``
AnswerInvalid                           -32602            ``answer_invalid`` + ``errors``
(a response that is not an elicitation) -32602            ``response_invalid``
(bad arguments)                         -32602            ``arguments_invalid``
SessionAwaitingAnswer                   -32602            ``session_awaiting_answer``
(unknown tool), AgentNotServed          -32602            ``unknown_tool``
(key lacks the permission)              -32600            ``forbidden`` + ``permission``
NotAnApprover                           -32600            ``not_an_approver`` + ``why``
AlreadyAnswered                         -32600            ``already_answered_by_you``
PauseAssigned                           -32600            ``pause_assigned`` + ``assignee``
IncompatibleDefinition                  -32603            ``incompatible_definition``
ContinuationUnavailable, StoreError     -32603            ``continuation_unavailable``
ClaimLost                               -32603            ``claim_lost``
OutcomeUnknown                          -32603            ``outcome_unknown`` + ``pause_id``
(shutting down / shutdown cut the run)  -32603            ``shutting_down`` / ``run_interrupted``
======================================  ================  ====================================

"state" marks the frozen ``Invalid or expired requestState`` message. Every refusal before the
claim changes nothing: the pause stays as it was (answerable, unless it was already answered).
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST

from symfonic import (
    AgentNotServed,
    AlreadyAnswered,
    AnswerInvalid,
    ClaimLost,
    ContinuationUnavailable,
    IncompatibleDefinition,
    MalformedPauseToken,
    NotAnApprover,
    OutcomeUnknown,
    PauseAlreadyResumed,
    PauseAssigned,
    PauseExpired,
    PauseRevoked,
    SessionAwaitingAnswer,
    StoreError,
    UnknownPauseToken,
)
from symfonic.transports.http.errors import Refusal

logger = logging.getLogger("symfonic.mcp")
STATE_REFUSED = "Invalid or expired requestState"
"""The SDK's own message for a request state it refuses (``mcp.server.request_state``)."""


def state_refused(reason: str, detail: str, **data: Any) -> MCPError:
    """The error for a ``requestState`` that names no pause this caller may answer now."""
    return MCPError(code=INVALID_PARAMS, message=STATE_REFUSED,
                    data={"reason": reason, "detail": detail, **data})


def invalid(reason: str, message: str, **data: Any) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message, data={"reason": reason, **data})


def forbidden(permission: str) -> MCPError:
    return MCPError(code=INVALID_REQUEST, message=f"this API key lacks the {permission!r} permission",
                    data={"reason": "forbidden", "permission": permission})


def unknown_tool(name: str) -> MCPError:
    return invalid("unknown_tool", f"Unknown tool: {name}")


def mcp_error(refusal: Exception) -> MCPError:
    """The protocol error ``refusal`` is answered with (see the module's table).

    Raises:
        Exception: ``refusal`` itself when it is none of the refusals mapped here (a bug to
            surface: the SDK answers it as a generic internal error and logs it).
    """
    detail = str(refusal)
    match refusal:
        case PauseAlreadyResumed():
            return state_refused("pause_already_resumed", "the pause was already answered (its "
                                 f"turn is {refusal.status}); this answer was not applied",
                                 status=refusal.status)
        case PauseExpired():
            return state_refused("pause_expired", "the question expired unanswered")
        case PauseRevoked():
            return state_refused("pause_revoked", "the question was withdrawn")
        case MalformedPauseToken():
            logger.warning("an MCP client sent a requestState that does not verify: %s (%s)",
                           detail, type(refusal).__name__)
            return state_refused("malformed_state", "the requestState does not verify: it was "
                                 "altered, or issued by another server")
        case UnknownPauseToken():
            return state_refused("unknown_pause", "no such pause in this tenant")
        case AnswerInvalid():
            return invalid("answer_invalid", f"The answer does not fit the question: {detail}; "
                           "the question is still open: answer it again", errors=refusal.errors)
        case AlreadyAnswered():
            return MCPError(code=INVALID_REQUEST, message=f"{detail}; the question is still open",
                            data={"reason": "already_answered_by_you"})
        case PauseAssigned():
            return MCPError(code=INVALID_REQUEST, message=f"{detail}; the question is still open",
                            data={"reason": "pause_assigned", "assignee": refusal.assignee,
                                  "until": refusal.until})
        case NotAnApprover():
            return MCPError(code=INVALID_REQUEST, message=f"{detail}; the question is still open",
                            data={"reason": "not_an_approver", "why": refusal.reason})
        case SessionAwaitingAnswer():
            return invalid("session_awaiting_answer", f"session {refusal.session_id} has a turn "
                           "waiting for an answer: answer (or decline) it first",
                           session_id=refusal.session_id)
        case AgentNotServed():
            return invalid("unknown_tool", detail)
        case IncompatibleDefinition():
            return _internal("incompatible_definition", detail)
        case ContinuationUnavailable() | StoreError():
            return _internal("continuation_unavailable", "the store cannot be reached now; nothing "
                             f"was applied: {detail}")
        case ClaimLost():
            return _internal("claim_lost", detail)
        case OutcomeUnknown():
            return _internal("outcome_unknown", detail, pause_id=refusal.jti)
        case Refusal():
            return _internal(refusal.error, refusal.detail)
    raise refusal


def _internal(reason: str, message: str, **data: Any) -> MCPError:
    return MCPError(code=INTERNAL_ERROR, message=message, data={"reason": reason, **data})
