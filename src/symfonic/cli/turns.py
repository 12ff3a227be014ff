"""Turns from the command line: ``run`` starts one, ``resume`` answers a pause, ``demo`` does both
in the terminal.

``demo`` works with any app (``--app``); its default request suits the example support agent. It
asks in the terminal (approve or reject, y or n; a reason for a rejection; free text or JSON for
other questions), or takes ``--answer``. A demo that fails or is interrupted while its pause is
still answerable revokes the pause rather than leave it outstanding: revoking runs nothing, where
answering with a rejection would run the rest of the turn (another model call) on the way out.
"""

from __future__ import annotations

import json
import secrets
import sys
from typing import Annotated, Any

import typer
from rich.markup import escape

from symfonic.cli.common import (
    AppOption,
    TenantOption,
    UrlOption,
    act,
    app,
    console,
    json_answer,
    moment,
    parse_answer,
    print_outcome,
    unfit_text,
)
from symfonic.cli.exits import EPILOG, Exit, explain, fail
from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.people import Person, groups_from
from symfonic.kernel.scope import Scope
from symfonic.outcome import RunOutcome
from symfonic.platform.continuation import AnswerInvalid
from symfonic.platform.host import Host

AgentOption = Annotated[str | None, typer.Option(
    "--agent", help="The agent to run (default: the app's only agent, else 'support').")]


def agent_name(host: Host, asked: str | None) -> str:
    """The agent to run: the one asked for, else the app's only one, else ``support``."""
    served = sorted(host.specs)
    name = asked or (served[0] if len(served) == 1 else "support")
    if name not in served:
        fail(Exit.USAGE, f"no agent named {name!r} in this app; it serves "
             f"{', '.join(served) or 'no agents'}: pass --agent NAME")
    return name


AsOption = Annotated[str | None, typer.Option(
    "--as", envvar="SYMFONIC_AS",
    help="Act as this person (an id): who asks, for run; who answers, for resume. The command "
         "line trusts its operator, who holds the database and the secret.")]
GroupsOption = Annotated[str, typer.Option(
    envvar="SYMFONIC_GROUPS",
    help="The groups of the person --as names, comma-separated: finance,support.")]


def person_of(person: str | None, groups: str) -> Person | None:
    """The person ``--as``/``--groups`` name; None (a service) without ``--as``."""
    if not person:
        if groups:
            fail(Exit.USAGE, "--groups describes the person --as names: give --as too")
        return None
    try:
        return Person(id=person, groups=groups_from(groups))
    except ValueError as invalid:
        fail(Exit.USAGE, str(invalid))


def scope_of(tenant: str) -> Scope:
    try:
        return Scope(tenant=tenant)
    except ValueError as invalid:
        fail(Exit.USAGE, f"--tenant {tenant!r}: {invalid}")


@app.command("run", epilog=EPILOG)
def run_agent(text: str, agent: AgentOption = None, tenant: TenantOption = "demo",
              session: Annotated[str | None, typer.Option(help="Session id (default: a new one).")] = None,
              as_person: AsOption = None, groups: GroupsOption = "",
              app_target: AppOption = None, url: UrlOption = None) -> None:
    """Start a turn with TEXT and print how it ended; a pause prints its token and stays open."""
    scope = scope_of(tenant)
    requester = person_of(as_person, groups)

    async def work(host: Host) -> RunOutcome:
        return await host.agent(agent_name(host, agent), scope).run(
            text, session_id=session or f"cli-{secrets.token_hex(4)}", requested_by=requester)

    print_outcome(act(work, app_target, url), first=True)


@app.command(epilog=EPILOG)
def resume(token: str, answer: str, as_person: AsOption = None, groups: GroupsOption = "",
           app_target: AppOption = None, url: UrlOption = None) -> None:
    """Answer the pause TOKEN with ANSWER (approve, reject, 'reject: reason', y, n, JSON or text)
    and continue its turn. A pause that names who may answer it needs --as (and --groups)."""
    reply = parse_answer(answer)
    person = person_of(as_person, groups)

    async def work(host: Host) -> RunOutcome:
        try:
            return await host.continuation.resume(
                token, reply, person=person,
                answered_by=None if person is None else f"cli:{person.id}")
        except AnswerInvalid as invalid:
            raise unfit_text(reply, invalid) from invalid

    print_outcome(act(work, app_target, url))


@app.command(epilog=EPILOG)
def demo(
    answer: Annotated[str | None, typer.Option(
        help="approve, reject, or a JSON answer; asked in the terminal when omitted.")] = None,
    request: Annotated[str, typer.Option(help="What the customer asks.")] = "Please refund order 42.",
    agent: AgentOption = None, app_target: AppOption = None, url: UrlOption = None,
    as_person: Annotated[str, typer.Option(
        "--as", help="Who you are: the person who asks and answers.")] = "you",
    groups: Annotated[str, typer.Option(help="Your groups, comma-separated.")] = "finance",
) -> None:
    """Run an agent in the terminal: it pauses (for the example, to approve a refund), you answer,
    it resumes. You ask and answer as one person (--as, in --groups: by default 'you', of the
    example's group finance). Works with your app too (--app); a failed demo revokes its pause."""
    if answer is None and not sys.stdin.isatty():
        fail(Exit.USAGE, "no terminal to ask in: pass --answer approve|reject|JSON")
    preset = None if answer is None else parse_answer(answer)
    person = person_of(as_person, groups)

    async def work(host: Host) -> RunOutcome:
        name = agent_name(host, agent)
        console.print(f"[bold]customer[/]: {escape(request)}", highlight=False)
        outcome = await host.agent(name, Scope(tenant="demo")).run(
            request, session_id=f"demo-{secrets.token_hex(4)}", requested_by=person)
        while outcome.status == "paused" and outcome.interrupt is not None:
            pause = outcome.interrupt
            console.print(f"[yellow]paused[/] for [bold]{escape(pause.name)}[/] "
                          f"{escape(json.dumps(pause.payload.get('question')))} "
                          f"(resumable: {pause.resumable}, expires {moment(pause.expires_at)})",
                          highlight=False)
            console.print(f"token: {pause.token}", highlight=False)
            try:
                outcome = await _answer(host, pause, preset, person)
            except BaseException as failed:
                if await _withdraw(host, pause.token):
                    sys.stderr.write("symfonic: the demo's pause was revoked, not left outstanding\n")
                if isinstance(failed, AnswerInvalid):
                    fail(Exit.INVALID_ANSWER, f"invalid answer: {failed}")
                raise
        return outcome

    print_outcome(act(work, app_target, url))


async def _answer(host: Host, pause: PendingInterrupt, preset: Any,
                  person: Person | None) -> RunOutcome:
    """Resume ``pause`` with ``preset``, or with answers asked in the terminal until one is valid."""
    if preset is not None:
        try:
            return await host.continuation.resume(pause.token, preset, person=person)
        except AnswerInvalid as invalid:
            raise unfit_text(preset, invalid) from invalid
    schema = (await host.continuation.ticket(pause.token)).answer_schema or {}
    while True:
        try:
            return await host.continuation.resume(pause.token, _ask(pause, schema), person=person)
        except AnswerInvalid as invalid:  # nothing was claimed: ask again
            console.print(f"[red]invalid answer[/]: {escape(str(invalid))}", highlight=False)


def _ask(pause: PendingInterrupt, schema: dict[str, Any]) -> Any:
    """One answer from the terminal: approve/reject (and a reason) for an approval, else text."""
    if "approved" not in schema.get("properties", {}):
        text = str(typer.prompt("your answer (text or JSON)"))
        try:
            return json_answer(text) if pause.kind != "ask_user" else text
        except json.JSONDecodeError:
            return text
    while True:
        word = str(typer.prompt("approve or reject? [approve/reject/y/n]", default="approve",
                                show_default=False)).strip().lower()
        if word in ("approve", "a", "y", "yes"):
            return {"approved": True}
        if word in ("reject", "r", "n", "no"):
            reason = str(typer.prompt("reason", default="rejected in the terminal"))
            return {"approved": False, "reason": reason}
        console.print("answer approve or reject (or y / n)", highlight=False)


async def _withdraw(host: Host, token: str) -> bool:
    """Revoke the demo's pause if it is still outstanding; whether it was."""
    try:
        return await host.revoke(token)
    except Exception as unexpected:
        if explain(unexpected) is None:
            raise
        return False
