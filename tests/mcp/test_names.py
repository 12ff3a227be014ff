"""Exposed tool names: accepted by the providers, unique, and the same whatever the listing's order."""

from __future__ import annotations

import re

import pytest

from symfonic.toolsets.mcp.names import MAX_LENGTH, expose, name_from_command, name_from_url, sanitize

ACCEPTED = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_refused_characters_are_replaced_and_long_names_shortened_with_a_hash() -> None:
    assert sanitize("files.read") == "files_read"
    assert sanitize("ünïcode tool/v2") == "_n_code_tool_v2"
    long_a, long_b = sanitize("x" * 100 + "a"), sanitize("x" * 100 + "b")
    assert len(long_a) == MAX_LENGTH and long_a != long_b and long_a.startswith("x" * 55 + "_")
    assert sanitize("x" * 100 + "a") == long_a  # deterministic


def test_names_that_sanitize_alike_stay_distinct_whatever_the_order() -> None:
    names = ["a.b", "a_b", "a-b", "search"]
    exposed = expose("crm", names)

    assert exposed["a_b"] == "crm_a_b" and exposed["search"] == "crm_search"
    assert len(set(exposed.values())) == 4
    assert all(ACCEPTED.match(name) for name in exposed.values())
    assert expose("crm", list(reversed(names))) == exposed
    assert expose("", ["a.b"]) == {"a.b": "a_b"}


@pytest.mark.parametrize(("command", "args", "name"), [
    ("npx", ["-y", "@modelcontextprotocol/server-github"], "server-github"),
    ("/usr/bin/python3.12", ["-u", "servers/weather.py"], "weather"),
    ("uvx", ["mcp-server-fetch@1.2.0"], "mcp-server-fetch"),
    ("uv", ["run", "server.py"], "server"),
    ("python", ["-m", "acme.mcp_tools"], "acme_mcp_tools"),
    ("/opt/bin/my-server", ["--port", "1"], "my-server"),
    ("node", [], "node"),
])
def test_a_toolset_is_named_after_what_its_command_runs(command: str, args: list[str], name: str) -> None:
    assert name_from_command(command, args) == name


def test_an_http_toolset_is_named_after_its_host() -> None:
    assert name_from_url("https://mcp.example.com/mcp") == "mcp_example_com"
    assert name_from_url("http://127.0.0.1:8080/mcp") == "127_0_0_1"
