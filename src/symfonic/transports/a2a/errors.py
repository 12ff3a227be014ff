"""symfonic's typed refusals as A2A errors, in one place, by type (never by message).

====================================  ===============================  ==========================
refusal                               A2A error (JSON-RPC code)        ``data``/metadata ``error``
====================================  ===============================  ==========================
UnknownPauseToken, another tenant's   TaskNotFoundError (-32001)       (none: the same answer)
PauseAlreadyResumed                   UnsupportedOperationError        ``pause_already_resumed``
                                      (-32004)                         + ``status``
PauseExpired                          UnsupportedOperationError        ``pause_expired``
PauseRevoked                          UnsupportedOperationError        ``pause_revoked``
AnswerInvalid                         InvalidParamsError (-32602)      ``answer_invalid``
                                                                       + ``problems``
SessionAwaitingAnswer                 InvalidRequestError (-32600)     ``session_awaiting_answer``
NotAnApprover                         InvalidRequestError (-32600)     ``not_an_approver``
                                                                       + ``reason``
AlreadyAnswered                       InvalidRequestError (-32600)     ``already_answered_by_you``
PauseAssigned                         InvalidRequestError (-32600)     ``pause_assigned``
IncompatibleDefinition                UnsupportedOperationError        ``incompatible_definition``
MalformedPauseToken                   InternalError (-32603)           ``malformed_token``
ContinuationUnavailable, store down   InternalError (-32603)           ``continuation_unavailable``
====================================  ===============================  ==========================

A second answer to a task is *refused*, never answered with the task as if it had worked: A2A's
``UnsupportedOperationError`` is what the protocol prescribes for a message a task can no longer
take, and its metadata says why (``error``) and what became of the first answer (``status``).
Metadata values are strings: the protocol carries them in a ``google.rpc.ErrorInfo``.
"""

from __future__ import annotations

import logging

from a2a.utils.errors import (
    A2AError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from symfonic import (
    AlreadyAnswered,
    AnswerInvalid,
    ContinuationUnavailable,
    IncompatibleDefinition,
    MalformedPauseToken,
    NotAnApprover,
    PauseAlreadyResumed,
    PauseAssigned,
    PauseExpired,
    PauseRevoked,
    SessionAwaitingAnswer,
    StoreError,
    UnknownPauseToken,
)

logger = logging.getLogger("symfonic.a2a")
UNKNOWN_TASK = "no such task in this tenant"
"""The one message of every unknown task, whether it does not exist or is another tenant's."""


def unknown_task() -> TaskNotFoundError:
    return TaskNotFoundError(UNKNOWN_TASK)


def a2a_error(refusal: Exception, task_id: str = "") -> A2AError:
    """The A2A error a symfonic refusal is answered with (see the module's table).

    Raises:
        Exception: ``refusal`` itself when it is none of symfonic's refusals (a bug to surface).
    """
    task = f"task {task_id}" if task_id else "the task"
    match refusal:
        case PauseAlreadyResumed():
            return UnsupportedOperationError(
                f"{task} was already answered (the first answer is {refusal.status}); this "
                "answer was not applied",
                data={"error": "pause_already_resumed", "status": str(refusal.status)})
        case PauseExpired():
            return UnsupportedOperationError(f"{task}'s question expired unanswered",
                                             data={"error": "pause_expired"})
        case PauseRevoked():
            return UnsupportedOperationError(f"{task} was canceled; its question is withdrawn",
                                             data={"error": "pause_revoked"})
        case MalformedPauseToken():
            logger.error("a stored A2A task names a pause its token cannot verify: %s", refusal)
            return InternalError("the task's pause cannot be verified",
                                 data={"error": "malformed_token"})
        case UnknownPauseToken():
            return unknown_task()
        case AnswerInvalid():
            return InvalidParamsError(
                f"the answer does not fit the question's answer schema: {refusal}; the task is "
                "still waiting for input",
                data={"error": "answer_invalid",
                      "problems": "; ".join(f"{'.'.join(map(str, e.get('loc', [])))}: {e['msg']}"
                                          for e in refusal.errors)})
        case AlreadyAnswered():
            return InvalidRequestError(f"{task}: {refusal}; it is still waiting for input",
                                       data={"error": "already_answered_by_you"})
        case PauseAssigned():
            return InvalidRequestError(f"{task}: {refusal}; it is still waiting for input",
                                       data={"error": "pause_assigned",
                                             "assignee": refusal.assignee, "until": refusal.until})
        case NotAnApprover():
            return InvalidRequestError(f"{task} may not be answered by this caller: {refusal}; "
                                       "it is still waiting for input",
                                       data={"error": "not_an_approver", "reason": refusal.reason})
        case SessionAwaitingAnswer():
            return InvalidRequestError(
                f"context {refusal.session_id} has a task waiting for input: answer it (send the "
                "message with its taskId) or cancel it first",
                data={"error": "session_awaiting_answer"})
        case IncompatibleDefinition():
            return UnsupportedOperationError(str(refusal), data={"error": "incompatible_definition"})
        case ContinuationUnavailable() | StoreError():
            return InternalError(f"the store cannot be reached now; nothing was applied: {refusal}",
                                 data={"error": "continuation_unavailable"})
    raise refusal
