"""Checking a person's answer against a JSON schema that came from a tool, not from Python types.

A tool's input request (an MCP server's elicitation) carries its own schema, so the answer cannot be
checked by a pydantic model the way an :class:`~symfonic.capabilities.human.Interrupt`'s is. The
``jsonschema`` package does it; it comes with the ``mcp`` extra, the one source of such requests,
and is imported only when one is answered, so the core keeps its dependencies.
"""

from __future__ import annotations

from typing import Any

from symfonic.capabilities.human.errors import AnswerInvalid


def check_json(answer: Any, schema: dict[str, Any]) -> Any:
    """``answer`` unchanged when it fits ``schema``.

    Raises:
        AnswerInvalid: it does not, one entry per problem; nothing was claimed.
    """
    validator = _validator(schema)
    problems = sorted(validator.iter_errors(answer), key=lambda error: list(error.absolute_path))
    if problems:
        errors = [{"loc": list(p.absolute_path), "msg": p.message} for p in problems]
        raise AnswerInvalid("; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}"
                                      for e in errors), errors)
    return answer


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` is no JSON schema an answer could be checked against; None when it is.

    Asked before a pause is stored: a question whose answer could never be validated must not
    become a pause nobody can answer.
    """
    try:
        from jsonschema.exceptions import SchemaError
        _validator(schema)
    except ImportError as missing:
        return str(missing)
    except SchemaError as invalid:
        return f"its answer schema is invalid: {invalid.message}"
    return None


def _validator(schema: dict[str, Any]) -> Any:
    try:
        from jsonschema.validators import validator_for
    except ImportError as missing:
        raise ImportError("answering a tool's input request needs the jsonschema package "
                          "(pip install 'symfonic-runtime[mcp]')") from missing
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)
