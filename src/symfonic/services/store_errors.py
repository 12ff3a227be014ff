"""What a store raises: every adapter translates its driver's exceptions into these.

They sit apart from the ports that raise them so that every port, the turn state's codec
included, can name them without importing another port.
"""

from __future__ import annotations

from symfonic.errors import SymfonicError

__all__ = ["StoreError", "StoreUnavailable", "StoredFormatError", "TranscriptConflict"]


class StoreError(SymfonicError, RuntimeError):
    """A store failed; the driver's own exception is chained as ``__cause__``."""


class TranscriptConflict(StoreError):
    """A transcript append found the session's position taken by another writer."""


class StoreUnavailable(StoreError):
    """The store could not be reached within its timeout (a database down, a network cut).

    Bounded on purpose: a caller learns within seconds, not after a TCP timeout, and the host
    reports it as ``ContinuationUnavailable``, which an HTTP service answers with 503.
    """


class StoredFormatError(StoreError):
    """Stored data this code cannot read: written by a newer symfonic, or damaged.

    Refused rather than guessed at: a row misread by older code could resume the wrong call or
    show a person the wrong question. Upgrade symfonic (or restore the data) and try again.
    """
