"""What an app serves beside its API is chosen: ``create_app(mounts=...)`` and ``symfonic serve
--mount``; a surface whose extra is missing is refused at start, with the line that installs it."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from symfonic.transports.http.mounts import SurfaceUnavailable, chosen_mounts
from tests.support.servers import LiveServer, ServerFactory

CARD = "/a2a/support/.well-known/agent-card.json"
MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


async def surfaces(server: LiveServer) -> dict[str, int]:
    """The status each surface answers with: 200 served, 404 not."""
    async with httpx.AsyncClient(base_url=server.url, headers=server.auth("acme"),
                                 timeout=20) as client:
        card = await client.get(CARD)
        mcp = await client.post("/mcp", json=MCP_LIST, headers=MCP_HEADERS)
        api = await client.get("/v1/pauses")
        ag_ui = await client.post("/ag-ui/support", json={})  # served: 422, no RunAgentInput
    return {"a2a": card.status_code, "mcp": mcp.status_code, "api": api.status_code,
            "ag-ui": ag_ui.status_code}


@pytest.mark.parametrize(("mounts", "served"), [
    (None, {"a2a": 200, "mcp": 200, "api": 200, "ag-ui": 422}),  # the extras are installed here
    ([], {"a2a": 404, "mcp": 404, "api": 200, "ag-ui": 404}),
    (["a2a"], {"a2a": 200, "mcp": 404, "api": 200, "ag-ui": 404}),
    (["MCP ", "ag-ui"], {"a2a": 404, "mcp": 200, "api": 200, "ag-ui": 422}),
])
async def test_an_app_serves_the_surfaces_it_is_given(
        start_server: ServerFactory, mounts: list[str] | None, served: dict[str, int]) -> None:
    server = start_server(mounts=mounts)
    assert await surfaces(server) == served


def test_a_name_that_is_no_surface_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no surface named 'grpc': choose among a2a, mcp, ag-ui"):
        chosen_mounts(["a2a", "grpc"])


def test_a_surface_without_its_extra_is_refused_with_the_install_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("symfonic.transports.http.mounts._installed", lambda package: package != "mcp")
    assert chosen_mounts(None) == ("a2a", "ag-ui")  # not asked for: silently left out, as before
    with pytest.raises(SurfaceUnavailable, match=r"pip install 'symfonic-runtime\[mcp\]'"):
        chosen_mounts(["a2a", "mcp"])


def serve(*arguments: str, missing: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``symfonic serve`` in an interpreter where ``missing`` cannot be imported; it must refuse
    before it binds a port or opens a store, so no server is left running."""
    code = (f"import sys; sys.modules.update(dict.fromkeys({missing!r}, None)); "
            "from symfonic.cli import main; sys.argv = ['symfonic', 'serve', *sys.argv[1:]]; main()")
    return subprocess.run([sys.executable, "-c", code, *arguments], capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.e2e
def test_serve_refuses_a_mount_it_cannot_serve_before_anything_starts() -> None:
    unknown = serve("--mount", "grpc")
    assert unknown.returncode == 3, unknown.stderr
    assert "no surface named 'grpc'" in unknown.stderr and "Traceback" not in unknown.stderr
    missing = serve("--mount", "mcp", missing=("mcp",))
    assert missing.returncode == 3, missing.stderr
    assert "pip install 'symfonic-runtime[mcp]'" in missing.stderr
    assert "sfk_" not in missing.stdout  # refused before a key was issued
    no_ag_ui = serve("--mount", "ag-ui", missing=("ag_ui",))
    assert no_ag_ui.returncode == 3, no_ag_ui.stderr
    assert "pip install 'symfonic-runtime[ag-ui]'" in no_ag_ui.stderr
