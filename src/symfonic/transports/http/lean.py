"""A shorter request path for the two routes every pause travels: starting a run and resuming.

FastAPI solves each request's dependencies, parameters and body through general machinery: about
0.2 ms of CPU per request here, a third of what the HTTP layer adds in process to a pause +
resume whose library round trip is about 1.6 ms (docs/benchmarks.md, "Over HTTP"). A route marked
with :func:`lean` keeps its FastAPI declaration, so the OpenAPI document and its fuzz test describe
it as before, but an ordinary request is served by a handler that makes the same checks directly:
the body parsed strictly (:mod:`.strict_json`) and validated by the route's own model, the key
checked by the very function the route's dependency calls, then the endpoint called.

A request out of the ordinary (not sent as JSON, no JSON at all, failing its model) goes to
FastAPI's own handler, which answers it as it always did, so a refusal's shape cannot drift from
the documented one; the model and the permission are read from the route's declaration, so the
two paths cannot disagree on them either (``tests/http/test_lean_path.py`` compares their answers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from symfonic.transports.http.auth import Permission
from symfonic.transports.http.service import authorized
from symfonic.transports.http.strict_json import (
    NO_DOCUMENT,
    StrictJSONRequest,
    StrictJSONRoute,
    read_strictly,
)

Endpoint = TypeVar("Endpoint", bound=Callable[..., Awaitable[Response]])
Handler = Callable[[Request], Coroutine[Any, Any, Response]]


@dataclass(frozen=True)
class _Shortcut:
    """What the short path needs to know about a route, read from its FastAPI declaration: its
    body's model and the permission its key dependency demands."""

    body: type[BaseModel]
    permission: Permission


_MARK = "__symfonic_lean__"

enabled = True
"""False sends every request through FastAPI's own handler: the benchmark's A/B of the short path,
and the tests that compare the two answers."""


def lean(endpoint: Endpoint) -> Endpoint:
    """Mark an endpoint of a :class:`LeanRoute` router for the short path.

    Its signature must be its path parameters (strings), ``body`` (a model), ``request`` and
    ``key`` (a :func:`~.service.permitted` dependency); :class:`LeanRoute` reads the model and the
    permission from there, so the two paths cannot disagree, and refuses any other signature when
    the route is made, so a drift fails at import, not in production.
    """
    setattr(endpoint, _MARK, True)
    return endpoint


class LeanRoute(StrictJSONRoute):
    """A :class:`~.strict_json.StrictJSONRoute` that serves the ordinary requests of an endpoint
    marked with :func:`lean` without FastAPI's per-request machinery (see the module docstring).
    The key is checked by :func:`~.service.authorized`, as the routes' dependency checks it."""

    def get_route_handler(self) -> Handler:
        if not getattr(self.endpoint, _MARK, False):
            return super().get_route_handler()
        shortcut = _shortcut_of(self)
        fastapi_handler = APIRoute.get_route_handler(self)
        endpoint: Callable[..., Awaitable[Response]] = self.endpoint

        async def short(request: Request) -> Response:
            strict = StrictJSONRequest(request.scope, request.receive)
            document = await read_strictly(strict)
            if enabled and document is not NO_DOCUMENT:
                try:
                    body = shortcut.body.model_validate(document)
                except ValidationError:
                    pass  # FastAPI's handler reports it, in the documented shape
                else:
                    key = await authorized(strict, shortcut.permission)
                    return await endpoint(**strict.path_params, body=body, request=strict, key=key)
            return await fastapi_handler(strict)

        return short


def _shortcut_of(route: APIRoute) -> _Shortcut:
    """What the short path of ``route`` checks, from its declaration.

    Raises:
        TypeError: the endpoint takes what the short path would not hand it.
    """
    dependant = route.dependant
    body_types = [field.field_info.annotation for field in dependant.body_params]
    dependencies = dependant.dependencies
    permission = getattr(dependencies[0].call, "permission", None) if dependencies else None
    problems = []
    if not (len(body_types) == 1 and isinstance(body_types[0], type)
            and issubclass(body_types[0], BaseModel)):
        problems.append(f"its body is {body_types}, not one model")
    if dependant.request_param_name != "request":
        problems.append("it takes no `request`")
    if [dependency.name for dependency in dependencies] != ["key"] or permission is None:
        problems.append("its one dependency must be `key`, a permitted(...) key")
    if dependant.query_params or dependant.header_params or dependant.cookie_params:
        problems.append("it takes query, header or cookie parameters")
    if any(field.field_info.annotation is not str for field in dependant.path_params):
        problems.append("a path parameter is not a string")
    if problems:
        raise TypeError(f"{route.name} cannot take the lean path: " + "; ".join(problems))
    return _Shortcut(cast(type[BaseModel], body_types[0]), cast(Permission, permission))
