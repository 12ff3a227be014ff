"""A real browser (Debian's Chromium, driven by Playwright) for the inbox tests; fixtures, imported
into the conftests that need them."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright

CHROMIUM = Path(os.environ.get("SYMFONIC_TEST_CHROMIUM", "/usr/bin/chromium"))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        message = f"no Chromium at {CHROMIUM}: apt-get install chromium (or set SYMFONIC_TEST_CHROMIUM)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


@pytest.fixture
async def browser(chromium: Path) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(chromium), args=ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def page(browser: Browser) -> Page:
    tab = await browser.new_page()
    tab.set_default_timeout(15_000)
    return tab


@pytest.fixture
async def page_without_script(browser: Browser) -> Page:
    tab = await (await browser.new_context(java_script_enabled=False)).new_page()
    tab.set_default_timeout(15_000)
    return tab
