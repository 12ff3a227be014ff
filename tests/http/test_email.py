"""Email, end to end: a live service, a real SMTP server (``aiosmtpd`` on loopback), real links.

A pause mails each person of its audience who has an address, once; the link in the message
signs that person in to that pause only, once, and opening it answers nothing; a mail server that
is down for a while gets every message once it is back, each under its one delivery id; the
reminders and the escalation mail the people they are for. The browser's side is in
``test_email_browser.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from symfonic import Person, Scope
from symfonic.transports.email import EmailConfig
from symfonic.transports.http import WebhookConfig
from tests.http.test_webhooks import cli
from tests.support.agents import approvals_agent, refund_lines
from tests.support.receivers import database_of
from tests.support.servers import LiveServer, ServerFactory, until
from tests.support.smtp import SmtpServer, link_in, smtp_server, text_of

PEOPLE = {
    "ada": Person(id="ada", name="Ada Lovelace", email="ada@example.com",
                  groups=frozenset({"finance"})),
    "carol": Person(id="carol", name="Carol", email="carol@example.com",
                    groups=frozenset({"finance"})),
    "dan": Person(id="dan", groups=frozenset({"finance"})),  # no address: not mailed
    "bob": Person(id="bob", email="bob@example.com", groups=frozenset({"support"})),
    "lea": Person(id="lea", name="Lea", email="lea@example.com",
                  groups=frozenset({"finance-leads"})),
}
FAST = WebhookConfig(urls=(), secret="s" * 32, poll_interval=0.1, first_backoff=1.0)


@pytest.fixture
def mail() -> Iterator[SmtpServer]:
    with smtp_server() as server:
        yield server


def desk(start_server: ServerFactory, mail: SmtpServer, **approval: object) -> LiveServer:
    """The refund agent, approved by finance, mailing through ``mail``; a key per person."""
    server = start_server(agents=[approvals_agent(approvers=["group:finance"], **approval)],
                          webhooks=FAST,
                          email=EmailConfig.from_url(mail.url, "agents@example.com"))
    for name, person in PEOPLE.items():
        server.secrets[name] = server.keys.issue("acme", person=person)
    return server


async def paused(http: httpx.AsyncClient, server: LiveServer, order: int = 42) -> str:
    response = await http.post("/v1/agents/support/runs", headers=server.auth("acme"),
                               json={"input": f"refund order {order}"})
    assert response.status_code == 200, response.text
    return str(response.json()["interrupt"]["token"])


async def notifications(http: httpx.AsyncClient, server: LiveServer,
                        token: str) -> list[dict[str, Any]]:
    response = await http.get(f"/v1/pauses/{token}/notifications", headers=server.auth("acme"))
    assert response.status_code == 200, response.text
    return list(response.json()["notifications"])


async def test_a_pause_mails_each_person_of_its_audience_once(
        start_server: ServerFactory, mail: SmtpServer) -> None:
    server = desk(start_server, mail)
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
        token = await paused(http, server)
        await until(lambda: len(mail.mailbox.messages) >= 2)
        await asyncio.sleep(1.0)  # ten more polls of the sender: nothing is sent again
        reached = await notifications(http, server, token)
    messages = mail.mailbox.messages
    assert sorted(str(m["To"]) for m in messages) == [
        "Ada Lovelace <ada@example.com>", "Carol <carol@example.com>"]
    ids = [str(m["Symfonic-Delivery-Id"]) for m in messages]
    jti = (await server.host.continuation.ticket(token)).jti
    assert len(set(ids)) == 2 and all(i.startswith(f"email:{jti}:") for i in ids)
    assert all(m["Message-ID"] and str(m["From"]) == "agents@example.com" for m in messages)
    ada = mail.mailbox.to("ada@example.com")[0]
    body = text_of(ada)
    assert str(ada["Subject"]) == "Decision needed: issue_refund (support)"
    for expected in ("Hello Ada Lovelace", "issue_refund", '"amount": 59.9', '"order_id": 42',
                     "Expires:", "tenant acme", "signs you in to this pause only, once"):
        assert expected in body, (expected, body)
    link = link_in(ada)
    assert link.startswith(f"{server.url}/inbox/link?t=") and token not in body
    assert [(r["person"], r["status"], r["event"]) for r in reached] == [
        ("ada", "delivered", "pause.created"), ("carol", "delivered", "pause.created")]


async def test_the_link_signs_its_person_in_to_that_pause_only_once(
        start_server: ServerFactory, mail: SmtpServer, refunds: Path) -> None:
    server = desk(start_server, mail)
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
        token = await paused(http, server, 42)
        other = await paused(http, server, 7)
    await until(lambda: len(mail.mailbox.messages) >= 4)
    ada_link = link_in(next(m for m in mail.mailbox.to("ada@example.com")
                            if "59.9" in text_of(m)))
    carol_link = link_in(next(m for m in mail.mailbox.to("carol@example.com")
                              if "59.9" in text_of(m)))
    secret = urlsplit(ada_link).query.removeprefix("t=")

    async with httpx.AsyncClient(base_url=server.url, timeout=20) as ada:
        opened = await ada.get(ada_link)  # what a mail scanner does: nothing happens
        assert opened.status_code == 200 and "Sign in to this pause" in opened.text
        assert "Ada Lovelace" in opened.text and not ada.cookies
        forged = await ada.post("/inbox/link", data={"t": secret[:-2] + "AA"})
        assert forged.status_code == 400 and "link_forged" in forged.text
        signed = await ada.post("/inbox/link", data={"t": secret})
        assert signed.status_code == 303
        assert signed.headers["location"] == f"/inbox/pauses/{token}"
        assert (await ada.get(f"/inbox/pauses/{token}")).status_code == 200
        inbox = await ada.get("/inbox")  # a link's session has one page
        assert (inbox.status_code, inbox.headers["location"]) == (303, f"/inbox/pauses/{token}")
        elsewhere = await ada.get(f"/inbox/pauses/{other}")
        assert elsewhere.status_code == 401 and "Sign in" in elsewhere.text
        form = await ada.get(f"/inbox/pauses/{token}")
        csrf = form.text.split('name="csrf" value="')[1].split('"')[0]
        answered_elsewhere = await ada.post(f"/inbox/pauses/{other}",
                                            data={"decision": "approve", "csrf": csrf})
        assert answered_elsewhere.status_code == 401

    async with httpx.AsyncClient(base_url=server.url, timeout=20) as replay:
        again = await replay.post("/inbox/link", data={"t": secret})
        assert again.status_code == 410 and "link_spent" in again.text and not replay.cookies

    async with httpx.AsyncClient(base_url=server.url, timeout=20) as bob:
        assert (await bob.post("/inbox/login", data={"key": server.secrets["bob"]})
                ).status_code == 303
        theirs = await bob.post("/inbox/link",
                                data={"t": urlsplit(carol_link).query.removeprefix("t=")})
        assert theirs.status_code == 409 and "link_wrong_person" in theirs.text
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as carol:
        # bob's refusal spent nothing: the link still signs carol in
        assert (await carol.post("/inbox/link", data={
            "t": urlsplit(carol_link).query.removeprefix("t=")})).status_code == 303
    assert refund_lines(refunds) == []  # signing in, and being refused, answered nothing


async def test_a_mail_server_down_then_up_gets_every_message_once(
        start_server: ServerFactory) -> None:
    with smtp_server(started=False) as mail:
        server = desk(start_server, mail)
        async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
            token = await paused(http, server)

            async def failing() -> bool:
                reached = await notifications(http, server, token)
                return len(reached) == 2 and all(
                    r["status"] == "pending" and r["attempts"] >= 1 and
                    "unreachable" in (r["last_error"] or "") for r in reached)

            await until_async(failing)
            assert mail.mailbox.messages == []
            mail.start()
            server.clock.advance(400)  # past any backoff
            await until(lambda: len(mail.mailbox.messages) >= 2)
            await asyncio.sleep(1.0)
            reached = await notifications(http, server, token)
        ids = [str(m["Symfonic-Delivery-Id"]) for m in mail.mailbox.messages]
        assert len(ids) == 2 and len(set(ids)) == 2
        assert sorted(ids) == sorted(r["delivery_id"] for r in reached)
        assert all(r["status"] == "delivered" and r["attempts"] >= 2 for r in reached)


@pytest.mark.e2e  # runs the command line
async def test_a_given_up_email_is_listed_with_its_person_and_sent_again(
        start_server: ServerFactory, tmp_path: Path) -> None:
    with smtp_server(started=False) as mail:
        server = start_server(agents=[approvals_agent(approvers=["person:ada"])],
                              webhooks=dataclasses.replace(FAST, max_attempts=2),
                              email=EmailConfig.from_url(mail.url, "agents@example.com"))
        server.secrets["ada"] = server.keys.issue("acme", person=PEOPLE["ada"])
        async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
            token = await paused(http, server)

            async def given_up() -> bool:
                server.clock.advance(60)  # past each backoff
                reached = await notifications(http, server, token)
                return [r["status"] for r in reached] == ["failed"]

            await until_async(given_up)
            [entry] = await notifications(http, server, token)
            url = f"sqlite:///{database_of(server)}"
            listed = await asyncio.to_thread(cli, tmp_path, "webhooks", "failed", "--url", url)
            assert listed.returncode == 0, listed.stderr
            assert entry["delivery_id"] in listed.stdout and "to=ada@example.com" in listed.stdout
            assert "event=email" in listed.stdout and "unreachable" in listed.stdout
            mail.start()
            retried = await asyncio.to_thread(cli, tmp_path, "webhooks", "retry",
                                              entry["delivery_id"], "--url", url)
            assert retried.returncode == 0, retried.stderr
            await until(lambda: len(mail.mailbox.messages) == 1)

            async def recorded() -> bool:  # the server accepted it; the sender records it next
                return [r["status"] for r in await notifications(http, server, token)] == [
                    "delivered"]

            await until_async(recorded)
        assert str(mail.mailbox.messages[0]["Symfonic-Delivery-Id"]) == entry["delivery_id"]
        assert len(mail.mailbox.messages) == 1


async def test_reminders_and_the_escalation_mail_the_people_they_are_for(
        start_server: ServerFactory, mail: SmtpServer, refunds: Path) -> None:
    """The whole wait of a pause nobody answers: asked, reminded, escalated, then decided by its
    declared answer; each once, and each mailed to whom it concerns."""
    server = desk(start_server, mail, remind_after=timedelta(minutes=10),
                  escalate_after=timedelta(hours=1), escalate_to=["group:finance-leads"],
                  ttl=timedelta(hours=2), on_expiry={"approved": False, "reason": "nobody came"})
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
        token = await paused(http, server)

        async def mailed(count: int) -> None:
            """Wait for ``count`` messages, saying where each delivery stands if they do not
            come (a retry's backoff runs on the manual clock: it is nudged on meanwhile)."""
            deadline = time.monotonic() + 30
            while len(mail.mailbox.messages) < count:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{len(mail.mailbox.messages)} of {count} mailed: "
                                         f"{await notifications(http, server, token)}")
                server.clock.advance(1)
                await asyncio.sleep(0.1)
            assert len(mail.mailbox.messages) == count

        await mailed(2)
        server.clock.advance(11 * 60)  # taken here, or by the server's own loop: once either way
        server.served.call(server.host.follow_ups.take_due())
        await mailed(4)
        server.clock.advance(50 * 60)
        server.served.call(server.host.follow_ups.take_due())
        await mailed(5)
        reached = await notifications(http, server, token)
        history = (await http.get(f"/v1/pauses/{token}/history",
                                  headers=server.auth("acme"))).json()["records"]
        assert [r["kind"] for r in history].count("reminded") == 1
        assert [r["kind"] for r in history].count("escalated") == 1
        server.clock.advance(61 * 60)  # past the expiry: the declared answer ends it, once
        server.served.call(server.host.expiry.decide_due())  # or the server's loop does
        await until(lambda: [t.status for t in server.served.call(
            server.host.answered(Scope(tenant="acme")))] == ["completed"])
        assert server.served.call(server.host.expiry.decide_due()) == 0
        assert server.served.call(server.host.follow_ups.take_due()) == 0
        await asyncio.sleep(0.5)  # nothing more is mailed
    [decided] = server.served.call(server.host.answered(Scope(tenant="acme")))
    assert (decided.status, decided.answered_by) == ("completed", "system:on_expiry")
    assert refund_lines(refunds) == []
    subjects = [(str(m["To"]).split("<")[1].rstrip(">"), str(m["Subject"]).split(":")[0])
                for m in mail.mailbox.messages]
    assert sorted(subjects) == sorted([
        ("ada@example.com", "Decision needed"), ("carol@example.com", "Decision needed"),
        ("ada@example.com", "Reminder"), ("carol@example.com", "Reminder"),
        ("lea@example.com", "Escalated to you")])
    assert [r["event"] for r in reached].count("pause.escalated") == 1
    assert len(mail.mailbox.messages) == 5


async def until_async(check: Callable[[], Awaitable[bool]], within: float = 15.0) -> None:
    """Wait until ``check()`` returns True."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not await check():
        assert loop.time() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)
