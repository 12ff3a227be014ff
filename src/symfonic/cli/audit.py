"""``symfonic audit export`` and ``symfonic audit verify``: the decisions' trail, out and checked.

``export`` writes every record as one JSON line, oldest first, tenant by tenant, with the digests
that chain them, so the trail can be archived or checked by something that is not symfonic.
``verify`` reads it back from the database and recomputes each digest and link
(:func:`symfonic.services.audit.verify`): it prints each tenant's head (the last record's digest:
keep it elsewhere to notice the newest records being cut off) and exits 9 naming the first record
that no longer fits when a row was altered, removed or reordered.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from symfonic.cli.common import AppOption, UrlOption, act, audit_app, console
from symfonic.cli.exits import EPILOG, Exit, fail
from symfonic.cli.turns import scope_of
from symfonic.platform.host import Host
from symfonic.services.audit import AuditBreak, AuditRecord, every_record, verify

TenantFilter = Annotated[str | None, typer.Option(
    "--tenant", help="Only this tenant's trail (default: every tenant's).")]


async def _tenants(host: Host, tenant: str | None) -> list[str]:
    if tenant is not None:
        return [scope_of(tenant).tenant]
    return await (await host.store()).audit.tenants()


@audit_app.command("export", epilog=EPILOG)
def audit_export(tenant: TenantFilter = None, app_target: AppOption = None,
                 url: UrlOption = None) -> None:
    """Print the trail as JSON lines, oldest record first, one tenant after another."""

    async def work(host: Host) -> None:
        trail = (await host.store()).audit
        for name in await _tenants(host, tenant):
            async for record in every_record(trail, name):
                sys.stdout.write(json.dumps(record.to_dict(), sort_keys=True) + "\n")
        sys.stdout.flush()

    act(work, app_target, url)


@audit_app.command("verify", epilog=EPILOG)
def audit_verify(tenant: TenantFilter = None, app_target: AppOption = None,
                 url: UrlOption = None) -> None:
    """Recompute every record's digest and link; exit 9 naming the first record that was altered,
    removed or moved."""

    async def work(host: Host) -> list[tuple[str, list[AuditRecord], AuditBreak | None]]:
        trail = (await host.store()).audit
        checked = []
        for name in await _tenants(host, tenant):
            records = [record async for record in every_record(trail, name)]
            checked.append((name, records, verify(records, name)))
        return checked

    broken = None
    for name, records, found in act(work, app_target, url):
        if found is not None:
            broken = broken or found
            continue
        head = records[-1].digest if records else "(empty)"
        console.print(f"tenant {name}: {len(records)} records verify; head {head}",
                      markup=False, highlight=False)
    if broken is not None:
        fail(Exit.AUDIT_BROKEN, f"the audit trail does not verify: {broken}")
