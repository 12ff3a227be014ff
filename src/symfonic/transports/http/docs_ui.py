"""``/docs`` without the internet: Swagger UI served from files installed with the package.

FastAPI's own ``/docs`` page loads Swagger UI's script and stylesheet from a CDN, so on a machine
without internet access (an air-gapped deployment, a developer on a train, the tests) it is a
blank page. Here the same page references only this service: the Swagger UI distribution comes
from the pinned ``swagger-ui-bundle-v2`` package (installed with ``symfonic-runtime[http]``), served under
:data:`ASSETS`, and the favicon is the inbox's. Swagger UI's online validator is switched off (it
would send the schema to a third party, and fetch a badge from it).

ReDoc has no such package, so ``/redoc`` is not served; ``/openapi.json`` is there for any other
viewer.

Without the package (an install that skipped the extra) ``/docs`` says what to install and links
``/openapi.json``, rather than loading anything from elsewhere.
"""

from __future__ import annotations

import importlib.resources
import logging
from html import escape
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

DOCS = "/docs"
ASSETS = "/docs/assets"
FAVICON = "/inbox/static/favicon.svg"
INSTALL = "pip install 'symfonic-runtime[http]'"
logger = logging.getLogger("symfonic.http")


def swagger_ui_files() -> Path | None:
    """The directory of the installed Swagger UI distribution; None when it is not installed."""
    try:
        bundle = importlib.resources.files("swagger_ui_bundle") / "vendor"
    except ModuleNotFoundError:
        return None
    found = sorted((Path(str(d)) for d in bundle.iterdir()
                    if d.name.startswith("swagger-ui-") and (Path(str(d)) / "swagger-ui-bundle.js")
                    .is_file()), key=lambda d: d.name)
    return found[-1] if found else None


def install(app: FastAPI) -> None:
    """Serve ``/docs`` (and its assets) from local files on ``app``."""
    files = swagger_ui_files()
    if files is not None:
        app.mount(ASSETS, StaticFiles(directory=files), name="swagger-ui")

    async def docs(request: Request) -> HTMLResponse:
        openapi = request.scope.get("root_path", "").rstrip("/") + (app.openapi_url or "")
        if files is None:
            logger.warning("/docs: Swagger UI's files are not installed (%s)", INSTALL)
            return HTMLResponse(
                f"<!doctype html><title>{escape(app.title)} API</title><h1>API docs</h1><p>"
                f"Swagger UI is not installed here: <code>{escape(INSTALL)}</code>. The schema is "
                f'at <a href="{escape(openapi)}">{escape(openapi)}</a>.</p>')
        return get_swagger_ui_html(
            openapi_url=openapi, title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css", swagger_favicon_url=FAVICON,
            oauth2_redirect_url=None, swagger_ui_parameters={"validatorUrl": None})

    app.add_route(DOCS, docs, include_in_schema=False)
