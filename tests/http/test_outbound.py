"""The outbound policy: what a webhook or push may reach, checked on the URL when it is configured
and on the very address the delivery connects to (real sockets on loopback)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator

import pytest

from symfonic.transports.http.posting import HttpxPoster
from symfonic.transports.http.server import webhook_config
from symfonic.transports.webhooks import DeliveryFailed, WebhookConfig
from symfonic.transports.webhooks.outbound import (
    ALLOW_VARIABLE,
    PUBLIC_ONLY,
    IPAddress,
    OutboundPolicy,
    OutboundRefused,
)
from tests.support.receivers import Receiver
from tests.support.servers import LOOPBACK

REFUSED = [
    ("http://127.0.0.1:5432/", "loopback"), ("http://[::1]:1/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"), ("http://10.1.2.3/", "private"),
    ("http://172.16.0.1/", "private"), ("http://192.168.1.1/", "private"),
    ("http://0.0.0.0:8000/", "unspecified"), ("http://[::]/", "unspecified"),
    ("http://224.0.0.1/", "multicast"), ("http://[ff02::1]/", "multicast"),
    ("http://[fe80::1%25eth0]/", "link-local"), ("http://100.64.0.1/", "not a public"),
    ("http://[::ffff:127.0.0.1]/", "carrying 127.0.0.1"),
    ("http://[2002:7f00:1::1]/", "carrying 127.0.0.1"),  # 6to4 around a loopback address
    ("http://localhost:8000/", "loopback name"), ("http://admin.LOCALHOST./", "loopback name"),
]


@pytest.mark.parametrize(("url", "kind"), REFUSED)
def test_a_url_naming_an_internal_address_is_refused_with_the_reason(url: str, kind: str) -> None:
    with pytest.raises(OutboundRefused) as refused:
        PUBLIC_ONLY.check(url)
    assert kind in refused.value.reason
    assert ALLOW_VARIABLE in refused.value.reason  # the refusal says how to allow it
    assert refused.value.url == url
    with pytest.raises(OutboundRefused):
        WebhookConfig(urls=["https://hooks.example.com/in", url], secret="s")


@pytest.mark.parametrize("url", ["ftp://93.184.216.34/", "/relative/hook", "http:///no-host",
                                 "http://[::1/"])
def test_what_is_no_absolute_http_url_is_refused(url: str) -> None:
    with pytest.raises(OutboundRefused):
        PUBLIC_ONLY.check(url)


@pytest.mark.parametrize("url", ["https://93.184.216.34/hook", "http://[2606:4700::1111]:8080/",
                                 "https://hooks.example.com/symfonic"])
def test_public_addresses_and_names_pass_the_url_check(url: str) -> None:
    PUBLIC_ONLY.check(url)  # names are checked where they are resolved
    assert WebhookConfig(urls=[url], secret="s").urls == [url]


def test_the_allow_list_reenables_chosen_networks_only() -> None:
    policy = OutboundPolicy.allowing(["127.0.0.1", "10.20.0.0/16", " ", "::1"])
    policy.check("http://127.0.0.1:5432/")
    policy.check("http://[::1]:1/")
    policy.check("http://10.20.3.4/")
    policy.check("http://localhost:8080/")
    policy.check("http://[::ffff:127.0.0.1]/")  # the same loopback address, written as IPv6
    for other in ("http://10.21.0.1/", "http://127.0.0.2/", "http://169.254.169.254/"):
        with pytest.raises(OutboundRefused):
            policy.check(other)


def test_the_allow_list_is_read_from_the_environment_strictly() -> None:
    assert OutboundPolicy.from_env({}) == PUBLIC_ONLY
    allowed = OutboundPolicy.from_env({ALLOW_VARIABLE: "127.0.0.1, fd00::/8"})
    assert allowed.allow == (ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("fd00::/8"))
    with pytest.raises(ValueError, match=r"SYMFONIC_OUTBOUND_ALLOW: 'loopback' is not an IP"):
        OutboundPolicy.from_env({ALLOW_VARIABLE: "127.0.0.1,loopback"})


def test_serve_refuses_an_internal_webhook_url_unless_it_is_allowed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMFONIC_WEBHOOK_URLS", "http://127.0.0.1:9000/hook")
    monkeypatch.setenv("SYMFONIC_WEBHOOK_SECRET", "s3cret")
    monkeypatch.delenv(ALLOW_VARIABLE, raising=False)
    with pytest.raises(OutboundRefused, match=r"127\.0\.0\.1 is a loopback address"):
        webhook_config()
    monkeypatch.setenv(ALLOW_VARIABLE, "127.0.0.1")
    config = webhook_config()
    assert config is not None and config.outbound.allow == (ipaddress.ip_network("127.0.0.1"),)


async def test_a_name_is_checked_on_every_address_it_resolves_to() -> None:
    name = socket.gethostname()  # resolved by the system's resolver, /etc/hosts first
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0])
                 for info in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)]
    if all(address.is_global for address in addresses):
        pytest.skip(f"{name} resolves to public addresses only here: {addresses}")
    with pytest.raises(OutboundRefused, match=f"{name} resolves to"):
        await PUBLIC_ONLY.check_resolved(f"http://{name}:8080/hook")
    with pytest.raises(OutboundRefused, match="does not resolve"):
        await PUBLIC_ONLY.check_resolved("http://no-such-host.invalid/hook")


class FakeDNS:
    """What names resolve to, changeable mid-test (a DNS rebinding attacker's zone)."""

    def __init__(self) -> None:
        self.records: dict[str, list[str]] = {}
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int, shown: str) -> list[IPAddress]:
        self.asked.append(host)
        if host not in self.records:
            raise OutboundRefused(shown, f"{host} does not resolve")
        return [ipaddress.ip_address(a) for a in self.records[host]]


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    fake = FakeDNS()
    monkeypatch.setattr("symfonic.transports.webhooks.outbound._resolve", fake)
    return fake


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.served.stop()


async def test_a_delivery_never_connects_to_a_refused_address(receiver: Receiver) -> None:
    poster = HttpxPoster(PUBLIC_ONLY)
    try:
        with pytest.raises(DeliveryFailed, match=r"refused by the outbound policy: 127\.0\.0\.1 "
                                                 r"is a loopback address"):
            await poster(receiver.url, b"{}", {}, 5.0)
    finally:
        await poster.aclose()
    assert receiver.deliveries == []


async def test_a_name_that_rebinds_to_a_private_address_is_refused_at_delivery(
        dns: FakeDNS, receiver: Receiver) -> None:
    port = int(receiver.url.rsplit(":", 1)[1].split("/", 1)[0])
    url = f"http://rebind.test:{port}/hook"
    dns.records["rebind.test"] = ["93.184.216.34"]
    await PUBLIC_ONLY.check_resolved(url)  # registered while it pointed outward
    dns.records["rebind.test"] = ["93.184.216.34", "127.0.0.1"]  # then a record points inward
    poster = HttpxPoster(PUBLIC_ONLY)
    try:
        with pytest.raises(DeliveryFailed, match=r"rebind\.test resolves to 127\.0\.0\.1"):
            await poster(url, b"{}", {}, 5.0)
    finally:
        await poster.aclose()
    assert receiver.deliveries == []
    assert dns.asked == ["rebind.test", "rebind.test"]  # resolved by the check, not by httpcore


async def test_the_connection_goes_to_the_address_that_was_checked(
        dns: FakeDNS, receiver: Receiver) -> None:
    """Pinning: the name is resolved once, by the policy, and httpcore connects to that address
    (here the allowed loopback receiver), keeping the name for the Host header."""
    port = int(receiver.url.rsplit(":", 1)[1].split("/", 1)[0])
    dns.records["receiver.test"] = ["127.0.0.1"]
    poster = HttpxPoster(LOOPBACK)
    try:
        status = await poster(f"http://receiver.test:{port}/hook", b'{"n":1}',
                              {"Content-Type": "application/json"}, 5.0)
    finally:
        await poster.aclose()
    assert status == 204
    [delivery] = receiver.deliveries
    assert delivery.headers["host"] == f"receiver.test:{port}"
    assert dns.asked == ["receiver.test"]


async def test_a_redirect_is_never_followed(receiver: Receiver) -> None:
    """Not even to an allowed address: the 307 is the attempt's answer, a failure to retry."""
    redirecting = Receiver(redirect=receiver.url)
    poster = HttpxPoster(LOOPBACK)
    try:
        assert await poster(redirecting.url, b"{}", {}, 5.0) == 307
    finally:
        await poster.aclose()
        redirecting.served.stop()
    assert len(redirecting.deliveries) == 1
    assert receiver.deliveries == []


async def test_an_attempt_after_the_poster_closed_still_posts(receiver: Receiver) -> None:
    """A delivery workflow may still be in a step while its server stops: closing the poster
    must not turn that attempt into an error that ends the workflow for good."""
    poster = HttpxPoster(LOOPBACK)
    try:
        assert await poster(receiver.url, b'{"n":1}', {}, 5.0) == 204
        await poster.aclose()
        assert await poster(receiver.url, b'{"n":2}', {}, 5.0) == 204
    finally:
        await poster.aclose()
    assert [d.document for d in receiver.deliveries] == [{"n": 1}, {"n": 2}]
