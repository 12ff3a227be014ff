"""The composition root of an agent used without a host.

``Agent(spec, scope=...)`` works alone, for a notebook, a test or a script: its transcripts live
in memory (a paused turn's messages included, so the conversation goes on after it), and its
pauses are published with ``resumable=False``, because nothing durable backs them and no host is
there to resume them. Everything the host adds (a store, a ledger, signing keys, listeners) is
absent on purpose rather than stubbed.
"""

from __future__ import annotations

from symfonic.kernel.events import RunEvent
from symfonic.kernel.plan import Services
from symfonic.kernel.scope import Scope
from symfonic.kernel.stages import TurnRequest
from symfonic.platform.background import SubmittedRun
from symfonic.platform.continuation import ContinuationUnavailable
from symfonic.stores.memory import MemoryStore
from symfonic.stores.memory.transcripts import MemoryTranscripts


class MemoryRuntime:
    """The runtime of an agent used alone: an in-memory transcript, no durable pauses."""

    def __init__(self) -> None:
        self._store = MemoryStore()

    @property
    def transcripts(self) -> MemoryTranscripts:
        return self._store.transcripts

    @property
    def ledger_backed(self) -> bool:
        """No ledger: the agent keeps its paused turns' messages itself."""
        return False

    def services(self, spec: object, request: TurnRequest,
                 resumed_from: str | None = None) -> Services:
        """No pause wiring: the human capability then binds the run to itself (``unwired``)."""
        return Services()

    async def session_paused(self, scope: Scope, session_id: str) -> bool:
        """Never: a pause here is not resumable, so it does not hold its session."""
        return False

    def published(self, terminal: RunEvent) -> None:
        """An agent alone has nobody to tell."""

    async def submit(self, agent: str, input: str | None, *, session_id: str) -> SubmittedRun:
        """Refused: background runs need a host with workers.

        Raises:
            ContinuationUnavailable: always.
        """
        raise ContinuationUnavailable("background runs need an agent of a host with workers: "
                                      "Host.open(..., workers=N)")
