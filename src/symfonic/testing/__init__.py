"""Test doubles and the store conformance suite, for symfonic's tests and for users' own.

- :class:`ManualClock`: an injectable clock, so tests of expiry move time instead of sleeping.
- :mod:`symfonic.testing.conformance`: the behaviours every store adapter must show; subclass
  :class:`~symfonic.testing.conformance.StoreConformance` with a ``store`` fixture to run it.
- ``FunctionModel`` / ``ScriptedModel`` (re-exported from :mod:`symfonic.models`) and the in-memory
  store.
"""

from symfonic.models import FunctionModel, ScriptedModel
from symfonic.stores.memory import MemoryStore
from symfonic.testing.clock import ManualClock

__all__ = ["FunctionModel", "ManualClock", "MemoryStore", "ScriptedModel"]
