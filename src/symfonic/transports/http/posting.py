"""The POSTs of webhooks and A2A pushes, connected only where the outbound policy allows.

The policy (:mod:`symfonic.transports.webhooks.outbound`) is enforced in the connection itself:
:class:`GuardedBackend` is httpcore's network backend with one change, that it resolves the host,
refuses the connection when any address is not allowed, and then connects to the address it
checked. Checking the URL before ``client.post`` would not be enough, as httpcore would resolve
the name a second time, and a name whose records change in between (DNS rebinding) would reach
the private address after all. TLS still verifies the certificate against the URL's host name:
httpcore takes the server name from the request, not from the address connected to.

Environment proxies are not used (``trust_env=False``): a proxy would be the address connected
to, and the destination's check would be lost behind it.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping

import httpcore
import httpx

from symfonic.transports.webhooks import DeliveryFailed
from symfonic.transports.webhooks.outbound import OutboundPolicy, OutboundRefused

__all__ = ["GuardedBackend", "HttpxPoster"]


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to addresses ``policy`` allows."""

    def __init__(self, policy: OutboundPolicy,
                 inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.policy = policy
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int,
                          timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
                          local_address: str | None = None,
                          socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
                          ) -> httpcore.AsyncNetworkStream:
        addresses = await self.policy.addresses(host, port)
        failure: Exception | None = None
        for address in addresses:  # each checked above; connected to as checked
            try:
                return await self._inner.connect_tcp(address, port, timeout=timeout,
                                                      local_address=local_address,
                                                      socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as failed:
                failure = failed
        raise failure or OutboundRefused(f"{host}:{port}", f"{host} resolves to no address")

    async def connect_unix_socket(
            self, path: str, timeout: float | None = None,  # noqa: ASYNC109 (httpcore's)
            socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise OutboundRefused(path, "outbound requests are never sent over a Unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over a pool whose connections :class:`GuardedBackend` opens.

    httpx has no public way to hand its pool a network backend, so the pool it builds is replaced
    by an equal one that has it; ``tests/http/test_outbound.py`` proves the guard is on the path.
    """

    def __init__(self, policy: OutboundPolicy) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            network_backend=GuardedBackend(policy))


class HttpxPoster:
    """Webhook and push attempts over one pooled client that reaches only what ``policy``
    allows. Redirects are not followed: a moved receiver is a configuration error to fix, not
    something to chase with a signed body, and a redirect could point inward."""

    def __init__(self, policy: OutboundPolicy) -> None:
        self.policy = policy
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, url: str, body: bytes, headers: Mapping[str, str],
                       seconds: float) -> int:
        if self._client is None:
            self._client = httpx.AsyncClient(transport=_GuardedTransport(self.policy),
                                             follow_redirects=False, trust_env=False)
        try:
            response = await self._client.post(url, content=body, headers=dict(headers),
                                               timeout=seconds)
        except OutboundRefused as refused:
            raise DeliveryFailed(f"refused by the outbound policy: {refused.reason}") from None
        except httpx.HTTPError as failed:
            raise DeliveryFailed(f"{type(failed).__name__}: {failed}") from None
        return response.status_code

    async def aclose(self) -> None:
        """Release the pooled connections. An attempt made afterwards opens a new client rather
        than failing: a delivery workflow can be in a step while its server stops, and an error
        there would end the workflow for good instead of leaving it to be recovered."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
