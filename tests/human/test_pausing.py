"""The pause stage of seed 000, behaviour by behaviour, against a recording capability."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from symfonic import Scope
from symfonic.capabilities.human import HumanInteractionError
from symfonic.capabilities.human.issuing import PauseEvent
from symfonic.capabilities.human.pausing import PauseBinding, TurnDraft, pause_handler
from symfonic.capabilities.human.tokens import IssuedPause, PauseClaims
from symfonic.kernel.interrupts import InvocationPaused
from symfonic.kernel.messages import Message, ToolCall
from symfonic.kernel.stages import AnsweredCall, StageContext, TurnRequest

ACME = Scope(tenant="acme")


@dataclass
class RecordingCapability:
    """Registers ``ask_user`` and ``approve_me``; records every pause it is asked for."""

    resumable: bool = True
    refuse: Exception | None = None
    pauses: list[dict[str, Any]] = field(default_factory=list)

    def names(self) -> frozenset[str]:
        return frozenset({"ask_user", "approve_me"})

    def stamp(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"interrupt": name, "schema_version": 3, "issued_at": 99.0, "question": payload}

    async def pause(self, **kwargs: Any) -> PauseEvent:
        if self.refuse is not None:
            raise self.refuse
        self.pauses.append(kwargs)
        claims = PauseClaims(jti="jti-1", scope=kwargs["scope"].to_claim(), run=kwargs["run_id"],
                             root_run=kwargs["root_run_id"], session=kwargs["session_id"],
                             thread=kwargs["thread_id"], checkpoint="cp", name=kwargs["name"],
                             tool_call_id=kwargs["tool_call_id"], pin="p", iat=1, exp=1234)
        return PauseEvent(pause=IssuedPause(claims=claims), payload=kwargs["payload"],
                          tool_call_id=kwargs["tool_call_id"], interrupt_id="jti-1",
                          run_id=kwargs["run_id"], session_id=kwargs["session_id"],
                          resumable=self.resumable)


def binding(**overrides: Any) -> PauseBinding:
    values: dict[str, Any] = {"pin": "agent@1", "scope": ACME, "run_id": "run-2",
                              "root_run_id": "root-0", "session_id": "s", "thread_id": "t",
                              "checkpoint_id": None}
    return PauseBinding(**{**values, **overrides})


def context(*calls: ToolCall, root: str = "request-root") -> StageContext:
    request = TurnRequest(run_id="run-2", root_run_id=root, session_id="s", thread_id="t",
                          scope=ACME)
    return StageContext(request=request, requests=calls, round=calls, transcript_position=4,
                        unsaved=(Message("assistant", "", calls),),
                        resolved={"old": AnsweredCall(call_id="old", content="x")})


ASK = ToolCall(id="c-ask", name="ask_user", arguments={"question": "Which?"})
APPROVE = ToolCall(id="c-approve", name="approve_me", arguments={"amount": 3})
OTHER = ToolCall(id="c-other", name="lookup", arguments={})


async def run_stage(capability: RecordingCapability, ctx: StageContext,
                    resolved: PauseBinding | None = None) -> Any:
    handle = pause_handler(capability, lambda: resolved or binding(), lambda p: f"token:{p.claims.jti}")
    return await handle(ctx)


async def test_a_round_without_a_registered_interaction_is_left_alone() -> None:
    capability = RecordingCapability()
    result = await run_stage(capability, context(OTHER))
    assert not result.changed and "no registered interaction" in result.reason
    assert capability.pauses == []


async def test_no_binding_declines_with_a_reason_and_pauses_nothing() -> None:
    capability = RecordingCapability()
    handle = pause_handler(capability, lambda: None, lambda p: "never")
    result = await handle(context(ASK))
    assert not result.changed and "no pause binding" in result.reason
    assert capability.pauses == []


async def test_only_the_first_interaction_of_a_round_pauses() -> None:
    capability = RecordingCapability()
    with pytest.raises(InvocationPaused) as paused:
        await run_stage(capability, context(OTHER, APPROVE, ASK))
    assert [p["tool_call_id"] for p in capability.pauses] == ["c-approve"]
    assert paused.value.interrupt.tool_call_id == "c-approve"


async def test_the_turn_state_holds_every_call_of_the_round_and_its_decisions() -> None:
    capability = RecordingCapability()
    with pytest.raises(InvocationPaused):
        await run_stage(capability, context(OTHER, ASK))
    draft: TurnDraft = capability.pauses[0]["turn_state"]
    assert draft.round == (OTHER, ASK)
    assert draft.transcript_position == 4 and len(draft.unsaved) == 1
    assert set(draft.resolved) == {"old"}


async def test_a_human_interaction_error_is_a_decline_carrying_its_reason() -> None:
    capability = RecordingCapability(refuse=HumanInteractionError("question: Field required"))
    result = await run_stage(capability, context(ASK))
    assert not result.changed
    assert "'ask_user' pause was refused" in result.reason
    assert "question: Field required" in result.reason


async def test_any_other_error_propagates() -> None:
    capability = RecordingCapability(refuse=TypeError("miswired port"))
    with pytest.raises(TypeError, match="miswired"):
        await run_stage(capability, context(ASK))


@pytest.mark.parametrize(("bound_root", "request_root", "expected"), [
    ("root-0", "request-root", "root-0"),
    ("", "request-root", "request-root"),
    ("", "", "run-2"),
])
async def test_the_root_run_falls_back_to_the_requests_then_to_the_run(
        bound_root: str, request_root: str, expected: str) -> None:
    capability = RecordingCapability()
    with pytest.raises(InvocationPaused):
        await run_stage(capability, context(ASK, root=request_root),
                        binding(root_run_id=bound_root))
    assert capability.pauses[0]["root_run_id"] == expected


@pytest.mark.parametrize(("call", "kind"), [(ASK, "ask_user"), (APPROVE, "interrupt")])
async def test_kind_is_ask_user_only_for_ask_user(call: ToolCall, kind: str) -> None:
    with pytest.raises(InvocationPaused) as paused:
        await run_stage(RecordingCapability(), context(call))
    assert paused.value.interrupt.kind == kind


@pytest.mark.parametrize("resumable", [True, False])
async def test_resumable_is_copied_from_the_capabilitys_report(resumable: bool) -> None:
    with pytest.raises(InvocationPaused) as paused:
        await run_stage(RecordingCapability(resumable=resumable), context(ASK))
    assert paused.value.interrupt.resumable is resumable


async def test_the_interrupt_carries_the_binding_the_stamp_and_the_token() -> None:
    capability = RecordingCapability()
    with pytest.raises(InvocationPaused) as paused:
        await run_stage(capability, context(ASK))
    interrupt = paused.value.interrupt
    assert interrupt.token == "token:jti-1" and interrupt.expires_at == 1234.0
    assert interrupt.payload == {"interrupt": "ask_user", "schema_version": 3, "issued_at": 99.0,
                                 "question": {"question": "Which?"}}
    sent = capability.pauses[0]
    assert (sent["pin"], sent["scope"], sent["session_id"], sent["thread_id"]) == (
        "agent@1", ACME, "s", "t")
    assert sent["checkpoint_id"] is None and sent["name"] == "ask_user"


async def test_the_binding_is_resolved_on_every_round() -> None:
    capability = RecordingCapability()
    bindings = iter([binding(run_id="first"), binding(run_id="second")])
    handle = pause_handler(capability, lambda: next(bindings), lambda p: "t")
    for _ in range(2):
        with pytest.raises(InvocationPaused):
            await handle(context(ASK))
    assert [p["run_id"] for p in capability.pauses] == ["first", "second"]
