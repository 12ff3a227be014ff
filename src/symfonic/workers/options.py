"""How a host runs background turns: :class:`WorkerOptions`, defined with the platform's view of
background runs (:mod:`symfonic.platform.background`), where the host can name it without
importing the workers, and importable from here as it always was.
"""

from __future__ import annotations

from symfonic.platform.background import WorkerOptions

__all__ = ["WorkerOptions"]
