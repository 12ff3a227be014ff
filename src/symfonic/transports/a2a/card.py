"""The public agent card of an agent: who it is, what it can do, where and how to reach it.

Skills are the agent's tools (their names and descriptions, as the model sees them). The card
declares streaming, push notifications when the server can sign them (it has a webhook secret),
and a bearer scheme for the HTTP API's keys. Interface URLs are built per
request, on the address the client reached (or the configured public URL), so a card fetched
through ``localhost`` points at ``localhost``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from symfonic import AgentSpec

BEARER = "symfonicApiKey"


def agent_card(spec: AgentSpec, base: str, *, push: bool = False) -> AgentCard:
    """The card of ``spec`` served under ``base`` (``https://host`` without a trailing slash);
    ``push``: whether this server delivers push notifications."""
    url = f"{base.rstrip('/')}/a2a/{spec.name}"
    skills = [AgentSkill(id=tool.schema.name, name=tool.schema.name,
                         description=tool.schema.description or tool.schema.name, tags=["tool"])
              for tool in spec.tools]
    return AgentCard(
        name=spec.name, description=spec.instructions or f"The symfonic agent {spec.name}.",
        version=spec.pin.partition("@")[2] or "1", skills=skills,
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=TransportProtocol.JSONRPC.value,
                           protocol_version=PROTOCOL_VERSION_CURRENT),
            AgentInterface(url=url, protocol_binding=TransportProtocol.HTTP_JSON.value,
                           protocol_version=PROTOCOL_VERSION_CURRENT)],
        capabilities=AgentCapabilities(streaming=True, push_notifications=push),
        security_schemes={BEARER: SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="bearer", bearer_format="sfk_<id>_<secret>",
            description="An API key of the symfonic service; it maps to one tenant."))},
        security_requirements=[SecurityRequirement(schemes={BEARER: StringList(list=[])})],
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"])


def card_response(spec: AgentSpec, public_url: str | None,
                  push: bool = False) -> Callable[[Request], Awaitable[Response]]:
    async def card(request: Request) -> Response:
        base = public_url or f"{request.url.scheme}://{request.url.netloc}"
        return JSONResponse(agent_card_to_dict(agent_card(spec, base, push=push)))

    return card
