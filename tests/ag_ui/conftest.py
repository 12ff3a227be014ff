"""The AG-UI tests in process share the HTTP tests' live servers (``create_app`` on loopback,
a real SQLite file; AG-UI is served by the same app) and their real browser."""

from tests.http.conftest import start_server
from tests.support.browser import browser, chromium, page

__all__ = ["browser", "chromium", "page", "start_server"]
