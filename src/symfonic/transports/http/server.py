"""``symfonic serve``: the example support agent over HTTP, on the embedded SQLite default.

Keys live in ``.symfonic/api_keys.json`` (``$SYMFONIC_API_KEYS`` to move it), digests only. Every
start replaces the tenant ``demo``'s development key (label ``development``) and prints the new
one: a key that is hashed at rest cannot be shown again, and a printed key that outlives the
process it was printed by is one more secret lying around. Keys made otherwise (``ApiKeys.issue``)
are kept.

Webhooks: ``$SYMFONIC_WEBHOOK_URLS`` (comma-separated) and ``$SYMFONIC_WEBHOOK_SECRET``.
"""

from __future__ import annotations

import os
from pathlib import Path

import uvicorn

from symfonic.platform.host import Host
from symfonic.transports.http.app import create_app
from symfonic.transports.http.auth import DEFAULT_KEYS_FILE, KEYS_FILE_VARIABLE, ApiKeys
from symfonic.transports.webhooks import WebhookConfig

DEMO_TENANT = "demo"
DEVELOPMENT_LABEL = "development"
WEBHOOK_URLS_VARIABLE = "SYMFONIC_WEBHOOK_URLS"
WEBHOOK_SECRET_VARIABLE = "SYMFONIC_WEBHOOK_SECRET"


def run_server(app_host: Host, *, host: str, port: int) -> None:
    """Serve ``app_host``'s agents until interrupted, after printing the inbox URL and a key.

    The caller composes the host (the CLI uses the example support agent unless told otherwise);
    this function only adds the HTTP layer, so it serves any app the same way.
    """
    keys = ApiKeys.load(Path(os.environ.get(KEYS_FILE_VARIABLE) or DEFAULT_KEYS_FILE))
    keys.remove_labelled(DEMO_TENANT, DEVELOPMENT_LABEL)
    key = keys.issue(DEMO_TENANT, label=DEVELOPMENT_LABEL)
    webhooks = webhook_config()
    public_url = f"http://{_reachable(host)}:{port}"
    app = create_app(app_host, keys, webhooks, public_url=public_url)
    served = ", ".join(sorted(app_host.specs)) or "no agents"
    print(f"symfonic: serving {served} on {app_host.url or 'the configured store'}")
    print(f"  inbox:    {public_url}/inbox#key={key}")
    print(f"  API docs: {public_url}/docs")
    print(f"  API key:  {key}")
    print(f"            (tenant {DEMO_TENANT!r}; a development key, replaced at every start; "
          f"only its digest is kept, in {keys.path})")
    if webhooks is not None:
        print(f"  webhooks: {', '.join(webhooks.urls)}")
    print(f"  try:      curl -s {public_url}/v1/agents/support/runs -H 'Authorization: Bearer "
          f"{key}' -H 'Content-Type: application/json' -d '{{\"input\": \"Please refund order "
          f"42.\"}}'", flush=True)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info")).run()


def webhook_config() -> WebhookConfig | None:
    """Webhooks from the environment; None when no URL is configured.

    Raises:
        ValueError: URLs without a secret to sign the deliveries with.
    """
    urls = [u.strip() for u in os.environ.get(WEBHOOK_URLS_VARIABLE, "").split(",") if u.strip()]
    if not urls:
        return None
    secret = os.environ.get(WEBHOOK_SECRET_VARIABLE, "")
    if not secret:
        raise ValueError(f"${WEBHOOK_URLS_VARIABLE} is set: set ${WEBHOOK_SECRET_VARIABLE} too, "
                         "to sign the deliveries")
    return WebhookConfig(urls=urls, secret=secret)


def _reachable(host: str) -> str:
    """An address a browser on this machine can open for ``host``."""
    if host in ("0.0.0.0", "", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host
