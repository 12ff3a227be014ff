"""What the tests share across folders: live servers, agents, clients, processes, receivers,
the MCP test server and the browser. A folder's own helpers stay in its folder; no test imports a
conftest."""
