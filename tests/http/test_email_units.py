"""The email channel's parts on their own: the configuration, the links, who is mailed, and what a
message says. The whole path, with a real SMTP server and a browser, is in ``test_email*.py``."""

from __future__ import annotations

import base64
import dataclasses
import hmac
import json

import pytest

from symfonic.capabilities.human.audience import AnswerPolicy
from symfonic.capabilities.human.tokens import TokenKeys
from symfonic.kernel.people import Person
from symfonic.services.ledger import PauseRecord
from symfonic.services.outbox import PAUSE_CREATED, PAUSE_ESCALATED, PAUSE_REMINDED
from symfonic.testing.pauses import NOW, pause_issue
from symfonic.transports.email import EmailConfig
from symfonic.transports.email.links import InboxLink, LinkRefused, LinkSigner
from symfonic.transports.email.messages import mail_document, to_message
from symfonic.transports.email.recipients import recipients

SECRET = "a-token-secret-of-some-length"
ADA = Person(id="ada", name="Ada", email="ada@example.com", groups=frozenset({"finance"}))
CAROL = Person(id="carol", email="carol@example.com", groups=frozenset({"finance"}))
DAN = Person(id="dan", groups=frozenset({"finance"}))
LEA = Person(id="lea", email="lea@example.com", groups=frozenset({"finance-leads", "finance"}))
BOB = Person(id="bob", email="bob@example.com", groups=frozenset({"support"}))
EVERYONE = [ADA, CAROL, DAN, LEA, BOB]


def test_the_configuration_reads_the_url_and_the_sender() -> None:
    config = EmailConfig.from_env({"SYMFONIC_SMTP_URL": "smtps://mailer:p%40ss@mail.example.com",
                                   "SYMFONIC_SMTP_FROM": "agents@example.com"})
    assert config is not None
    assert (config.host, config.port, config.tls, config.username, config.password) == (
        "mail.example.com", 465, True, "mailer", "p@ss")
    assert EmailConfig.from_env({}) is None
    with pytest.raises(ValueError, match="SYMFONIC_SMTP_FROM"):
        EmailConfig.from_env({"SYMFONIC_SMTP_URL": "smtp://localhost"})
    with pytest.raises(ValueError, match="smtp:// or smtps://"):
        EmailConfig.from_url("http://mail.example.com", "agents@example.com")
    with pytest.raises(ValueError, match="email address"):
        EmailConfig.from_url("smtp://mail.example.com", "agents\r\nBcc: x@evil.test")


def link() -> InboxLink:
    return InboxLink(tenant="acme", person="ada", pause="p1", expires_at=int(NOW) + 60)


def test_a_link_reads_back_as_signed_until_it_expires() -> None:
    signer = LinkSigner(TokenKeys(SECRET))
    signed = link()
    assert signer.read(signer.sign(signed), NOW) == signed
    with pytest.raises(LinkRefused) as expired:
        signer.read(signer.sign(signed), NOW + 60)
    assert expired.value.reason == "expired"


@pytest.mark.parametrize("tamper", ["claims", "mac", "other_key", "pause_token", "junk"])
def test_a_link_that_is_not_ours_as_signed_is_refused(tamper: str) -> None:
    keys = TokenKeys(SECRET)
    signer = LinkSigner(keys)
    kid, body, mac = signer.sign(link()).split(".")
    if tamper == "claims":  # another pause, the signature kept
        claims = json.loads(base64.urlsafe_b64decode(body + "=="))
        claims["j"] = "p2"
        body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
        text = f"{kid}.{body}.{mac}"
    elif tamper == "mac":
        text = f"{kid}.{body}.{mac[:-1]}{'A' if mac[-1] != 'A' else 'B'}"
    elif tamper == "other_key":
        text = LinkSigner(TokenKeys("another-secret-of-some-length")).sign(link())
    elif tamper == "pause_token":  # a key derived for links never verifies what the token key signed
        raw = hmac.new(SECRET.encode(), f"{kid}.{body}".encode(), "sha256").digest()
        text = f"{kid}.{body}.{base64.urlsafe_b64encode(raw).rstrip(b'=').decode()}"
    else:
        text = "not a link at all"
    with pytest.raises(LinkRefused) as refused:
        signer.read(text, NOW)
    assert refused.value.reason in ("forged", "malformed")


def test_a_link_with_claims_out_of_shape_is_malformed() -> None:
    with pytest.raises(LinkRefused, match="unexpected claims"):
        InboxLink.from_dict({"i": "x", "t": "acme", "p": "ada", "j": "p1", "x": "soon"})


def record(audience: tuple[str, ...] = ("group:finance",), *, requester: str | None = None,
           requester_may_answer: bool = True) -> PauseRecord:
    policy = AnswerPolicy(audience=audience, requester_may_answer=requester_may_answer)
    return dataclasses.replace(pause_issue().record, policy=policy.to_dict() if audience else None,
                               requester=requester)


def ids(people: list[Person]) -> list[str]:
    return [p.id for p in people]


def test_a_new_pause_mails_its_audience_with_an_address_once_each() -> None:
    assert ids(recipients(record(), PAUSE_CREATED, {}, [*EVERYONE, ADA])) == ["ada", "carol", "lea"]
    assert ids(recipients(record(("person:bob", "group:finance-leads")), PAUSE_CREATED, {},
                          EVERYONE)) == ["bob", "lea"]


def test_an_open_audience_mails_nobody_until_an_escalation_names_people() -> None:
    assert recipients(record(()), PAUSE_CREATED, {}, EVERYONE) == []
    assert recipients(record(()), PAUSE_REMINDED, {}, EVERYONE) == []
    step = {"step": {"kind": "escalate", "to": ["group:finance-leads"]}}
    assert ids(recipients(record(()), PAUSE_ESCALATED, step, EVERYONE)) == ["lea"]


def test_the_requester_who_may_not_answer_is_not_mailed() -> None:
    assert ids(recipients(record(requester="carol", requester_may_answer=False), PAUSE_CREATED,
                          {}, EVERYONE)) == ["ada", "lea"]
    assert ids(recipients(record(requester="carol"), PAUSE_CREATED, {}, EVERYONE)) == [
        "ada", "carol", "lea"]


def test_a_reminder_skips_who_voted_and_an_escalation_mails_only_whom_it_added() -> None:
    assert ids(recipients(record(), PAUSE_REMINDED, {}, EVERYONE, voted=["ada"])) == [
        "carol", "lea"]
    escalated = record(("group:finance", "group:finance-leads", "person:bob"))
    step = {"step": {"kind": "escalate", "to": ["group:finance-leads", "person:bob"]}}
    # lea is in finance too: she was mailed when the pause was made
    assert ids(recipients(escalated, PAUSE_ESCALATED, step, EVERYONE)) == ["bob"]


def test_a_message_says_what_who_and_until_when_and_never_folds_its_id() -> None:
    pause = dataclasses.replace(pause_issue().record, payload={"question": {"amount": 12}},
                                name="issue_refund")
    delivery = "email:" + "a" * 32 + ":" + "b" * 32 + ":ada"
    document = mail_document(record=pause, person=ADA, event=PAUSE_REMINDED,
                             link="https://agents.example.com/inbox/link?t=x",
                             link_expires_at=NOW + 60, requester="Carol",
                             delivery_id=delivery, domain="example.com")
    message = to_message(document, "agents@example.com")
    raw = message.as_bytes()
    assert f"Symfonic-Delivery-Id: {delivery}\r\n".encode() in raw
    assert message["Subject"] == "Reminder: decision needed: issue_refund (" + \
        pause.pin.partition("@")[0] + ")"
    text = message.get_body(preferencelist=("plain",))
    assert text is not None
    body = str(text.get_content())
    for expected in ("Asked by: Carol", '"amount": 12', "Expires: ", "inbox/link?t=x",
                     "nothing is decided until you press a button"):
        assert expected in body
    html = message.get_body(preferencelist=("html",))
    assert html is not None and "<script" not in str(html.get_content())
