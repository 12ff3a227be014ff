"""From a person's answer to what the model reads.

The answer was validated (:meth:`InteractionSpec.check_answer`) before the pause was claimed; here
it only becomes a decision on the paused call: a result to append (a question's answer, a typed
answer as JSON, a rejection with its reason), an approval that lets the gated tool run, once,
with the approved (possibly edited) arguments, or, for a tool that asked mid-call, the call
continued with the answer and the state the tool stopped with.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from symfonic.capabilities.human.errors import AnswerInvalid
from symfonic.capabilities.human.typed_interrupts import ApprovalAnswer, InteractionSpec
from symfonic.kernel.messages import ToolCall
from symfonic.kernel.stages import AnsweredCall, ApprovedCall, ContinuedCall, Resolution
from symfonic.kernel.tool_contract import ToolArgumentsInvalid


def project(spec: InteractionSpec, call: ToolCall, answer: Any, *,
            call_state: dict[str, Any] | None = None, earlier: Resolution | None = None) -> Resolution:
    """The decision ``answer`` makes on ``call`` (``call_state``: what a tool that asked mid-call
    stored; ``earlier``: the call's decision before it asked, whose arguments it ran with).

    An answer that has not been through :meth:`InteractionSpec.check_answer` is checked here:
    the decision never rests on the caller having done it (nor on an ``assert``, which ``python
    -O`` removes).

    Raises:
        AnswerInvalid: an answer the interaction's schema refuses, or edited arguments that the
            gated tool's schema refuses.
    """
    if spec.purpose == "tool_input":
        ran_with = earlier.arguments if isinstance(earlier, ApprovedCall | ContinuedCall) else None
        return ContinuedCall(call_id=call.id, arguments=dict(ran_with or call.arguments),
                             continuation={"state": call_state or {}, "answer": answer})
    if spec.purpose == "approval":
        if not isinstance(answer, ApprovalAnswer):
            answer = spec.check_answer(answer)
        if not answer.approved:
            reason = answer.reason or "no reason given"
            return AnsweredCall(call_id=call.id, content=(
                f"The person rejected this call of {call.name!r}; it did not run. Reason: {reason}"))
        arguments = call.arguments if answer.arguments is None else answer.arguments
        try:
            spec.tool.validate(dict(arguments))
        except ToolArgumentsInvalid as invalid:
            raise AnswerInvalid(f"the edited arguments do not fit {call.name!r}: {invalid}",
                                [{"loc": ["arguments"], "msg": str(invalid)}]) from None
        return ApprovedCall(call_id=call.id, arguments=dict(arguments))
    if isinstance(answer, BaseModel):
        return AnsweredCall(call_id=call.id, content=answer.model_dump_json())
    return AnsweredCall(call_id=call.id, content=answer if isinstance(answer, str)
                        else json.dumps(answer))
