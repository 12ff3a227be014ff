"""Anthropic's Messages API as a symfonic model (extra ``[anthropic]``).

The SDK is imported here first, so a missing extra fails once, with the line that installs it,
instead of with a traceback from deep inside a submodule. Nothing else of symfonic imports this
package: ``import symfonic`` never loads the SDK (``infer_model("anthropic:...")`` does, lazily).
"""

try:
    import anthropic as _sdk  # noqa: F401  (imported for its side effect: fail early, in one line)
except ImportError:
    raise ImportError("the Anthropic adapter needs its extra: "
                      "pip install 'symfonic-runtime[anthropic]'") from None

from symfonic.models.anthropic.errors import to_model_error
from symfonic.models.anthropic.model import AnthropicModel
from symfonic.models.anthropic.request import PROVIDER

__all__ = ["PROVIDER", "AnthropicModel", "to_model_error"]
