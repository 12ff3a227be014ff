"""``@tool``: schemas from type hints and docstrings, validation before the body runs."""

from __future__ import annotations

import threading

import pytest
from pydantic import BaseModel

from symfonic import Scope, tool
from symfonic.kernel.plan import DuplicateToolName, Services, compile_plan
from symfonic.kernel.stages import TurnRequest
from symfonic.kernel.tool_contract import ToolArgumentsInvalid, ToolInvocation

REQUEST = TurnRequest(run_id="r", root_run_id="r", session_id="s", thread_id="s",
                      scope=Scope(tenant="acme"))
INVOCATION = ToolInvocation(request=REQUEST, call_id="c")


class Address(BaseModel):
    city: str


@tool
def ship(order_id: int, to: Address, express: bool = False) -> dict[str, object]:
    """Ship an order.

    Longer notes the model does not need.
    """
    return {"order": order_id, "city": to.city, "express": express,
            "thread": threading.current_thread().name}


def test_the_schema_comes_from_hints_and_the_docstrings_first_paragraph() -> None:
    schema = ship.schema
    assert schema.name == "ship" and schema.description == "Ship an order."
    assert schema.parameters["required"] == ["order_id", "to"]
    assert schema.parameters["properties"]["order_id"]["type"] == "integer"
    assert schema.parameters["properties"]["express"]["default"] is False
    assert schema.parameters["additionalProperties"] is False


async def test_arguments_are_validated_and_coerced_into_models() -> None:
    result = await ship.invoke({"order_id": 7, "to": {"city": "Oslo"}}, INVOCATION)
    assert '"city": "Oslo"' in result and '"express": false' in result
    # a sync body runs off the event loop
    assert "MainThread" not in result


async def test_wrong_arguments_raise_a_typed_error_naming_the_field() -> None:
    with pytest.raises(ToolArgumentsInvalid, match=r"to\.city: Field required"):
        await ship.invoke({"order_id": 7, "to": {}}, INVOCATION)


def test_a_named_tool_and_varargs_refusal() -> None:
    @tool(name="renamed", description="Custom.")
    def original(x: int) -> int:
        return x

    assert (original.schema.name, original.schema.description) == ("renamed", "Custom.")

    with pytest.raises(TypeError, match="kwargs"):
        @tool
        def loose(**kwargs: int) -> int:
            return 0


def test_two_tools_with_one_name_are_refused_when_compiling() -> None:
    @tool(name="ship")
    def other(x: int) -> int:
        return x

    with pytest.raises(DuplicateToolName):
        compile_plan([ship, other], [], REQUEST, Services())


async def test_results_are_rendered_for_the_model() -> None:
    @tool
    async def model_result() -> Address:
        """Return a model."""
        return Address(city="Rome")

    assert await model_result.invoke({}, INVOCATION) == '{"city":"Rome"}'


def test_the_tool_contract_is_one_import_and_keeps_its_earlier_path() -> None:
    import symfonic.kernel.tool_contract as contract
    import symfonic.kernel.tooling as earlier
    from symfonic import tools

    for name in earlier.__all__:
        assert getattr(earlier, name) is getattr(contract, name)
    for name in ("Tool", "ToolSchema", "ToolInvocation", "ToolArgumentsInvalid"):
        assert getattr(tools, name) is getattr(contract, name)
