"""The AG-UI tests in process share the HTTP tests' live servers (``create_app`` on loopback,
a real SQLite file): AG-UI is served by the same app."""

from tests.http.conftest import start_server

__all__ = ["start_server"]
