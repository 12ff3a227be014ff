"""Where the server may send a request a tenant or a configuration names: public addresses only,
unless the operator allows more.

A tenant's A2A push config and an operator's webhook URL are URLs the server POSTs to on its own.
Left alone, that makes the server a proxy into its own network: a push config to
``http://127.0.0.1:5432/`` knocks on the database, one to ``http://169.254.169.254/`` reads a
cloud's instance credentials. So a destination is refused when any address it stands for is not
a public one: unspecified, loopback, private, shared (carrier NAT), link-local, multicast or
reserved, an IPv4 address written inside an IPv6 one included (``::ffff:127.0.0.1``, 6to4,
Teredo). ``localhost`` and its subdomains are loopback by name (RFC 6761) without asking DNS.

A URL is checked twice. When it is registered (:meth:`OutboundPolicy.check`), so the caller hears
the refusal at once, with a reason. And when it is used, on the address the connection is really
opened to (:meth:`OutboundPolicy.addresses`, called by the HTTP poster's network backend): a name
that resolved to a public address at registration and to a private one since (DNS rebinding), or
one whose records mix both, is refused there, and no second lookup happens between the check and
the connection. Redirects are never followed by the posters, so a public receiver cannot bounce a
delivery inward either.

Tests, and on-premise receivers on a private network, name the networks they allow: an
:class:`OutboundPolicy` with ``allow``, or ``$SYMFONIC_OUTBOUND_ALLOW`` for ``symfonic serve``
(comma-separated addresses or networks, ``127.0.0.1,::1,10.20.0.0/16``). Nothing else is
configurable: there is no switch that turns the check off.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from symfonic.errors import SymfonicError

__all__ = ["ALLOW_VARIABLE", "PUBLIC_ONLY", "OutboundPolicy", "OutboundRefused"]

ALLOW_VARIABLE = "SYMFONIC_OUTBOUND_ALLOW"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_KINDS = (("is_unspecified", "unspecified"), ("is_loopback", "loopback"),
          ("is_link_local", "link-local"), ("is_multicast", "multicast"),
          ("is_private", "private"), ("is_reserved", "reserved"))
"""The tests :mod:`ipaddress` offers, in the order that names an address best."""


class OutboundRefused(SymfonicError, ValueError):
    """A URL the server would send a request to is not one it may reach.

    Attributes:
        url: The URL refused.
        reason: Why, in a sentence that names the address and how to allow it.
    """

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url} is refused: {reason}")
        self.url = url
        self.reason = reason


@dataclass(frozen=True)
class OutboundPolicy:
    """Which destinations outbound requests may reach: every public address, and ``allow``.

    Attributes:
        allow: Networks reachable although they are not public (a loopback receiver in tests, a
            receiver on the company network).
    """

    allow: tuple[IPNetwork, ...] = ()

    @classmethod
    def allowing(cls, entries: Iterable[str]) -> OutboundPolicy:
        """A policy allowing ``entries``, each an address or a network (``10.0.0.0/8``).

        Raises:
            ValueError: an entry is neither.
        """
        networks: list[IPNetwork] = []
        for entry in (e.strip() for e in entries):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or network "
                                 "(write 127.0.0.1, ::1 or 10.0.0.0/8)") from None
        return cls(allow=tuple(networks))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OutboundPolicy:
        """The policy ``$SYMFONIC_OUTBOUND_ALLOW`` asks for (public addresses only when unset).

        Raises:
            ValueError: the variable holds something that is not an address or network.
        """
        text = (os.environ if environ is None else environ).get(ALLOW_VARIABLE, "")
        try:
            return cls.allowing(text.split(","))
        except ValueError as wrong:
            raise ValueError(f"${ALLOW_VARIABLE}: {wrong}") from None

    def refusal(self, address: IPAddress) -> str | None:
        """Why ``address`` may not be reached, or None when it may."""
        for inner in _embedded(address):
            if any(inner in net for net in self.allow if net.version == inner.version):
                continue
            for test, kind in _KINDS:
                if getattr(inner, test):
                    return f"{_named(address, inner)} is a {kind} address{self._hint()}"
            if not inner.is_global:
                return f"{_named(address, inner)} is not a public address{self._hint()}"
        return None

    def check(self, url: str) -> tuple[str, int]:
        """Refuse ``url`` unless it is an absolute http(s) URL whose host, when written as an
        address or named ``localhost``, may be reached; its host and port.

        Names are left to :meth:`addresses`, which resolves them where the request is made: a
        name is only known to be safe on the address it resolves to at that moment.

        Raises:
            OutboundRefused: what the URL names may not be reached, or it is no http(s) URL.
        """
        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port
        except ValueError as wrong:
            raise OutboundRefused(url, f"it is not a URL ({wrong})") from None
        if parts.scheme not in ("http", "https") or not host:
            raise OutboundRefused(url, "only absolute http and https URLs are sent to")
        port = port or (443 if parts.scheme == "https" else 80)
        if _is_localhost(host):
            reason = self.refusal(ipaddress.ip_address("127.0.0.1"))
            if reason is not None:
                raise OutboundRefused(url, f"{host} is a loopback name{self._hint()}")
            return host, port
        literal = _literal(host)
        if literal is not None:
            reason = self.refusal(literal)
            if reason is not None:
                raise OutboundRefused(url, reason)
        return host, port

    async def check_resolved(self, url: str) -> None:
        """:meth:`check`, and then every address the host resolves to now.

        Raises:
            OutboundRefused: the URL, or one of its addresses, may not be reached, or its name
                does not resolve.
        """
        host, port = self.check(url)
        await self.addresses(host, port, url=url)

    async def addresses(self, host: str, port: int, *, url: str | None = None) -> list[str]:
        """Every address ``host`` stands for now, as text to connect to, when all may be reached.

        Raises:
            OutboundRefused: one of them may not be reached (a name resolving to a public and a
                private address is refused whole), or the name does not resolve.
        """
        shown = url or f"{host}:{port}"
        if _is_localhost(host):
            found = [ipaddress.ip_address("127.0.0.1")]
        else:
            literal = _literal(host)
            found = [literal] if literal is not None else await _resolve(host, port, shown)
        for address in found:
            reason = self.refusal(address)
            if reason is not None:
                raise OutboundRefused(shown, reason if _literal(host) is not None
                                      else f"{host} resolves to {address}, and {reason}")
        return [str(address) for address in found]

    def _hint(self) -> str:
        return f" (allow it with ${ALLOW_VARIABLE})"


PUBLIC_ONLY = OutboundPolicy()
"""The default: public addresses only."""


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _is_localhost(host: str) -> bool:
    name = host.rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


def _embedded(address: IPAddress) -> list[IPAddress]:
    """Where a packet to ``address`` may really go: an IPv4-mapped address is its IPv4 address;
    a 6to4 or Teredo one is itself and the IPv4 address it carries. Each must be allowed."""
    if not isinstance(address, ipaddress.IPv6Address):
        return [address]
    if address.ipv4_mapped is not None:  # a socket sends it to the IPv4 address alone
        return [address.ipv4_mapped]
    carried = [address.sixtofour, address.teredo[1] if address.teredo else None]
    return [address, *(inner for inner in carried if inner is not None)]


def _named(address: IPAddress, inner: IPAddress) -> str:
    return str(address) if inner == address else f"{address} (carrying {inner})"


async def _resolve(host: str, port: int, shown: str) -> list[IPAddress]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port,
                                                             type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as unknown:
        raise OutboundRefused(shown, f"{host} does not resolve ({unknown})") from None
    found: list[IPAddress] = []
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise OutboundRefused(shown, f"{host} resolves to no address")
    return found
