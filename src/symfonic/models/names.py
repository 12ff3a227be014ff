"""Models by name: ``"openai:gpt-5.1"``, ``"anthropic:claude-sonnet-4-5"``, ``"openai-chat:llama3.1"``.

The prefix picks the adapter and the rest is the provider's model name, passed through as given
(symfonic keeps no list of models: providers add them faster than releases ship). The adapter's
SDK is imported only here, when a name asks for it, so a missing extra fails with its install line.
"""

from __future__ import annotations

from collections.abc import Callable

from symfonic.kernel.model import Model

PREFIXES = ("openai", "openai-chat", "anthropic")


def infer_model(name: str) -> Model:
    """The model ``name`` stands for.

    Raises:
        ValueError: no known prefix, or no model after it.
        ImportError: the provider's extra is not installed (the message names the install).
    """
    prefix, sep, model = name.partition(":")
    if not sep or not model:
        raise ValueError(f"model name {name!r} needs a provider prefix: "
                         f"{', '.join(p + ':<model>' for p in PREFIXES)}")
    factories: dict[str, Callable[[str], Model]] = {
        "openai": _openai_responses, "openai-chat": _openai_chat, "anthropic": _anthropic}
    factory = factories.get(prefix)
    if factory is None:
        raise ValueError(f"unknown model provider {prefix!r} in {name!r}; use one of {PREFIXES}")
    return factory(model)


def _openai_responses(model: str) -> Model:
    from symfonic.models.openai import OpenAIResponsesModel

    return OpenAIResponsesModel(model)


def _openai_chat(model: str) -> Model:
    from symfonic.models.openai import OpenAIChatModel

    return OpenAIChatModel(model)


def _anthropic(model: str) -> Model:
    from symfonic.models.anthropic import AnthropicModel

    return AnthropicModel(model)
