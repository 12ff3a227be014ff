"""A symfonic service whose webhooks retry fast: ``python outbox_server.py DATABASE_URL PORT``.

The cross-process webhook tests run it by path (it imports symfonic only). It serves the example
support agent through ``create_app`` with the webhooks of ``$OUTBOX_HOOK_URLS`` (comma-separated),
tuned by the JSON object ``$OUTBOX_TUNING`` (``WebhookConfig`` fields), and prints one line,
``key <API key of tenant acme>``, before it starts serving. ``$OUTBOX_PUBLIC_URL`` is the public URL
its deliveries link to (several processes behind one address send the same bytes). With
``$OUTBOX_WORKERS`` set, its host has workers (running none of the agents' turns), so DBOS
workflows deliver the webhooks instead of the sender's loop.
"""

from __future__ import annotations

import json
import os
import sys

import uvicorn

from symfonic import Host
from symfonic.examples.support import support_agent
from symfonic.transports.http import ApiKeys, WebhookConfig, create_app
from symfonic.transports.webhooks.outbound import OutboundPolicy

SECRET = "outbox-server-secret-0123456789abcdef"
HOOK_SECRET = "whsec-outbox-0123456789"


def main() -> None:
    url, port = sys.argv[1], int(sys.argv[2])
    host = Host.open(url, agents=[support_agent()], secret=SECRET,
                     workers=0 if os.environ.get("OUTBOX_WORKERS") else None)
    keys = ApiKeys()
    print(f"key {keys.issue('acme')}", flush=True)
    tuning = json.loads(os.environ.get("OUTBOX_TUNING") or "{}")
    hooks = WebhookConfig(urls=os.environ["OUTBOX_HOOK_URLS"].split(","), secret=HOOK_SECRET,
                          outbound=OutboundPolicy.allowing(["127.0.0.1"]), **tuning)
    app = create_app(host, keys, hooks, public_url=os.environ.get("OUTBOX_PUBLIC_URL"), grace=1)
    uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")).run()


if __name__ == "__main__":
    main()
