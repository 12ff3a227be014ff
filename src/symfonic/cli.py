"""``symfonic``: the command line.

``run`` starts a turn and prints its outcome (a pause's token). ``demo`` runs the example support
agent on the embedded SQLite default: it pauses for approval of a refund, asks in the terminal
(or takes ``--answer``), and resumes. ``pauses`` lists, shows and revokes a tenant's pauses;
``resume`` answers one from its token; ``serve`` starts the HTTP service and inbox, whose API keys
``keys`` manages; ``db migrate`` creates or upgrades the schema.

Tokens are signed with ``$SYMFONIC_SECRET``; without it the CLI uses a development secret kept in
``.symfonic/secret`` (created on first use, readable by its owner only), so that ``demo`` and
``resume`` in two shells agree on it.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from symfonic.agent import RunOutcome
from symfonic.kernel.scope import Scope
from symfonic.platform.claimed import DEFAULT_LEASE
from symfonic.platform.continuation import (
    AnswerInvalid,
    OutcomeUnknown,
    RecoveryRefused,
    UnknownPauseToken,
)
from symfonic.platform.host import SECRET_VARIABLE, Host
from symfonic.platform.tickets import LedgerTicket
from symfonic.services.ledger import Listing

T = TypeVar("T")
app = typer.Typer(help="symfonic: agents whose turns can stop to ask a person.", no_args_is_help=True)
pauses_app = typer.Typer(help="A tenant's pauses.", no_args_is_help=True)
db_app = typer.Typer(help="The database.", no_args_is_help=True)
app.add_typer(pauses_app, name="pauses")
app.add_typer(db_app, name="db")
keys_app = typer.Typer(help="API keys of the HTTP service (needs symfonic[http]).", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
console = Console()

UrlOption = Annotated[str | None, typer.Option("--url", help="Database URL (default: "
                                               "$SYMFONIC_DATABASE_URL or sqlite:///.symfonic/symfonic.db).")]
TenantOption = Annotated[str, typer.Option("--tenant", help="The tenant (scope) to act in.")]
DEV_SECRET_FILE = Path(".symfonic/secret")
LEASE_VARIABLE = "SYMFONIC_CLAIM_LEASE"
"""Seconds a resume's claim holds without renewal (``Host.open(claim_lease=...)``)."""


def development_secret() -> str:
    """``$SYMFONIC_SECRET``, else the local development secret (made on first use)."""
    configured = os.environ.get(SECRET_VARIABLE)
    if configured:
        return configured
    if not DEV_SECRET_FILE.exists():
        DEV_SECRET_FILE.parent.mkdir(parents=True, exist_ok=True)
        DEV_SECRET_FILE.touch(mode=0o600)
        DEV_SECRET_FILE.write_text(secrets.token_urlsafe(32))
    return DEV_SECRET_FILE.read_text().strip()


def open_host(url: str | None) -> Host:
    """The app every command acts on: the example support agent, the default app.

    The one place the CLI reaches for ``symfonic.examples``; a user's own app replaces it here.
    """
    from symfonic.examples.support import support_agent

    lease = float(os.environ.get(LEASE_VARIABLE) or DEFAULT_LEASE)
    # With webhooks configured, every command's pauses are announced, not only the server's.
    notify = bool(os.environ.get("SYMFONIC_WEBHOOK_URLS", "").strip())
    return Host.open(url, agents=[support_agent()], secret=development_secret(),
                     claim_lease=timedelta(seconds=lease), notifications=notify)


def _run(work: Callable[[Host], Awaitable[T]], url: str | None) -> T:
    async def main() -> T:
        async with open_host(url) as host:
            return await work(host)

    return asyncio.run(main())


@app.command()
def demo(
    url: UrlOption = None,
    answer: Annotated[str | None, typer.Option(
        help="approve, reject, or a JSON answer; asked in the terminal when omitted.")] = None,
    request: Annotated[str, typer.Option(help="What the customer asks.")] = "Please refund order 42.",
) -> None:
    """Run the support agent: it pauses for approval of a refund, then resumes with the answer."""

    async def work(host: Host) -> None:
        agent = host.agent("support", Scope(tenant="demo"))
        session = f"demo-{secrets.token_hex(4)}"
        console.print(f"[bold]customer[/]: {request}")
        outcome = await agent.run(request, session_id=session)
        while outcome.status == "paused" and outcome.interrupt is not None:
            interrupt = outcome.interrupt
            console.print(f"[yellow]paused[/] for [bold]{interrupt.name}[/] "
                          f"{json.dumps(interrupt.payload.get('question'))} "
                          f"(resumable: {interrupt.resumable})")
            console.print(f"token: {interrupt.token}", soft_wrap=True)
            reply = _parse_answer(answer if answer is not None else _ask(interrupt.kind))
            outcome = await host.continuation.resume(interrupt.token, reply)
        _print_outcome(outcome)

    _run(work, url)


@app.command("run")
def run_agent(text: str, agent: Annotated[str, typer.Option(help="The agent to run.")] = "support",
              tenant: TenantOption = "demo",
              session: Annotated[str | None, typer.Option(help="Session id (default: a new one).")] = None,
              url: UrlOption = None) -> None:
    """Start a turn with TEXT and print how it ended; a pause prints its token and stays open."""

    async def work(host: Host) -> RunOutcome:
        return await host.agent(agent, Scope(tenant=tenant)).run(
            text, session_id=session or f"cli-{secrets.token_hex(4)}")

    _print_outcome(_run(work, url), first=True)


def _ask(kind: str) -> str:
    if not sys.stdin.isatty():
        raise typer.BadParameter("no terminal to ask in: pass --answer approve|reject|JSON")
    if kind == "ask_user":
        return str(typer.prompt("your answer"))
    return "approve" if typer.confirm("approve?", default=True) else "reject"


def _parse_answer(text: str) -> Any:
    if text == "approve":
        return {"approved": True}
    if text == "reject":
        return {"approved": False, "reason": "rejected from the command line"}
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _print_outcome(outcome: RunOutcome, *, first: bool = False) -> None:
    if outcome.status == "completed":
        console.print(f"[green]completed[/]: {outcome.output}")
    elif outcome.status == "paused" and outcome.interrupt is not None:
        console.print(f"[yellow]{'paused' if first else 'paused again'}[/] for "
                      f"{outcome.interrupt.name} {json.dumps(outcome.interrupt.payload.get('question'))}"
                      f"; token: {outcome.interrupt.token}", soft_wrap=True)
    else:
        console.print(f"[red]failed[/]: {outcome.error}")


@pauses_app.command("list")
def pauses_list(tenant: TenantOption = "demo", url: UrlOption = None,
                status: Annotated[Listing, typer.Option(
                    help="outstanding (answerable) or interrupted (their resumer died: "
                         "continue each with 'symfonic pauses recover').")] = "outstanding",
                ) -> None:
    """The tenant's outstanding (or interrupted) pauses, oldest first."""

    async def work(host: Host) -> None:
        await host.sweep_expired()
        tickets: list[LedgerTicket] = []
        after: str | None = None
        while page := await host.pauses(Scope(tenant=tenant), status=status, after=after):
            tickets += page
            after = page[-1].cursor
        if not tickets:
            console.print(f"no {status} pauses for tenant {tenant!r}")
        for ticket in tickets:
            issued = datetime.fromtimestamp(ticket.issued_at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
            console.print(f"[bold]{ticket.name}[/]  session={ticket.session_id}  issued={issued}Z  "
                          f"question={json.dumps(ticket.question)}", soft_wrap=True)
            console.print(f"  token: {ticket.token}", soft_wrap=True)

    _run(work, url)


@pauses_app.command("show")
def pauses_show(token: str, url: UrlOption = None) -> None:
    """What the pause TOKEN names."""

    async def work(host: Host) -> None:
        ticket = await host.continuation.ticket(token)
        console.print_json(json.dumps({
            "tenant": ticket.scope.tenant, "name": ticket.name, "kind": ticket.kind,
            "status": ticket.status, "session": ticket.session_id, "question": ticket.question,
            "expires_at": ticket.expires_at, "answer_schema": ticket.answer_schema,
            "outcome": ticket.outcome}))

    _refusing(lambda: _run(work, url))


@pauses_app.command("recover")
def pauses_recover(token: str, url: UrlOption = None) -> None:
    """Continue the interrupted turn of TOKEN once, from its last durable point."""

    async def work(host: Host) -> RunOutcome:
        return await host.recover(token)

    _print_outcome(_refusing(lambda: _run(work, url)))


@pauses_app.command("revoke")
def pauses_revoke(token: str, url: UrlOption = None) -> None:
    """Withdraw the pause TOKEN so it can no longer be answered."""

    async def work(host: Host) -> bool:
        return await host.revoke(token)

    revoked = _refusing(lambda: _run(work, url))
    console.print("revoked" if revoked else "not outstanding: nothing to revoke")


@app.command()
def resume(token: str, answer: str, url: UrlOption = None) -> None:
    """Answer the pause TOKEN with ANSWER (approve, reject, JSON or text) and continue its turn."""

    async def work(host: Host) -> RunOutcome:
        return await host.continuation.resume(token, _parse_answer(answer))

    _print_outcome(_refusing(lambda: _run(work, url)))


@db_app.command("migrate")
def db_migrate(url: UrlOption = None) -> None:
    """Create or upgrade the schema (opening a store migrates it)."""

    async def work(host: Host) -> str:
        await host.store()
        return host.url or "the configured store"

    console.print(f"migrated {_run(work, url)}")


@app.command()
def serve(url: UrlOption = None,
          host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
          port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
          grace: Annotated[float | None, typer.Option(
              help="Seconds a stop (SIGTERM, Ctrl-C) lets running turns finish before cancelling "
                   "them (default: $SYMFONIC_SHUTDOWN_GRACE, else 30).", min=0)] = None) -> None:
    """Serve the HTTP API and the inbox page (needs ``pip install 'symfonic[http]'``)."""
    try:
        from symfonic.transports.http.server import run_server
    except ImportError as missing:
        raise typer.BadParameter(f"{missing}: pip install 'symfonic[http]'") from None
    run_server(open_host(url), host=host, port=port, grace=grace)


def _auth() -> Any:
    try:
        from symfonic.transports.http import auth
    except ImportError as missing:
        raise typer.BadParameter(f"{missing}: pip install 'symfonic[http]'") from None
    return auth


async def _key_store(host: Host) -> Any:
    """The host's store, after importing an earlier version's keys file into it if it has no keys."""
    auth = _auth()
    store = await host.store()
    await auth.import_keys_file(store, os.environ.get(auth.KEYS_FILE_VARIABLE) or auth.DEFAULT_KEYS_FILE)
    return store


@keys_app.command("add")
def keys_add(tenant: Annotated[str, typer.Option("--tenant", help="The tenant the key acts in.")],
             permission: Annotated[list[str] | None, typer.Option(
                 "--permission", help="runs, pauses:read or pauses:answer; repeat (default: all).")] = None,
             label: Annotated[str, typer.Option(help="A note to recognise the key by.")] = "",
             url: UrlOption = None) -> None:
    """Make an API key for TENANT and print it: the only time it is shown (only its hash is kept,
    in the store; running servers accept it within a second)."""
    try:
        key, record = _auth().new_key(tenant, label=label,
                                      **({"permissions": permission} if permission else {}))
    except ValueError as refused:
        raise typer.BadParameter(str(refused)) from None

    async def work(host: Host) -> bool:
        return bool(await (await _key_store(host)).add_key(record))

    if not _run(work, url):
        console.print("[red]could not store the key (its id is taken): try again[/]")
        raise typer.Exit(2)
    console.print(key, soft_wrap=True)


@keys_app.command("list")
def keys_list(tenant: Annotated[str | None, typer.Option(
                  "--tenant", help="Only this tenant's keys (default: every tenant's).")] = None,
              url: UrlOption = None) -> None:
    """The keys in the store (ids, tenants and permissions; never the keys), revoked ones marked."""

    async def work(host: Host) -> list[Any]:
        return list(await (await _key_store(host)).keys(tenant))

    for key in _run(work, url):
        revoked = "" if key.revoked_at is None else "  [red]revoked[/]"
        console.print(f"{key.id}  tenant={key.tenant}  permissions={','.join(sorted(key.permissions))}"
                      f"  label={key.label!r}{revoked}", soft_wrap=True)


@keys_app.command("revoke")
def keys_revoke(key_id: str, url: UrlOption = None) -> None:
    """Stop accepting the key with id KEY_ID (running servers refuse it within a second)."""

    async def work(host: Host) -> bool:
        return bool(await (await _key_store(host)).revoke_key(key_id, host.now()))

    if not _run(work, url):
        console.print(f"[red]no key {key_id!r} that is not revoked already[/]")
        raise typer.Exit(2)
    console.print("revoked")


@keys_app.command("remove")
def keys_remove(key_id: str, url: UrlOption = None) -> None:
    """Same as 'symfonic keys revoke' (the key stays listed, marked revoked)."""
    keys_revoke(key_id, url)


webhooks_app = typer.Typer(help="Webhook deliveries waiting in the outbox.", no_args_is_help=True)
app.add_typer(webhooks_app, name="webhooks")


@webhooks_app.command("failed")
def webhooks_failed(
    tenant: Annotated[str | None, typer.Option(
        "--tenant", help="Only this tenant's deliveries (default: every tenant's).")] = None,
    limit: Annotated[int, typer.Option(help="At most this many, oldest failure first.", min=1)] = 100,
    url: UrlOption = None,
) -> None:
    """Webhook deliveries given up after their last attempt; 'symfonic webhooks retry ID' sends one
    again."""
    try:
        scope = None if tenant is None else Scope(tenant=tenant)
    except ValueError as invalid:
        raise typer.BadParameter(str(invalid)) from None

    async def work(host: Host) -> list[Any]:
        return list(await (await host.outbox()).failed(scope, limit))

    entries = _run(work, url)
    if not entries:
        console.print("no given-up webhook deliveries" + (f" for tenant {tenant!r}" if tenant else ""))
    for entry in entries:
        note = entry.notification
        failed = datetime.fromtimestamp(entry.failed_at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        console.print(f"[bold]{note.id}[/]  tenant={note.scope.tenant}  event={note.topic}  "
                      f"pause={note.payload.get('pause_id')}  attempts={entry.attempts}  "
                      f"failed={failed}Z", soft_wrap=True)
        console.print(f"  last error: {entry.last_error}", soft_wrap=True)


@webhooks_app.command("retry")
def webhooks_retry(delivery_id: str, url: UrlOption = None) -> None:
    """Put the given-up delivery DELIVERY_ID back in the outbox: the webhook sender of 'symfonic
    serve' sends it again, with the same delivery id and a fresh set of attempts."""

    async def work(host: Host) -> bool:
        return await (await host.outbox()).retry(delivery_id, host.now())

    if not _run(work, url):
        console.print(f"[red]no given-up webhook delivery {delivery_id!r}[/]")
        raise typer.Exit(2)
    console.print(f"delivery {delivery_id} is due again")


def _refusing(work: Callable[[], T]) -> T:
    try:
        return work()
    except UnknownPauseToken as refused:
        console.print(f"[red]{type(refused).__name__}[/]: {refused}")
        raise typer.Exit(2) from None
    except AnswerInvalid as invalid:
        console.print(f"[red]invalid answer[/]: {invalid}")
        raise typer.Exit(2) from None
    except (RecoveryRefused, OutcomeUnknown) as refused:
        console.print(f"[red]{type(refused).__name__}[/]: {refused}")
        raise typer.Exit(2) from None


def main() -> None:
    app()
