"""The transport's parts that need no server: keys at rest, forms, escaping, import isolation."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from symfonic.kernel.events import RunEvent
from symfonic.kernel.scope import Scope
from symfonic.platform.continuation import AnswerInvalid
from symfonic.platform.tickets import LedgerTicket
from symfonic.stores.memory import MemoryStore
from symfonic.transports.http import forms, pages
from symfonic.transports.http.accounts import accounts_of
from symfonic.transports.http.auth import ApiKeys, import_keys_file, new_key
from symfonic.transports.http.errors import Refusal
from symfonic.transports.http.server import GRACE_VARIABLE, shutdown_grace
from symfonic.transports.http.sse import RunPump


async def test_keys_are_hashed_in_the_store_and_seen_by_another_view() -> None:
    store = MemoryStore()
    keys = ApiKeys()
    key = keys.issue("acme", label="ci")
    reader = keys.issue("acme", permissions=["pauses:read"])
    assert keys.authenticate(key) is not None  # accepted at once, before any store
    await keys.bind(accounts_of(store).keys)
    stored = repr(await accounts_of(store).keys.keys())
    assert key not in stored and key.split("_", 2)[2] not in stored
    again = ApiKeys()
    await again.bind(accounts_of(store).keys)
    found = again.authenticate(key)
    assert found is not None and found.tenant == "acme" and found.allows("pauses:answer")
    assert not again.authenticate(reader).allows("runs")  # type: ignore[union-attr]
    for wrong in (None, "", key + "x", key[:-1], "sfk_" + found.id + "_guess", "x" * 1000):
        assert again.authenticate(wrong) is None
    assert await keys.revoke(found.id)
    assert not await keys.revoke(found.id)
    assert keys.authenticate(key) is None and again.authenticate(key) is not None
    assert await again.refresh() and again.authenticate(key) is None
    assert not await again.refresh()  # nothing changed since


async def test_a_replaced_key_is_revoked_in_the_store() -> None:
    store = MemoryStore()
    first = ApiKeys()
    old = first.issue("demo", label="development", replace=True)
    kept = first.issue("demo", label="other")
    await first.bind(accounts_of(store).keys)
    second = ApiKeys()
    new = second.issue("demo", label="development", replace=True)
    await second.bind(accounts_of(store).keys)
    assert second.authenticate(old) is None and second.authenticate(new) is not None
    assert second.authenticate(kept) is not None
    assert len([k for k in await accounts_of(store).keys.keys("demo") if k.revoked_at is None]) == 2


async def test_an_old_keys_file_is_imported_once_into_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "api_keys.json"
    key, record = new_key("acme", label="old")
    path.write_text(json.dumps({"format": 1, "keys": [
        {"id": record.id, "digest": record.digest, "tenant": "acme",
         "permissions": sorted(record.permissions), "label": "old", "created_at": 1.0}]}))
    store = MemoryStore()
    keys = ApiKeys.load(path)
    await keys.bind(accounts_of(store).keys)
    assert keys.authenticate(key) is not None and await accounts_of(store).keys.keys_version() == 1
    assert await import_keys_file(accounts_of(store).keys, path) == 0  # the store has keys now
    await accounts_of(store).keys.revoke_key(record.id, 2.0)
    again = ApiKeys.load(path)
    await again.bind(accounts_of(store).keys)  # not imported again: the revocation stands
    assert again.authenticate(key) is None


def test_keys_refuse_bad_tenants_permissions_and_files(tmp_path: Path) -> None:
    keys = ApiKeys()
    with pytest.raises(ValueError, match="tenant"):
        keys.issue("a/b")
    with pytest.raises(ValueError, match="permissions"):
        keys.issue("acme", permissions=["admin"])  # type: ignore[list-item]
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({"format": 99, "keys": []}))
    with pytest.raises(ValueError, match="format 99"):
        ApiKeys.load(newer)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ValueError, match="not a symfonic keys file"):
        ApiKeys.load(broken)


APPROVAL = forms.AnswerForm(
    purpose="approval", answer_schema={}, question={"order_id": 42, "amount": 59.9},
    arguments_schema={"type": "object", "required": ["order_id", "amount"], "properties": {
        "order_id": {"type": "integer", "title": "Order Id"}, "amount": {"type": "number"}}})


def test_an_approval_form_reads_back_each_decision() -> None:
    html = forms.render(APPROVAL)
    assert 'name="arg.order_id" value="42"' in html and 'name="arg.amount" value="59.9"' in html
    assert forms.parse(APPROVAL, {"decision": "approve"}) == {"approved": True}
    assert forms.parse(APPROVAL, {"decision": "reject", "reason": " no "}) == {
        "approved": False, "reason": "no"}
    assert forms.parse(APPROVAL, {"decision": "edit", "arg.order_id": "7", "arg.amount": "1.5"}) == {
        "approved": True, "arguments": {"order_id": 7, "amount": 1.5}}
    assert forms.parse(APPROVAL, {"decision": "edit", "arg.order_id": "x", "arg.amount": ""}) == {
        "approved": True, "arguments": {"order_id": "x"}}  # left for the schema to refuse
    with pytest.raises(AnswerInvalid):
        forms.parse(APPROVAL, {})


def test_a_schema_without_properties_is_answered_as_json() -> None:
    form = forms.AnswerForm(purpose="typed", answer_schema={"type": "array"}, question=None)
    assert 'name="answer_json"' in forms.render(form)
    assert forms.parse(form, {"answer_json": "[1, 2]"}) == [1, 2]
    with pytest.raises(AnswerInvalid) as broken:
        forms.parse(form, {"answer_json": "[1,"})
    assert broken.value.errors[0]["loc"] == ["answer"]
    with pytest.raises(AnswerInvalid):
        forms.parse(form, {"answer_json": "[" * 100_000})


def test_what_a_model_wrote_is_escaped_in_the_page() -> None:
    evil = "<script>alert(1)</script>"
    ticket = LedgerTicket(token='t"><x', scope=Scope(tenant="acme"),
                          question={"question": evil, "options": [evil]}, agent=evil,
                          name="ask_user", kind="ask_user", session_id=evil, tool_call_id="c",
                          issued_at=0, expires_at=0, status="outstanding",
                          answer_schema={"type": "string"})
    form = forms.AnswerForm(purpose="ask_user", answer_schema={"type": "string"},
                            question=ticket.question)
    html = pages.inbox([pages.PauseView(ticket=ticket, form=form)], tenant="acme", csrf="c",
                       agents=[evil])
    assert "<script>alert" not in html and "<x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_importing_symfonic_imports_no_web_framework() -> None:
    probe = ("import sys, symfonic, symfonic.transports, symfonic.transports.webhooks, symfonic.cli; "
             "print(sorted({'fastapi', 'uvicorn', 'httpx', 'starlette'} & set(sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


async def test_a_drain_lets_quick_runs_end_then_cancels_and_awaits_the_rest() -> None:
    ended: list[str] = []

    async def run(name: str, seconds: float) -> AsyncIterator[RunEvent]:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            ended.append(f"{name} cancelled")
            raise
        ended.append(f"{name} finished")
        events: list[RunEvent] = []  # only how the run ends matters here
        for event in events:
            yield event

    pump = RunPump()
    quick, slow = pump.start(run("quick", 0.05)), pump.start(run("slow", 60))
    loop = asyncio.get_running_loop()
    began = loop.time()
    await pump.drain(0.3)
    assert 0.25 < loop.time() - began < 2
    assert ended == ["quick finished", "slow cancelled"]  # cancelled and awaited, not abandoned
    assert await quick.next() is None
    with pytest.raises(Refusal) as interrupted:
        await slow.next()
    assert (interrupted.value.status, interrupted.value.error) == (503, "run_interrupted")
    began = loop.time()
    await pump.drain(5)  # nothing left: at once
    assert loop.time() - began < 0.1


def test_the_shutdown_grace_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(GRACE_VARIABLE, raising=False)
    assert shutdown_grace() == 30.0
    monkeypatch.setenv(GRACE_VARIABLE, " 2.5 ")
    assert shutdown_grace() == 2.5
    for wrong in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv(GRACE_VARIABLE, wrong)
        with pytest.raises(ValueError, match=GRACE_VARIABLE):
            shutdown_grace()
