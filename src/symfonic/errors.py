"""The one root of every error symfonic raises, and the whole tree drawn once.

``except SymfonicError`` catches anything the library raises on purpose, and nothing else: a
``KeyError`` from a user's tool or a driver's own exception never arrives under this root, because
the adapters translate what they catch. Each class also keeps the standard base its meaning calls
for (the seeds give ``UnknownPauseToken`` a ``LookupError`` base and ``ContinuationUnavailable`` a
``RuntimeError`` one), so code written against the builtins keeps working.

The classes live beside the code that raises them; this drawing is the one place that shows them
together, and ``tests/test_errors.py`` fails when the drawing and the classes disagree. Every class
here is importable from :mod:`symfonic`, except those marked (HTTP), (oidc), (email), (ag-ui),
(mcp) or (serve), which need an extra. Signals are not errors and are not drawn:
:class:`~symfonic.kernel.interrupts.InvocationPaused` stops a run for a person and is never seen
outside it.

::

    SymfonicError
    ├── UnknownPauseToken(LookupError)        the token names no resumable turn
    │   ├── PauseExpired                      ordinary: the conversation moved on (404/410)
    │   ├── MalformedPauseToken               a bug in whoever minted or carried it (400)
    │   │   ├── ForgedPauseToken              the signature does not verify
    │   │   └── UnknownSigningKey             signed under a key id this host does not hold
    │   ├── PauseAlreadyResumed               a second resume (409); carries the first's outcome
    │   └── PauseRevoked                      withdrawn by an operator
    ├── ContinuationUnavailable(RuntimeError) this host cannot continue turns
    │   └── AgentNotServed                    the agent is not registered on this host
    ├── IncompatibleDefinition(RuntimeError)  the agent changed since it paused, and refuses the pause
    ├── OutcomeUnknown(RuntimeError)          the answer was applied; the outcome could not be stored
    ├── ClaimLost(RuntimeError)               the resumer's lease lapsed mid-turn; it stopped
    ├── RecoveryRefused(RuntimeError)         only an interrupted turn can be recovered
    ├── AnswerInvalid(ValueError)             a person's answer fails the pause's schema; nothing claimed
    ├── NotAnApprover(PermissionError)        the caller is not among who may answer (403); nothing claimed
    ├── AlreadyAnswered(RuntimeError)         a person's second approval of the same arguments (409)
    ├── PauseAssigned(RuntimeError)           another person took the pause for review (409)
    ├── SessionAwaitingAnswer(RuntimeError)   a new turn on a session whose turn is paused
    ├── HumanInteractionError(ValueError)     the model asked wrongly; the pause stage declines
    │   ├── InteractionPayloadInvalid         the question does not fit the interrupt's schema
    │   └── NoCheckpointAvailable             nothing names the checkpoint the pause would bind to
    ├── TokenRejected(ValueError)             offline token verification failed (mapped by the host)
    ├── StoreError(RuntimeError)              a store failed; the driver's exception is chained
    │   ├── TranscriptConflict                another writer took the session's position
    │   ├── StoreUnavailable                  the store could not be reached within its timeout
    │   └── StoredFormatError                 stored data is newer than this code, or damaged
    │       └── TurnStateFormatError          a stored turn state, specifically
    ├── ModelError(RuntimeError)              the model could not answer; the run fails with it
    │   ├── ModelProtocolError                the model broke the reply protocol (no reply, reused id)
    │   ├── OutputInvalid                     the final answer failed the output type twice
    │   ├── ProviderError                     a provider refused or failed; .provider, .status_code
    │   │   ├── ModelRateLimited              429 after the SDK's retries
    │   │   ├── ModelUnavailable              5xx, connection, timeout, or a stream cut mid-way
    │   │   ├── ModelRejected                 another 4xx: a bad request, a context too long
    │   │   └── ModelAuthFailed               401/403: a missing or wrong key
    │   └── ScriptExhausted                   a scripted model ran out of replies
    ├── ToolArgumentsInvalid(ValueError)      the model's arguments fail the tool's schema
    ├── ToolTimedOut(TimeoutError)            a tool ran past its timeout (a tool error for the model)
    ├── TurnTimedOut(TimeoutError)            a turn ran past the agent's turn_timeout
    ├── DuplicateToolName(ValueError)         two tools of one plan share a name
    ├── RoundLimitExceeded(RuntimeError)      the model kept calling tools past the round limit
    ├── Refusal                               (HTTP) a request refused with a status and a problem body
    ├── DeliveryFailed                        (HTTP) one webhook delivery attempt failed
    ├── NotStrictJSON(ValueError)             (HTTP) a body holds NaN, infinity or a repeated key
    ├── OutboundRefused(ValueError)           (HTTP) a webhook or push URL may not be reached
    ├── SurfaceUnavailable(ImportError)       (HTTP) a protocol asked to be served lacks its extra
    ├── OIDCError(PermissionError)            (oidc) a single sign-on refused, and why
    ├── LinkRefused(PermissionError)          (email) an emailed inbox link signs nobody in
    ├── ResumeRefused(ValueError)             (ag-ui) a resume[] that cannot be applied; nothing answered
    ├── MCPToolError                          (mcp) an MCP tool failed; the model reads why
    ├── MCPConnectionError                    (mcp) an MCP server could not be reached
    └── TelemetryExtraMissing(ImportError)    (serve) OTEL_* asks for an export; no [otel] extra
"""

from __future__ import annotations

__all__ = ["SymfonicError"]


class SymfonicError(Exception):
    """Base of every error symfonic raises; see the module docstring for the whole tree."""
