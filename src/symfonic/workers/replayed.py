"""What a segment's earlier attempt already stored: a finished turn is never run again.

A segment ends in two commits that no transaction joins: symfonic stores the turn's end (a pause
issued with its messages, a completion recorded on the resumed pause), then DBOS records the
workflow's output. A worker that dies between the two leaves a segment DBOS still sees running,
and replays it; run again, the turn would be refused by what it stored itself (a session awaiting
its own pause, a pause already resumed by its own claim) and the run would read ``failed``
although its pause or its completion is stored. So a replay first asks symfonic's store what this
run id already stored, and returns that outcome instead of running anything:

- **a new run** (``symfonic.run``): the first attempt recorded, as a step, how long the session's
  transcript was before the turn. Longer now means the turn stored its end: the pause issued by
  this run id (the ledger row names its run) is the outcome; without one, a last assistant answer
  is the completion; anything else is a turn that failed and kept its messages.
- **a resume or a recovery** (``symfonic.resume``, ``symfonic.recover``): the pause's own row
  says ``completed``, ``paused_again`` or ``failed``, with the run id of the segment that stored
  it: this one's, or someone else's (a synchronous answer, or recovery, that won after this
  segment's first attempt died before its claim).

What cannot be read back is said so: a completion found in the transcript carries no usage or
parsed ``value`` (they were in the lost output); the run's event stream may lack its terminal
event (the ``status`` of ``GET /v1/runs/{id}`` has it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.messages import Usage
from symfonic.kernel.scope import Scope
from symfonic.outcome import RunOutcome
from symfonic.platform.tickets import claims_of
from symfonic.services.ledger import Listing, PageAfter, PauseRecord

if TYPE_CHECKING:
    from symfonic.platform.host import Host

PAGE = 200
"""Pauses read per page while looking for a run's own (a replay's path only, never a run's)."""


async def transcript_length(host: Host, scope: Scope, session_id: str) -> int:
    """The session's stored length, read from the store itself (not this host's cache: the
    attempt that stored more may have run in another process)."""
    store = await host.store()
    return len(await store.transcripts.load(scope, session_id))


async def stored_run(host: Host, scope: Scope, session_id: str, run_id: str,
                     started_at: int) -> RunOutcome | None:
    """The outcome a new run's earlier attempt stored; None when it stored no end (run it)."""
    store = await host.store()
    history = await store.transcripts.load(scope, session_id)
    if len(history) <= started_at:
        return None
    pause = await _pause_of_run(host, scope, run_id)
    if pause is not None:
        return RunOutcome(status="paused", run_id=run_id, session_id=session_id,
                          interrupt=pending(host, pause))
    last = history[-1]
    if last.role == "assistant" and not last.tool_calls:
        return RunOutcome(status="completed", run_id=run_id, session_id=session_id,
                          output=last.content)
    return RunOutcome(status="failed", run_id=run_id, session_id=session_id,
                      error="the turn failed before its worker stopped; its messages are stored "
                            "(continue the session with a new run)", error_type="ReplayedTurn")


async def stored_resume(host: Host, jti: str, run_id: str) -> RunOutcome | None:
    """The outcome a resume or recovery segment stored on its pause; None when the row holds
    none of this run's (still claimable, claimed, or finished by another resumer)."""
    store = await host.store()
    record = await store.ledger.get(jti)
    outcome: dict[str, Any] = (record.outcome if record is not None else None) or {}
    if record is None or record.status not in ("completed", "paused_again", "failed"):
        return None
    usage = Usage.from_dict(outcome.get("usage") or {})
    if record.status == "completed" and outcome.get("run_id") == run_id:
        return RunOutcome(status="completed", run_id=run_id, session_id=record.session_id,
                          output=outcome.get("output"), usage=usage)
    if record.status == "failed" and outcome.get("run_id") == run_id:
        return RunOutcome(status="failed", run_id=run_id, session_id=record.session_id,
                          error=str(outcome.get("error")), usage=usage)
    if record.status == "paused_again":
        following = await store.ledger.get(str(outcome.get("next_pause")))
        if following is not None and following.run_id == run_id:
            return RunOutcome(status="paused", run_id=run_id, session_id=record.session_id,
                              interrupt=pending(host, following))
    return None


def pending(host: Host, record: PauseRecord) -> PendingInterrupt:
    """The pause as its run published it: the same token (a token signs the row's claims)."""
    return PendingInterrupt(name=record.name, kind="ask_user" if record.kind == "ask_user"
                            else "interrupt", payload=record.payload,
                            token=host.keys.encode(claims_of(record)),
                            tool_call_id=record.tool_call_id, interrupt_id=record.jti,
                            run_id=record.run_id, session_id=record.session_id,
                            expires_at=record.expires_at, resumable=True)


async def _pause_of_run(host: Host, scope: Scope, run_id: str) -> PauseRecord | None:
    """The pause ``run_id`` issued: outstanding, interrupted or answered since."""
    store, now = await host.store(), host.now()
    listings: tuple[Listing, ...] = ("outstanding", "interrupted")
    for status in listings:
        after: PageAfter | None = None
        while True:
            page = await store.ledger.pauses(scope, now, status=status, limit=PAGE, after=after)
            found = next((r for r in page if r.run_id == run_id), None)
            if found is not None or len(page) < PAGE:
                break
            after = (page[-1].issued_at, page[-1].jti)
        if found is not None:
            return found
    return next((r for r in await store.ledger.answered(scope, limit=PAGE) if r.run_id == run_id), None)
