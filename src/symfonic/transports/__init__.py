"""Ways in and out of a host: HTTP (API + inbox page) and webhooks.

Nothing here is imported by ``symfonic`` itself. :mod:`symfonic.transports.http` needs
``pip install 'symfonic[http]'`` (FastAPI, uvicorn, httpx); :mod:`symfonic.transports.webhooks`
needs only the standard library, so a webhook receiver can import ``verify_signature`` without
installing a web framework.
"""
