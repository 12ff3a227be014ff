"""The OpenAI adapters (extra ``[openai]``): :class:`OpenAIResponsesModel` for the Responses API
(``"openai:<model>"``) and :class:`OpenAIChatModel` for Chat Completions and the servers that copy
it (``"openai-chat:<model>"``).

The SDK is imported here and nowhere else in symfonic, so ``import symfonic`` never loads it and a
missing extra fails at this import with the line that installs it.
"""

try:
    import openai as _openai  # noqa: F401  (only to fail early, naming the install)
except ImportError:
    raise ImportError("the OpenAI adapters need their extra: "
                      "pip install 'symfonic-runtime[openai]'") from None

from symfonic.models.openai.chat import OpenAIChatModel
from symfonic.models.openai.responses import OpenAIResponsesModel

__all__ = ["OpenAIChatModel", "OpenAIResponsesModel"]
