"""``@tool``: a Python function becomes a tool the model can call.

The JSON schema comes from the function's type hints (through pydantic) and its description from
the docstring's first paragraph, so the schema and the code cannot drift apart. The model's
arguments are validated before the body runs: a wrong type or a missing field is reported back to
the model as a tool result it can correct, and the body never sees it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from symfonic.kernel.tool_contract import (
    Tool,
    ToolArgumentsInvalid,
    ToolInputRequired,
    ToolInvocation,
    ToolSchema,
    ToolTimedOut,
)

__all__ = ["FunctionTool", "Tool", "ToolArgumentsInvalid", "ToolInputRequired", "ToolInvocation",
           "ToolSchema", "ToolTimedOut", "current_invocation", "tool"]
"""The decorator, and the contract a tool class written by hand meets (from
:mod:`symfonic.kernel.tool_contract`): one import for everything about tools."""

ToolFunction = Callable[..., Any]
_INVOCATION: ContextVar[ToolInvocation | None] = ContextVar("symfonic_tool_call", default=None)


def current_invocation() -> ToolInvocation:
    """The call being run, from inside a tool's body: its ``idempotency_key``, ``call_id`` and run.

    A tool that calls an outside service sends ``idempotency_key`` along (an ``Idempotency-Key``
    header, a unique column): it is the same each time this call of this turn runs, so a call run
    again after a crash is recognised there instead of applied twice.

    Raises:
        LookupError: called outside a tool body.
    """
    invocation = _INVOCATION.get()
    if invocation is None:
        raise LookupError("current_invocation() is only available inside a tool's body")
    return invocation


class FunctionTool:
    """A tool backed by a sync or async function; sync bodies run in a worker thread.

    Attributes:
        timeout: Seconds the body may run before the call fails as a tool error
            (:class:`ToolTimedOut`); None for no limit.
        idempotent: Running the call twice (with the same ``idempotency_key``) does no harm, so
            a recovered turn runs it again when a crash hid whether it ran; any other tool is
            reported to the model as interrupted ("may or may not have run") instead.
    """

    def __init__(self, function: ToolFunction, *, name: str | None = None,
                 description: str | None = None, idempotent: bool = False,
                 timeout: float | None = None) -> None:
        if timeout is not None and timeout <= 0:
            raise ValueError(f"a tool's timeout must be positive, not {timeout}")
        self.function = function
        self.idempotent = idempotent
        self.timeout = timeout
        self._is_async = inspect.iscoroutinefunction(function)
        self.arguments_model = _arguments_model(function)
        doc = inspect.getdoc(function) or ""
        self._schema = ToolSchema(
            name=name or function.__name__,
            description=description or doc.split("\n\n")[0].strip(),
            parameters=self.arguments_model.model_json_schema(),
        )

    @property
    def schema(self) -> ToolSchema:
        return self._schema

    @property
    def name(self) -> str:
        return self._schema.name

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            parsed = self.arguments_model.model_validate(arguments)
        except ValidationError as invalid:
            raise ToolArgumentsInvalid(_explain(invalid)) from None
        return {field: getattr(parsed, field) for field in type(parsed).model_fields}

    async def invoke(self, arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        values = self.validate(arguments)
        token = _INVOCATION.set(invocation)  # to_thread copies the context into the worker
        try:
            async with asyncio.timeout(self.timeout):
                if self._is_async:
                    result = await self.function(**values)
                else:
                    result = await asyncio.to_thread(self.function, **values)
        except TimeoutError:
            if self.timeout is None:
                raise  # the body's own timeout, not ours
            raise ToolTimedOut(f"it ran past its {self.timeout:g} s timeout") from None
        finally:
            _INVOCATION.reset(token)
        return render_result(result)

    async def __call__(self, **arguments: Any) -> Any:
        """Call the underlying function directly (handy in tests)."""
        result = self.function(**arguments)
        return await result if inspect.isawaitable(result) else result


@overload
def tool(function: ToolFunction, /) -> FunctionTool: ...
@overload
def tool(*, name: str | None = None, description: str | None = None,
         idempotent: bool = False,
         timeout: float | None = None) -> Callable[[ToolFunction], FunctionTool]: ...


def tool(
    function: ToolFunction | None = None, /, *, name: str | None = None,
    description: str | None = None, idempotent: bool = False, timeout: float | None = None,
) -> FunctionTool | Callable[[ToolFunction], FunctionTool]:
    """Turn ``function`` into a tool; use bare (``@tool``) or with options
    (``@tool(idempotent=True)``: safe to run again on recovery, see :func:`current_invocation`)."""
    options: dict[str, Any] = {"name": name, "description": description,
                               "idempotent": idempotent, "timeout": timeout}
    if function is not None:
        return FunctionTool(function, **options)
    return lambda f: FunctionTool(f, **options)


def render_result(result: Any) -> str:
    """The text the model reads for a tool's return value."""
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    return json.dumps(result, default=str)


def _arguments_model(function: ToolFunction) -> type[BaseModel]:
    hints = get_type_hints(function)
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {function.__name__}: *args and **kwargs cannot be described "
                            "to a model; name every parameter")
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    model: type[BaseModel] = create_model(
        f"{function.__name__}_arguments",
        # NaN and infinities are not numbers a tool can act on (a refund of Infinity); they reach
        # Python from JSON as floats, so they are refused here, before the body runs.
        __config__=ConfigDict(extra="forbid", allow_inf_nan=False),
        **fields,
    )
    return model


def _explain(invalid: ValidationError) -> str:
    parts = []
    for error in invalid.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
