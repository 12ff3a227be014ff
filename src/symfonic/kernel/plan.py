"""Compiling an agent's tools and capabilities into the plan one run executes.

A plan is compiled per run, not once per agent: capabilities bind their stages to facts of the run
(its scope, its ids, the host's stores) through the :class:`RunEnvironment`, and a bundle folded
once at construction would bind every turn to the first turn's tenant and thread. Compiling is a
handful of object constructions, far cheaper than the model call that follows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, cast

from symfonic.errors import SymfonicError
from symfonic.kernel.messages import ToolCall
from symfonic.kernel.stages import Stage, StageContext, TurnRequest
from symfonic.kernel.tool_contract import Tool, ToolInputRequired

T = TypeVar("T")


class ServiceKey(Generic[T]):
    """A typed key for something the composition root hands to capabilities.

    The kernel carries these services without knowing what they are; the capability that defines
    a key is the only code that reads it, and gets its value back with its type.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r})"


@dataclass(frozen=True)
class Services:
    """An immutable map from :class:`ServiceKey` to value."""

    _values: Mapping[ServiceKey[Any], Any] = field(default_factory=dict)

    def get(self, key: ServiceKey[T]) -> T | None:
        return cast("T | None", self._values.get(key))

    def with_service(self, key: ServiceKey[T], value: T) -> Services:
        return Services({**self._values, key: value})


@dataclass(frozen=True, kw_only=True)
class RunEnvironment:
    """What a capability may bind to when contributing to one run."""

    request: TurnRequest
    tools: Mapping[str, Tool]
    """The agent's own tools by name (a capability gating a tool needs its schema)."""
    services: Services = field(default_factory=Services)


ToolInputHandler = Callable[[StageContext, ToolCall, ToolInputRequired], Awaitable[str]]
"""Pauses the run for a tool that asked for input mid-call (raises ``InvocationPaused``), or
declines with the reason the model is told (the call then ends as a tool error)."""


@dataclass(frozen=True, kw_only=True)
class Contribution:
    """What a capability adds to a run: tools the model sees, and stages before execution."""

    tools: Sequence[Tool] = ()
    stages: Sequence[Stage] = ()
    replaces: Sequence[Tool] = ()
    """Tools that stand in for the agent's own tool of the same name (an approval gate)."""
    tool_input: ToolInputHandler | None = None
    """How a tool's request for input (:class:`ToolInputRequired`) becomes a pause."""


class Capability(Protocol):
    def contribute(self, environment: RunEnvironment) -> Contribution: ...


class DuplicateToolName(SymfonicError, ValueError):
    """Two tools (or a tool and a capability) claim the same name."""


@dataclass(frozen=True, kw_only=True)
class Plan:
    tools: Mapping[str, Tool]
    stages: tuple[Stage, ...]
    tool_input: ToolInputHandler | None = None


def compile_plan(
    tools: Sequence[Tool],
    capabilities: Sequence[Capability],
    request: TurnRequest,
    services: Services,
) -> Plan:
    """Merge the agent's tools with what each capability contributes for this run."""
    own: dict[str, Tool] = {}
    for tool in tools:
        _add(own, tool)
    environment = RunEnvironment(request=request, tools=dict(own), services=services)
    merged = dict(own)
    stages: list[Stage] = []
    tool_input: ToolInputHandler | None = None
    for capability in capabilities:
        contribution = capability.contribute(environment)
        if contribution.tool_input is not None:
            if tool_input is not None:
                raise ValueError("two capabilities offer to pause for a tool's input; keep one")
            tool_input = contribution.tool_input
        for tool in contribution.tools:
            _add(merged, tool)
        for tool in contribution.replaces:
            if tool.schema.name not in own:
                raise KeyError(f"a capability gates {tool.schema.name!r}, which is no tool")
            merged[tool.schema.name] = tool
        stages.extend(contribution.stages)
    return Plan(tools=merged, stages=tuple(stages), tool_input=tool_input)


def _add(registry: dict[str, Tool], tool: Tool) -> None:
    name = tool.schema.name
    if name in registry:
        raise DuplicateToolName(f"two tools are named {name!r}")
    registry[name] = tool
