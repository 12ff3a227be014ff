"""Ways in and out of a host: HTTP (API + inbox page) and webhooks.

Nothing here is imported by ``symfonic`` itself. :mod:`symfonic.transports.http` needs
``pip install 'symfonic-runtime[http]'`` (FastAPI, uvicorn, httpx); :mod:`symfonic.transports.webhooks`
(the wire format) and :mod:`symfonic.transports.webhooks.sender` (the background sender that drains
the outbox) need only the standard library, so a webhook receiver can import ``verify_signature``
without installing a web framework.
"""
