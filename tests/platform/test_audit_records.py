"""A record's digest, as :func:`next_record` computes it, is the digest of its own fields: what
``symfonic audit verify`` recomputes from the stored rows."""

from __future__ import annotations

from symfonic.services.audit import Actor, AuditEvent, chain_digest, next_record, verify


def test_a_record_carries_the_digest_of_its_fields_and_links_to_the_one_before() -> None:
    anonymous = AuditEvent(kind="answered", at=1_796_000_000.123456, detail={"b": 1, "a": "é"})
    person = AuditEvent(kind="completed", at=1_796_000_001.5,
                        actor=Actor(person="ada", credential="inbox:3f9c0a1b2c3d"))
    first = next_record("acme", "jti-1", anonymous, None)
    second = next_record("acme", "jti-1", person, (first.seq, first.digest))
    assert (first.seq, first.prev, second.seq, second.prev) == (1, "", 2, first.digest)
    for record in (first, second):
        assert record.digest == chain_digest(record.fields())
    assert first.detail == '{"a":"\\u00e9","b":1}' and first.at_us == 1_796_000_000_123_456
    assert (second.person, second.credential, second.channel) == ("ada", "inbox:3f9c0a1b2c3d",
                                                                   "inbox")
    assert verify([first, second], "acme") is None
    assert next_record("acme", "jti-1", person, (1, "0" * 64)).digest != second.digest
