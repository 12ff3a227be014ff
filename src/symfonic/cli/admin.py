"""Operating a deployment: ``db migrate``, ``keys`` (the HTTP service's API keys) and ``webhooks``
(deliveries given up).

``keys`` needs the HTTP extra, since keys are a notion of the HTTP service; without it the command
says which ``pip install`` to run.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from symfonic.cli.common import (
    AppOption,
    UrlOption,
    act,
    console,
    db_app,
    keys_app,
    moment,
    webhooks_app,
)
from symfonic.cli.exits import EPILOG, Exit, fail
from symfonic.cli.turns import scope_of
from symfonic.kernel.people import Person, groups_from
from symfonic.platform.host import Host

if TYPE_CHECKING:  # the HTTP extra: imported only when keys are handled
    from symfonic.transports.http.accounts import KeyStore

HTTP_EXTRA = "pip install 'symfonic-runtime[http]'"


@db_app.command("migrate", epilog=EPILOG)
def db_migrate(app_target: AppOption = None, url: UrlOption = None) -> None:
    """Create or upgrade the schema (opening a store migrates it)."""

    async def work(host: Host) -> str:
        return host.url or "the app's store"

    console.print(f"migrated {act(work, app_target, url)}", highlight=False, markup=False)


def _auth() -> ModuleType:
    try:
        from symfonic.transports.http import auth
    except ImportError as missing:
        fail(Exit.CONFIGURATION, f"API keys need the HTTP extra ({missing}): {HTTP_EXTRA}")
    return auth


async def _key_store(host: Host) -> KeyStore:
    """The host's API keys, after importing an earlier version's keys file into them if there are
    none yet."""
    auth = _auth()
    from symfonic.transports.http.accounts import accounts_of

    store = accounts_of(await host.store()).keys
    try:
        await auth.import_keys_file(store, os.environ.get(auth.KEYS_FILE_VARIABLE) or auth.DEFAULT_KEYS_FILE)
    except ValueError as damaged:
        fail(Exit.CONFIGURATION, str(damaged))
    return store


@keys_app.command("add", epilog=EPILOG)
def keys_add(tenant: Annotated[str, typer.Option("--tenant", help="The tenant the key acts in.")],
             permission: Annotated[list[str] | None, typer.Option(
                 "--permission", help="runs, pauses:read, pauses:answer or audit:read; repeat "
                              "(default: all).")] = None,
             label: Annotated[str, typer.Option(help="A note to recognise the key by.")] = "",
             person: Annotated[str | None, typer.Option(
                 "--person", help="The id of the person the key acts as (default: none, a "
                                  "service key).")] = None,
             name: Annotated[str, typer.Option(help="The person's display name.")] = "",
             email: Annotated[str, typer.Option(help="The person's email.")] = "",
             groups: Annotated[str, typer.Option(
                 help="The person's groups, comma-separated: finance,support.")] = "",
             app_target: AppOption = None, url: UrlOption = None) -> None:
    """Make an API key for TENANT and print it: the only time it is shown (only its hash is kept,
    in the store; running servers accept it within a second). With --person, whoever holds it
    answers as that person; without, it is a service key."""
    try:
        if person is None and (name or email or groups):
            raise ValueError("--name, --email and --groups describe a person: give --person too")
        who = None if person is None else Person(id=person, name=name, email=email,
                                                  groups=groups_from(groups))
        key, record = _auth().new_key(tenant, label=label, person=who,
                                      **({"permissions": permission} if permission else {}))
    except ValueError as refused:
        fail(Exit.USAGE, str(refused))

    async def work(host: Host) -> bool:
        return bool(await (await _key_store(host)).add_key(record))

    if not act(work, app_target, url):
        fail(Exit.STORE, "could not store the key (its id is taken): try again")
    console.print(key, highlight=False, markup=False)


@keys_app.command("list", epilog=EPILOG)
def keys_list(tenant: Annotated[str | None, typer.Option(
                  "--tenant", help="Only this tenant's keys (default: every tenant's).")] = None,
              app_target: AppOption = None, url: UrlOption = None) -> None:
    """The keys in the store (ids, tenants and permissions; never the keys), revoked ones marked."""

    async def work(host: Host) -> list[Any]:
        return list(await (await _key_store(host)).keys(tenant))

    for key in act(work, app_target, url):
        revoked = "" if key.revoked_at is None else f"  [red]revoked[/] {moment(key.revoked_at)}"
        console.print(f"{escape(key.id)}  tenant={escape(key.tenant)}  {_person_of(key)}"
                      f"permissions={','.join(sorted(key.permissions))}  "
                      f"created={moment(key.created_at)}  label={escape(repr(key.label))}{revoked}",
                      highlight=False)


def _person_of(key: Any) -> str:
    person: Person | None = key.person
    if person is None:
        return "service  "
    groups = f" groups={','.join(sorted(person.groups))}" if person.groups else ""
    return escape(f"person={person.id} ({person.display_name}){groups}  ")


@keys_app.command("revoke", epilog=EPILOG)
def keys_revoke(key_id: str, app_target: AppOption = None, url: UrlOption = None) -> None:
    """Stop accepting the key with id KEY_ID (running servers refuse it within a second)."""

    async def work(host: Host) -> bool:
        return bool(await (await _key_store(host)).revoke_key(key_id, host.now()))

    if not act(work, app_target, url):
        fail(Exit.USAGE, f"no key {key_id!r} that is not revoked already ('symfonic keys list' "
             "shows the ids)")
    console.print("revoked", markup=False)


@keys_app.command("remove", epilog=EPILOG)
def keys_remove(key_id: str, app_target: AppOption = None, url: UrlOption = None) -> None:
    """Same as 'symfonic keys revoke' (the key stays listed, marked revoked)."""
    keys_revoke(key_id, app_target, url)


@webhooks_app.command("failed", epilog=EPILOG)
def webhooks_failed(
    tenant: Annotated[str | None, typer.Option(
        "--tenant", help="Only this tenant's deliveries (default: every tenant's).")] = None,
    limit: Annotated[int, typer.Option(help="At most this many, oldest failure first.", min=1)] = 100,
    app_target: AppOption = None, url: UrlOption = None,
) -> None:
    """Deliveries given up after their last attempt (webhooks, A2A pushes, emails); 'symfonic
    webhooks retry ID' sends one again."""
    scope = None if tenant is None else scope_of(tenant)

    async def work(host: Host) -> list[Any]:
        return list(await (await host.outbox()).failed(scope, limit))

    entries = act(work, app_target, url)
    if not entries:
        console.print("no given-up webhook deliveries" + (f" for tenant {tenant!r}" if tenant else ""),
                      markup=False)
    for entry in entries:
        note = entry.notification
        person = note.payload.get("person")  # an email's recipient
        to = f"  to={escape(str(person.get('email')))}" if isinstance(person, dict) else ""
        console.print(f"[bold]{escape(note.id)}[/]  tenant={escape(note.scope.tenant)}  "
                      f"event={escape(note.topic)}  pause={escape(str(note.payload.get('pause_id')))}"
                      f"{to}  attempts={entry.attempts}  failed={moment(entry.failed_at)}",
                      highlight=False)
        console.print(f"  last error: {entry.last_error}", highlight=False, markup=False)


@webhooks_app.command("retry", epilog=EPILOG)
def webhooks_retry(delivery_id: str, app_target: AppOption = None, url: UrlOption = None) -> None:
    """Put the given-up delivery DELIVERY_ID back in the outbox: the webhook sender of 'symfonic
    serve' sends it again, with the same delivery id and a fresh set of attempts."""

    async def work(host: Host) -> bool:
        return await (await host.outbox()).retry(delivery_id, host.now())

    if not act(work, app_target, url):
        fail(Exit.USAGE, f"no given-up webhook delivery {delivery_id!r} ('symfonic webhooks "
             "failed' lists them)")
    console.print(f"delivery {delivery_id} is due again", markup=False)
