"""The OpenAPI document: complete, and no request it allows (or almost allows) gets a 5xx.

The property test draws requests for every operation from the served document with schemathesis
(positive and negative cases), sends them over real HTTP to a live server, under every sort of
caller (each tenant's key, a read-only key, none), with a real token of either tenant swapped into
``{token}`` now and then so that the fuzzing reaches past verification into tickets and resumes.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.support.clients import paused_run
from tests.support.servers import LiveServer

ROUTES = {
    ("post", "/v1/agents/{name}/runs"): {200, 401, 403, 404, 409, 413, 422, 503},
    ("get", "/v1/pauses"): {200, 401, 403, 422},
    ("get", "/v1/pauses/{token}"): {200, 400, 401, 403, 404, 410},
    ("post", "/v1/pauses/{token}/resume"): {200, 400, 401, 403, 404, 409, 410, 413, 422, 503},
    ("delete", "/v1/pauses/{token}"): {200, 400, 401, 403, 404, 410},
    ("post", "/v1/pauses/{token}/recover"): {200, 202, 400, 401, 403, 404, 409, 410, 413, 422, 503},
}
EXAMPLES = 40


async def test_the_document_describes_every_route_body_and_error(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    paths = document["paths"]
    for (method, path), codes in ROUTES.items():
        operation = paths[path][method]
        assert {int(c) for c in operation["responses"]} >= codes, (method, path)
        for code in codes - {200}:
            schema = operation["responses"][str(code)]["content"]["application/json"]["schema"]
            assert schema["$ref"].startswith("#/components/schemas/"), (method, path, code)
        assert operation["security"] == [{"ApiKey": []}]
    for path in ("/inbox", "/inbox/login", "/inbox/logout", "/inbox/pauses/{token}", "/inbox/runs"):
        assert path in paths
    assert set(paths["/inbox/logout"]) == {"post"}
    schemas = document["components"]["schemas"]
    assert {"RunRequest", "ResumeRequest", "Outcome", "Ticket", "PauseList", "Problem",
            "InvalidProblem", "AlreadyResumedProblem"} <= set(schemas)
    streamed = paths["/v1/pauses/{token}/resume"]["post"]["responses"]["200"]["content"]
    assert {"application/json", "text/event-stream"} <= set(streamed)


@pytest.fixture
async def tokens(client: httpx.AsyncClient, server: LiveServer) -> list[str]:
    """Outstanding pauses of both tenants, for the fuzzer to swap into ``{token}``."""
    return [await paused_run(client, server, "acme", session=f"fuzz-{n}") for n in range(3)] + [
        await paused_run(client, server, "globex", session="fuzz-globex")]


@pytest.mark.e2e
def test_no_request_gets_a_server_error(server: LiveServer, tokens: list[str]) -> None:
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    callers = st.sampled_from([None, "acme", "globex", "acme-reader"])
    swaps = st.sampled_from([None, None, *tokens])
    checked: set[tuple[str, str]] = set()
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]  # an invalid operation raises here
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode), caller=callers, token=swaps)
            @settings(max_examples=EXAMPLES, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
            def no_server_error(case: Any, caller: str | None, token: str | None) -> None:
                if token is not None and "token" in (case.path_parameters or {}):
                    case.path_parameters = {**(case.path_parameters or {}), "token": token}
                headers = server.auth(caller) if caller else {}
                response = case.call(headers=headers, timeout=15)
                assert response.status_code < 500, (case.method, case.formatted_path,
                                                     response.status_code, response.text[:500])

            try:
                no_server_error()
            except Unsatisfiable:
                # Nothing constrained to get wrong (a free string, or no input at all).
                assert mode is GenerationMode.NEGATIVE, operation.label
                continue
            checked.add((operation.label, mode.value))
    assert {label for label, _ in checked} >= {f"{m.upper()} {p}" for m, p in ROUTES}
    assert {("POST /v1/agents/{name}/runs", "negative"), ("GET /v1/pauses", "negative"),
            ("POST /v1/pauses/{token}/resume", "negative")} <= checked
