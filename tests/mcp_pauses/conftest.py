"""The browser of the inbox tests (Debian's Chromium through Playwright), shared with tests/http."""

from tests.support.browser import browser, chromium, page

__all__ = ["browser", "chromium", "page"]
