"""Model calls and tool calls as DBOS steps: what a replayed turn does not do twice.

A background segment is a DBOS workflow, and a workflow that a dead worker left half-way is run
again from its start by another. Everything the turn does is then repeated, except what DBOS
recorded as a step: a step that completed returns its recorded output instead of running. So:

- **a model call is one step.** Its whole reply (text, tool calls, usage, provider items) is
  recorded once it arrived; a replay gets the same reply back, the model is not asked again, and
  the turn goes the same way. A call the worker died in is made again (it never answered).
- **a tool call is two steps**, ``begin`` then ``run``, because symfonic's rule for a call a crash
  caught half-way (``platform/continuation/recovery.py``) must hold here too. ``run`` recorded: the stored
  result, the tool is not run again. ``begin`` recorded but not ``run``: the earlier attempt
  started the tool and died in it, so it may or may not have run; an ``idempotent`` tool runs
  again with the same ``idempotency_key``, any other is reported to the model as interrupted.

Outside a workflow (the same host's ``agent.run``, a synchronous resume) both wrappers call
straight through: a host with workers runs the same definitions either way.

The pin of a definition ignores the model and reads the tools' schemas only, so the wrapped
definition resumes the pauses of the plain one and vice versa.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Any

from dbos import DBOS

from symfonic.agent import AgentSpec
from symfonic.kernel.messages import Message, ModelReply, StreamItem, TextChunk
from symfonic.kernel.model import Model, OutputSpec, complete, stream_of
from symfonic.kernel.tool_contract import Tool, ToolInvocation, ToolSchema, Toolset, WrappedTool
from symfonic.platform.continuation.recovery import INTERRUPTED

__all__ = ["StepModel", "StepTool", "StepToolset", "durable_spec"]


def durable_spec(spec: AgentSpec) -> AgentSpec:
    """``spec`` with its model and tools recorded as steps when they run inside a workflow."""
    model = spec.resolved_model
    if isinstance(model, StepModel):
        return spec
    return dataclasses.replace(spec, model=StepModel(model),
                               tools=[StepTool(tool) for tool in spec.tools],
                               toolsets=[StepToolset(toolset) for toolset in spec.toolsets])


def _in_workflow() -> bool:
    """True in a workflow's own code (a step's body is not: it runs, it does not record)."""
    return DBOS.workflow_id is not None and DBOS.step_id is None


class StepModel:
    """A model whose every reply, inside a workflow, is a DBOS step's recorded output.

    Text reaches the turn as one chunk per call: the reply is recorded whole, so a replay yields
    exactly what the first attempt yielded (a live stream cut by a crash would not be).
    """

    def __init__(self, model: Model) -> None:
        self.model = model

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSchema], *,
                     output: OutputSpec | None = None) -> AsyncIterator[StreamItem]:
        if not _in_workflow():
            async for item in stream_of(self.model, messages, tools, output):
                yield item
            return

        async def model_call() -> ModelReply:
            return await complete(self.model, messages, tools, output=output)

        reply = await DBOS.run_step_async({"name": "symfonic.model_call"}, model_call)
        if reply.text:
            yield TextChunk(reply.text)
        yield reply


class StepTool(WrappedTool):
    """A tool whose call, inside a workflow, runs at most once across replays (see the module)."""

    def __init__(self, tool: Tool) -> None:
        super().__init__(tool)
        self.idempotent: bool = bool(getattr(tool, "idempotent", False))

    async def invoke(self, arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        if not _in_workflow():
            return await self.tool.invoke(arguments, invocation)
        began: list[bool] = []

        async def begin() -> str:
            began.append(True)
            return invocation.call_id

        await DBOS.run_step_async({"name": "symfonic.tool_begin"}, begin)
        caught_half_way = not began  # recorded by an attempt that did not record the result

        async def run() -> str:
            if caught_half_way and not self.idempotent:
                return INTERRUPTED
            return await self.tool.invoke(arguments, invocation)

        return await DBOS.run_step_async({"name": "symfonic.tool_run"}, run)


class StepToolset:
    """A toolset whose tools are :class:`StepTool` s: an MCP server's calls, inside a workflow,
    run at most once across replays like the agent's own."""

    def __init__(self, toolset: Toolset) -> None:
        self.toolset = toolset
        self._wrapped: dict[int, StepTool] = {}

    async def list_tools(self) -> Sequence[Tool]:
        listed = await self.toolset.list_tools()
        # The same wrapper while the listing is the same: capabilities cache by the tools' ids.
        self._wrapped = {id(tool): self._wrapped.get(id(tool)) or StepTool(tool) for tool in listed}
        return list(self._wrapped.values())

    def describe(self) -> dict[str, Any]:
        return self.toolset.describe()

    async def close(self) -> None:
        await self.toolset.close()
