"""A2A: every agent of a host served over the Agent2Agent protocol, on the official ``a2a-sdk``.

``pip install 'symfonic-runtime[a2a]'``. Nothing here is imported by ``import symfonic``.

An A2A task in state ``input-required`` *is* a symfonic pause: durable, tenant-bound, answered at
most once. The SDK owns the wire (its JSON-RPC and HTTP+JSON bindings, its types, its client);
symfonic plugs in behind its :class:`~a2a.server.request_handlers.RequestHandler`
(:mod:`.handler`), and the ledger stays the authority on every task's state (:mod:`.views`).
See ``docs/a2a.md``.
"""

from __future__ import annotations

try:
    import a2a  # noqa: F401
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise ImportError("A2A support needs its extra: pip install 'symfonic-runtime[a2a]'") from missing

from symfonic.transports.a2a.card import agent_card
from symfonic.transports.a2a.handler import SymfonicRequestHandler
from symfonic.transports.a2a.integers import data_of
from symfonic.transports.a2a.mount import PREFIX, mount_a2a

__all__ = ["PREFIX", "SymfonicRequestHandler", "agent_card", "data_of", "mount_a2a"]
