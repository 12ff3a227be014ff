"""The HTTP transport: a JSON/SSE API, the inbox page and webhooks (``symfonic-runtime[http]``).

::

    from symfonic.transports.http import ApiKeys, create_app
    keys = ApiKeys()                              # a view of the keys in the host's store
    key = keys.issue("acme")                      # shown once; only its digest is kept
    app = create_app(host, keys)                  # serve with uvicorn

Routes (see ``docs/http.md`` and ``/docs``): ``POST /v1/agents/{name}/runs``,
``GET /v1/pauses``, ``GET /v1/pauses/{token}``, ``POST /v1/pauses/{token}/resume``,
``DELETE /v1/pauses/{token}``, and the inbox under ``/inbox``.
"""

from symfonic.transports.http.app import create_app
from symfonic.transports.http.auth import PERMISSIONS, ApiKey, ApiKeys, Permission
from symfonic.transports.webhooks import WebhookConfig, verify_signature

__all__ = ["PERMISSIONS", "ApiKey", "ApiKeys", "Permission", "WebhookConfig", "create_app",
           "verify_signature"]
