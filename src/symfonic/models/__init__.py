"""The model port and the models that need nothing beyond the standard library.

:class:`Model` is the one port the turn loop calls (declared in :mod:`symfonic.kernel.model`, so
the kernel imports nothing above it). :class:`FunctionModel` and :class:`ScriptedModel` are the
stand-ins for tests and demos. Adapters for model providers live in their own modules and import
their SDK only there.
"""

from symfonic.kernel.messages import StreamItem, TextChunk
from symfonic.kernel.model import Model, ModelError, ModelProtocolError, complete
from symfonic.models.base import CompleteOnlyModel
from symfonic.models.function import FunctionModel, ModelPolicy
from symfonic.models.scripted import ScriptedModel, ScriptExhausted

__all__ = [
    "CompleteOnlyModel",
    "FunctionModel",
    "Model",
    "ModelError",
    "ModelPolicy",
    "ModelProtocolError",
    "ScriptExhausted",
    "ScriptedModel",
    "StreamItem",
    "TextChunk",
    "complete",
]
