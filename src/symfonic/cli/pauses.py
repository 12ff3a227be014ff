"""``symfonic pauses``: list a tenant's pauses, show one, revoke one, recover an interrupted one,
sweep the expired ones, check what a deploy would do to the waiting ones.

Times print in ISO 8601, UTC (``2025-01-31T09:30:00Z``), the same in every command.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from symfonic.cli.common import (
    AppOption,
    TenantOption,
    UrlOption,
    act,
    console,
    moment,
    pauses_app,
    print_outcome,
)
from symfonic.cli.exits import EPILOG, Exit, fail
from symfonic.cli.turns import AsOption, person_of, scope_of
from symfonic.outcome import RunOutcome
from symfonic.platform.host import Host
from symfonic.platform.tickets import LedgerTicket
from symfonic.platform.versions import CompatibilityReport, Verdict
from symfonic.services.ledger import Listing


@pauses_app.command("list", epilog=EPILOG)
def pauses_list(tenant: TenantOption = "demo",
                status: Annotated[Listing, typer.Option(
                    help="outstanding (answerable) or interrupted (their resumer died: "
                         "continue each with 'symfonic pauses recover').")] = "outstanding",
                version: Annotated[str | None, typer.Option(
                    "--version", help="Only the pauses made by this definition: its pin "
                                      "(support@3c03f42074af6ab5) or the digest after the @; "
                                      "what still waits on an old version before it is "
                                      "retired.")] = None,
                app_target: AppOption = None, url: UrlOption = None) -> None:
    """The tenant's outstanding (or interrupted) pauses, oldest first."""
    scope = scope_of(tenant)

    async def work(host: Host) -> list[LedgerTicket]:
        await host.sweep_expired()
        tickets: list[LedgerTicket] = []
        after: str | None = None
        while page := await host.pauses(scope, status=status, after=after):
            tickets += page
            after = page[-1].cursor
        return tickets

    tickets = act(work, app_target, url)
    if version is not None:
        tickets = [t for t in tickets if version in (t.pin, t.pin.partition("@")[2])]
    if not tickets:
        made = "" if version is None else f" made by {version}"
        console.print(f"no {status} pauses{made} for tenant {tenant!r}", highlight=False,
                      markup=False)
    for ticket in tickets:
        console.print(f"[bold]{escape(ticket.name)}[/]  agent={escape(ticket.agent)}  "
                      f"made_by={escape(ticket.pin)}  "
                      f"session={escape(ticket.session_id)}  issued={moment(ticket.issued_at)}  "
                      f"expires={moment(ticket.expires_at)}  "
                      f"question={escape(json.dumps(ticket.question))}", highlight=False)
        console.print(f"  token: {ticket.token}", highlight=False, markup=False)


@pauses_app.command("check", epilog=EPILOG)
def pauses_check(as_json: Annotated[bool, typer.Option(
                     "--json", help="Print the report as JSON.")] = False,
                 app_target: AppOption = None, url: UrlOption = None) -> None:
    """Before a deploy: run with the NEW app (--app) against the database its pauses wait in
    (--url): for each agent and definition that made waiting pauses (outstanding, claimed or
    interrupted, every tenant), how many the app would resume and how, and how many it would
    refuse and why. Exits 10 when any would be refused: run it in CI before shipping."""

    async def work(host: Host) -> CompatibilityReport:
        return await host.versions.check_compatibility()

    report = act(work, app_target, url)
    if as_json:
        console.print_json(json.dumps(report.to_dict()))
    else:
        for verdict in report.verdicts:
            console.print(_verdict_line(verdict), highlight=False)
            for change in verdict.changes:
                console.print(f"    - {change}", highlight=False, markup=False)
        console.print(f"{report.resumed} waiting pause(s) would resume, {report.refused} would be "
                      "refused", highlight=False, markup=False)
    if not report.ok:
        fail(Exit.WOULD_STRAND, f"{report.refused} waiting pause(s) would be refused: keep "
             "serving their version beside the new one (retired=...), declare an upgrade, or "
             "fix the change")


def _verdict_line(verdict: Verdict) -> str:
    made = f"{escape(verdict.paused_pin)} {escape(verdict.interaction)}: {verdict.count}"
    if verdict.refused:
        return f"[bold red]refused[/]  {made}  ({escape(verdict.why)})"
    how = {"own_version": "its own version, served", "upgrade": "an upgrade carries it over",
           "compatible_with":
           "compatible_with names it", "contract_kept": "its contract is kept"}[verdict.how]
    return f"resumes  {made}  by {escape(verdict.resumed_by or '')} ({how})"


@pauses_app.command("show", epilog=EPILOG)
def pauses_show(token: str, app_target: AppOption = None, url: UrlOption = None) -> None:
    """What the pause TOKEN asks, and what became of it."""

    async def work(host: Host) -> LedgerTicket:
        return await host.continuation.ticket(token)

    ticket = act(work, app_target, url)
    console.print_json(json.dumps({
        "tenant": ticket.scope.tenant, "agent": ticket.agent, "name": ticket.name,
        "kind": ticket.kind, "status": ticket.status, "pause": ticket.jti,
        "session": ticket.session_id, "call": ticket.tool_call_id,
        "issued_at": moment(ticket.issued_at), "expires_at": moment(ticket.expires_at),
        "answered_at": moment(ticket.answered_at) if ticket.answered_at is not None else None,
        "question": ticket.question, "answer_schema": ticket.answer_schema,
        "decision": ticket.decision, "outcome": ticket.outcome}))


@pauses_app.command("recover", epilog=EPILOG)
def pauses_recover(token: str, app_target: AppOption = None, url: UrlOption = None) -> None:
    """Continue the interrupted turn of TOKEN once, from its last durable point."""

    async def work(host: Host) -> RunOutcome:
        return await host.recover(token)

    print_outcome(act(work, app_target, url))


@pauses_app.command("revoke", epilog=EPILOG)
def pauses_revoke(token: str, as_person: AsOption = None, app_target: AppOption = None,
                  url: UrlOption = None) -> None:
    """Withdraw the pause TOKEN so it can no longer be answered (audited as --as's, else the
    operator's)."""
    person = person_of(as_person, "")

    async def work(host: Host) -> bool:
        return await host.revoke(token, by=person, credential=f"cli:{as_person or 'operator'}")

    revoked = act(work, app_target, url)
    console.print("revoked" if revoked else "not outstanding: nothing to revoke", markup=False)


@pauses_app.command("sweep", epilog=EPILOG)
def pauses_sweep(app_target: AppOption = None, url: UrlOption = None) -> None:
    """Continue the pauses that expired unanswered with the answer they declared (on_expiry), mark
    the others past their expiry expired, and claims whose lease lapsed interrupted (for every
    tenant): run it from a scheduler, e.g. every minute ('symfonic serve' decides on its own)."""

    async def work(host: Host) -> int:
        return (await host.follow_ups.take_due() + await host.expiry.decide_due()
                + await host.sweep_expired())

    changed = act(work, app_target, url)
    console.print(f"swept {changed} pause{'' if changed == 1 else 's'}", markup=False)
