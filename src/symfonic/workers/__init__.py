"""Background runs on DBOS workers (``pip install 'symfonic-runtime[workers]'``).

``Host.open(..., workers=N)`` starts DBOS with the host: turn segments (a new run, a resume) are
queued as DBOS workflows and run by this process (``N`` at once per agent) or by any
``symfonic worker`` on the same database. Model calls and tool calls are steps, so a worker that
dies mid-turn is replayed by another without asking the model again for what it answered, or
running a tool again that finished (:mod:`.steps`); symfonic's ledger stays the authority on every
pause (:mod:`.engine`), and a replay returns what a finished turn stored instead of running it
again (:mod:`.replayed`). Dead workers are found by :mod:`.liveness`; runs are submitted, watched
and drained through :mod:`.runs`; what DBOS stores is versioned JSON (:mod:`.serializing`).

Only :class:`WorkerOptions` is imported here, so naming it costs nothing; DBOS is imported when
a host with workers is made.
"""

from __future__ import annotations

from symfonic.workers.options import WorkerOptions

__all__ = ["WorkerOptions"]
