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
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from symfonic.kernel.tooling import ToolArgumentsInvalid, ToolInvocation, ToolSchema

ToolFunction = Callable[..., Any]


class FunctionTool:
    """A tool backed by a sync or async function; sync bodies run in a worker thread."""

    def __init__(self, function: ToolFunction, *, name: str | None = None,
                 description: str | None = None) -> None:
        self.function = function
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
        if self._is_async:
            result = await self.function(**values)
        else:
            result = await asyncio.to_thread(self.function, **values)
        return render_result(result)

    async def __call__(self, **arguments: Any) -> Any:
        """Call the underlying function directly (handy in tests)."""
        result = self.function(**arguments)
        return await result if inspect.isawaitable(result) else result


@overload
def tool(function: ToolFunction, /) -> FunctionTool: ...
@overload
def tool(*, name: str | None = None,
         description: str | None = None) -> Callable[[ToolFunction], FunctionTool]: ...


def tool(
    function: ToolFunction | None = None, /, *, name: str | None = None,
    description: str | None = None,
) -> FunctionTool | Callable[[ToolFunction], FunctionTool]:
    """Turn ``function`` into a tool; use bare (``@tool``) or with a name or description."""
    if function is not None:
        return FunctionTool(function, name=name, description=description)
    return lambda f: FunctionTool(f, name=name, description=description)


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

