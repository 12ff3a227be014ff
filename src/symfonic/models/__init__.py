"""The model port and the models that need nothing beyond the standard library.

:class:`Model` is the one port the turn loop calls (declared in :mod:`symfonic.kernel.model`, so
the kernel imports nothing above it). :class:`FunctionModel` and :class:`ScriptedModel` are the
stand-ins for tests and demos. The provider adapters live in their own modules and import their
SDK only there: ``symfonic.models.openai`` (``OpenAIResponsesModel``, ``OpenAIChatModel``; extra
``[openai]``) and ``symfonic.models.anthropic`` (``AnthropicModel``; extra ``[anthropic]``), or
by name through :func:`infer_model`.
"""

from symfonic.kernel.messages import ProviderItems, StreamItem, TextChunk, Usage
from symfonic.kernel.model import (
    Model,
    ModelError,
    ModelProtocolError,
    OutputInvalid,
    OutputSpec,
    complete,
)
from symfonic.models.base import CompleteOnlyModel
from symfonic.models.errors import (
    ModelAuthFailed,
    ModelRateLimited,
    ModelRejected,
    ModelUnavailable,
    ProviderError,
)
from symfonic.models.function import FunctionModel, ModelPolicy
from symfonic.models.names import infer_model
from symfonic.models.scripted import ScriptedModel, ScriptExhausted
from symfonic.models.settings import ModelSettings, ReasoningEffort

__all__ = [
    "CompleteOnlyModel",
    "FunctionModel",
    "Model",
    "ModelAuthFailed",
    "ModelError",
    "ModelPolicy",
    "ModelProtocolError",
    "ModelRateLimited",
    "ModelRejected",
    "ModelSettings",
    "ModelUnavailable",
    "OutputInvalid",
    "OutputSpec",
    "ProviderError",
    "ProviderItems",
    "ReasoningEffort",
    "ScriptExhausted",
    "ScriptedModel",
    "StreamItem",
    "TextChunk",
    "Usage",
    "complete",
    "infer_model",
]
