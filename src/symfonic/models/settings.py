"""Settings a model adapter sends with every request.

One typed set for the knobs every provider has in some form, so switching providers keeps their
meaning; ``extra`` passes anything else through to the provider's request body as given (the SDKs'
``extra_body``), for parameters symfonic does not name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    """What to ask of the model besides the conversation. ``None`` leaves the provider's default.

    Attributes:
        temperature: Sampling temperature.
        max_output_tokens: The cap on the reply's tokens (Anthropic requires one: its adapter
            defaults to 4096).
        reasoning_effort: OpenAI reasoning models: how hard to think.
        thinking_budget: Anthropic extended thinking: the token budget (enables thinking).
        parallel_tool_calls: Whether the model may call several tools in one round.
        extra: Provider parameters passed through unchanged into the request body.
    """

    temperature: float | None = None
    max_output_tokens: int | None = None
    reasoning_effort: ReasoningEffort | None = None
    thinking_budget: int | None = None
    parallel_tool_calls: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
