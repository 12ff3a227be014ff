"""The model port and its adapters.

``FunctionModel`` and ``ScriptedModel`` need nothing beyond the standard library; adapters for real
model servers live in their own modules and import their HTTP client only when used.
"""

from symfonic.models.base import Model, ModelError, StreamItem, TextChunk
from symfonic.models.function import FunctionModel, ModelPolicy
from symfonic.models.scripted import ScriptedModel, ScriptExhausted

__all__ = [
    "FunctionModel",
    "Model",
    "ModelError",
    "ModelPolicy",
    "ScriptExhausted",
    "ScriptedModel",
    "StreamItem",
    "TextChunk",
]
