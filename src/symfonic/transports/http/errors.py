"""The core's typed refusals, mapped to status codes by type, never by message.

=================================  ======  ===========================  ==========================
refusal                            status  ``error``                    note
=================================  ======  ===========================  ==========================
MalformedPauseToken (+ subclasses)   400   malformed_token              logged at error level
UnknownPauseToken                    404   unknown_pause                fixed detail, see below
(token of another tenant)            404   unknown_pause                the very same body
PauseExpired                         410   pause_expired
PauseRevoked                         410   pause_revoked                gone for good, like expiry
PauseAlreadyResumed                  409   pause_already_resumed        + ``status``, ``outcome``
AnswerInvalid                        422   answer_invalid               + ``errors``
NotAnApprover                        403   not_an_approver              + ``reason``
AlreadyAnswered                      409   already_answered_by_you      the vote counts once
PauseAssigned                        409   pause_assigned               + ``assignee``, ``until``
IncompatibleDefinition               409   incompatible_definition
AgentNotServed                       404   unknown_agent
SessionAwaitingAnswer                409   session_awaiting_answer
ContinuationUnavailable              503   continuation_unavailable     + ``Retry-After: 5``
StoreUnavailable                     503   store_unavailable            + ``Retry-After: 5``
ClaimLost                            503   claim_lost                   the turn stopped
OutcomeUnknown                       500   outcome_unknown              applied; recover it
RecoveryRefused                      409   recovery_refused             + ``status``
(body fails the route's schema)      422   request_invalid              + ``errors``
(JSON with NaN or an infinity)       422   request_invalid              + ``errors``
(no or unknown API key)              401   unauthorized
(key lacks the permission)           403   forbidden
(body over the limit)                413   body_too_large
(run or resume while stopping)       503   shutting_down                nothing started
(shutdown cut the run off)           503   run_interrupted              :func:`run_interrupted`
=================================  ======  ===========================  ==========================

A 404 for a pause always says the same thing, whether the pause does not exist or belongs to
another tenant, so a tenant cannot learn anything about another's tokens by probing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from symfonic.agent import SessionAwaitingAnswer
from symfonic.capabilities.human.audience import AlreadyAnswered, NotAnApprover, PauseAssigned
from symfonic.errors import SymfonicError
from symfonic.platform.continuation import (
    AgentNotServed,
    AnswerInvalid,
    ClaimLost,
    ContinuationUnavailable,
    IncompatibleDefinition,
    MalformedPauseToken,
    OutcomeUnknown,
    PauseAlreadyResumed,
    PauseExpired,
    PauseRevoked,
    RecoveryRefused,
    UnknownPauseToken,
)
from symfonic.services.conversation import StoreUnavailable

logger = logging.getLogger("symfonic.http")
UNKNOWN_PAUSE = "no such pause in this tenant"
HANDLED: tuple[type[Exception], ...] = (
    UnknownPauseToken, AnswerInvalid, IncompatibleDefinition, ContinuationUnavailable,
    SessionAwaitingAnswer, StoreUnavailable, ClaimLost, OutcomeUnknown, RecoveryRefused,
    NotAnApprover, AlreadyAnswered, PauseAssigned)
RETRY_LATER = {"Retry-After": "5"}
"""The core's refusals this module maps."""


class Refusal(SymfonicError):
    """A refusal decided by the transport itself (keys, tenants, sizes)."""

    def __init__(self, status: int, error: str, detail: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.headers = headers


INTERRUPTED = "run_interrupted"


def run_interrupted() -> Refusal:
    """The service stopped before the run ended: the grace period of its shutdown ran out and
    the run was cancelled (a resumed turn's pause is then given back or marked interrupted by the
    continuation; the pause's ticket says which).

    A :class:`Refusal` rather than a class of its own: every error class is drawn in the one tree
    of :mod:`symfonic.errors`, and this one is told apart by its code, like the other refusals.
    """
    return Refusal(503, INTERRUPTED, "the service shut down before this run ended, and cancelled it")


REFUSALS: tuple[type[Exception], ...] = (Refusal, *HANDLED)
"""Everything :func:`problem_of` answers for."""


def foreign_pause() -> Refusal:
    """A token of another tenant: answered exactly like a token nobody issued."""
    return Refusal(404, "unknown_pause", UNKNOWN_PAUSE)


@dataclass(frozen=True)
class Problem:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] | None = field(default=None)


def problem_of(error: Exception) -> Problem:
    """The response for ``error``; chosen by its type, most specific first.

    Raises:
        TypeError: ``error`` is not a refusal this transport maps (a bug, left to become a 500).
    """
    detail = str(error)
    match error:
        case Refusal():
            return Problem(error.status, _body(error.error, error.detail), error.headers)
        case MalformedPauseToken():
            logger.error("malformed pause token refused: %s (%s)", detail, type(error).__name__)
            return Problem(400, _body("malformed_token", detail))
        case PauseExpired():
            return Problem(410, _body("pause_expired", detail))
        case PauseRevoked():
            return Problem(410, _body("pause_revoked", detail))
        case PauseAlreadyResumed():
            return Problem(409, {**_body("pause_already_resumed", detail), "status": error.status,
                                 "outcome": error.outcome})
        case UnknownPauseToken():
            return Problem(404, _body("unknown_pause", UNKNOWN_PAUSE))
        case AnswerInvalid():
            return Problem(422, {**_body("answer_invalid", detail), "errors": error.errors})
        case NotAnApprover():
            return Problem(403, {**_body("not_an_approver", detail), "reason": error.reason})
        case AlreadyAnswered():
            return Problem(409, _body("already_answered_by_you", detail))
        case PauseAssigned():
            return Problem(409, {**_body("pause_assigned", detail), "assignee": error.assignee,
                                 "until": error.until})
        case IncompatibleDefinition():
            return Problem(409, _body("incompatible_definition", detail))
        case AgentNotServed():
            return Problem(404, _body("unknown_agent", detail))
        case ContinuationUnavailable():
            return Problem(503, _body("continuation_unavailable", detail), RETRY_LATER)
        case StoreUnavailable():
            return Problem(503, _body("store_unavailable", detail), RETRY_LATER)
        case ClaimLost():
            return Problem(503, _body("claim_lost", detail))
        case OutcomeUnknown():
            return Problem(500, {**_body("outcome_unknown", detail), "interrupted": error.jti})
        case RecoveryRefused():
            return Problem(409, {**_body("recovery_refused", detail), "status": error.status})
        case SessionAwaitingAnswer():
            return Problem(409, _body("session_awaiting_answer", detail))
    raise TypeError(f"no HTTP mapping for {type(error).__name__}") from error


def _body(error: str, detail: str) -> dict[str, Any]:
    return {"error": error, "detail": detail}


def respond(problem: Problem) -> JSONResponse:
    return JSONResponse(problem.body, status_code=problem.status, headers=problem.headers)


_HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 406: "not_acceptable", 413: "body_too_large",
               415: "unsupported_media_type"}


def install(app: FastAPI) -> None:
    """Route every refusal through :func:`problem_of`, and give framework errors the same shape."""

    async def refused(_: Request, error: Exception) -> JSONResponse:
        return respond(problem_of(error))

    async def invalid_request(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        errors = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))}
                  for e in error.errors()]
        return JSONResponse({**_body("request_invalid", "the request does not fit its schema"),
                             "errors": errors}, status_code=422)

    async def http_error(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, StarletteHTTPException)
        code = _HTTP_CODES.get(error.status_code, f"http_{error.status_code}")
        return JSONResponse(_body(code, str(error.detail)), status_code=error.status_code,
                            headers=error.headers)

    for kind in REFUSALS:
        app.add_exception_handler(kind, refused)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(StarletteHTTPException, http_error)
