"""The ``requestState`` of an input-required tool call: the pause's token, and nothing else.

A client keeps this string (in memory, or on disk across its own restarts) and sends it back
verbatim with its answer. It is ``symfonic.pause.v1.`` followed by the pause token the turn
returned: the very token the HTTP API, the inbox and A2A answer with, so the MCP transport holds
no state of its own and any server on the same database and secret accepts it.

Why the SDK's :class:`~mcp.server.request_state.RequestStateSecurity` is *not* layered on top:
the token is already what the spec asks of a request state. It is signed with the host's secret
(HS256; a changed byte is refused), bound to its tenant (the scope is a signed claim, checked
against the API key's before anything is read), expires with its pause (each interaction has its
own TTL), and is answered at most once (the ledger's claim). Sealing it again would add a second
key ring to rotate and a second expiry, one TTL for every pause, that would either cut long
pauses short or outlive short ones, while the SDK's boundary hides every refusal behind one
reason; and the principal it binds to is the SDK's OAuth identity, which these API keys are not.
The continuation stays the one place that verifies a pause (DESIGN §9, "a transport translates,
it never decides").

Versions:

- 1: ``symfonic.pause.v1.<token>``.

A state of an unknown version is refused like any other unreadable state, so a newer server's
states never half-work on an older one.
"""

from __future__ import annotations

PREFIX = "symfonic.pause.v1."
"""The version tag every state this transport issues starts with."""


def state_of(token: str) -> str:
    """The ``requestState`` that carries ``token``."""
    return PREFIX + token


def token_in(state: str) -> str | None:
    """The pause token ``state`` carries (verifying it is the continuation's job); None when
    ``state`` is not of a version this transport reads."""
    if not state.startswith(PREFIX) or len(state) == len(PREFIX):
        return None
    return state[len(PREFIX):]
