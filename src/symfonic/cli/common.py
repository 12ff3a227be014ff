"""What every command shares: the Typer apps, the common options, and running against the app.

Help texts render as plain text (``rich_markup_mode=None``): they name extras such as
``symfonic-runtime[http]``, which rich markup would swallow as a style tag.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from symfonic.cli.exits import EPILOG, Exit, fail, plainly
from symfonic.cli.loading import load_host
from symfonic.outcome import RunOutcome
from symfonic.platform.continuation import AnswerInvalid
from symfonic.platform.host import Host

T = TypeVar("T")

app = typer.Typer(help="symfonic: agents whose turns pause to ask a person, resumed once.",
                  no_args_is_help=True, rich_markup_mode=None, epilog=EPILOG,
                  pretty_exceptions_show_locals=False)  # locals would print secrets
pauses_app = typer.Typer(help="A tenant's pauses.", no_args_is_help=True, rich_markup_mode=None,
                         epilog=EPILOG)
db_app = typer.Typer(help="The database.", no_args_is_help=True, rich_markup_mode=None, epilog=EPILOG)
keys_app = typer.Typer(help="API keys of the HTTP service (needs symfonic-runtime[http]).",
                       no_args_is_help=True, rich_markup_mode=None, epilog=EPILOG)
webhooks_app = typer.Typer(help="Webhook deliveries waiting in the outbox.", no_args_is_help=True,
                           rich_markup_mode=None, epilog=EPILOG)
app.add_typer(pauses_app, name="pauses")
app.add_typer(db_app, name="db")
app.add_typer(keys_app, name="keys")
app.add_typer(webhooks_app, name="webhooks")
audit_app = typer.Typer(help="The audit trail: every decision on every pause, hash-chained per "
                             "tenant.", no_args_is_help=True, rich_markup_mode=None, epilog=EPILOG)
app.add_typer(audit_app, name="audit")
console = Console(soft_wrap=True)

AppOption = Annotated[str | None, typer.Option(
    "--app", help="Your app, 'module:attribute': a Host, or a function (sync or async) returning "
                  "one (default: $SYMFONIC_APP, else [tool.symfonic] app in pyproject.toml, else the "
                  "example support agent).")]
UrlOption = Annotated[str | None, typer.Option(
    "--url", help="Database URL, exported as $SYMFONIC_DATABASE_URL for the app (default: "
                  "$SYMFONIC_DATABASE_URL, else sqlite:///.symfonic/symfonic.db).")]
TenantOption = Annotated[str, typer.Option("--tenant", help="The tenant (scope) to act in.")]


def act(work: Callable[[Host], Awaitable[T]], target: str | None, url: str | None) -> T:
    """Load the app, open its store, run ``work`` on it, close it; failures become one line."""

    async def main() -> T:
        # What goes wrong is said once, by the command (a failed outcome's error, or one line):
        # the library's own log records would repeat it, with a traceback.
        logging.getLogger("symfonic").setLevel(logging.CRITICAL)
        host = await load_host(target, url)
        await open_store(host)
        try:
            return await work(host)
        finally:
            await host.close()

    with plainly():
        return asyncio.run(main())


async def open_store(host: Host) -> None:
    """Open (and migrate) the host's store, saying plainly why it cannot be opened."""
    # The pool's own retries would log each failed attempt over the one line that says it all.
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    where = host.url or "the app's store"
    try:
        await host.start()
    except ValueError as wrong:  # the URL itself: its scheme, a parameter, no file named
        fail(Exit.CONFIGURATION, f"cannot open the store {where}: {wrong}")
    except OSError as unreachable:  # SQLite: a directory that cannot be made or read
        fail(Exit.STORE, f"cannot open the store {where}: {unreachable}")


def moment(epoch: float | None) -> str:
    """Epoch seconds as an ISO 8601 UTC time (``2025-01-31T09:30:00Z``); ``-`` for none."""
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


ANSWER_FORMS = "approve, reject, 'reject: <reason>', or JSON such as '{\"approved\": true}'"
"""The forms a terminal answer may take, named whenever one is refused."""
_REJECTIONS = ("reject", "rejected", "no", "n")


def parse_answer(text: str) -> Any:
    """``approve``/``yes``/``y``, ``reject``/``no``/``n`` (``reject: <reason>`` with a reason),
    JSON, or else the text itself.

    Text that looks like JSON (it starts with ``{``, ``[`` or ``"``) but does not parse is refused
    rather than sent as a string: a typo in an object would otherwise reach the agent as prose.
    """
    word = text.strip().lower()
    if word in ("approve", "approved", "yes", "y"):
        return {"approved": True}
    if word in _REJECTIONS:
        return {"approved": False, "reason": "rejected from the command line"}
    verb, colon, reason = text.partition(":")
    if colon and verb.strip().lower() in _REJECTIONS and reason.strip():
        return {"approved": False, "reason": reason.strip()}
    try:
        return json_answer(text)
    except json.JSONDecodeError as bad:
        if text.lstrip()[:1] in ("{", "[", '"'):
            fail(Exit.INVALID_ANSWER, f"the answer is not valid JSON ({bad}): {text!r}")
        return text
    except AnswerInvalid as repeated:
        fail(Exit.INVALID_ANSWER, f"invalid answer: {repeated}")


def unfit_text(reply: Any, invalid: AnswerInvalid) -> AnswerInvalid:
    """``invalid`` for a ``reply`` that stayed plain text, saying which forms an answer takes.

    A misspelt word (``aprove``) is sent as text; the schema's own complaint ("Input should be
    an object") does not tell a person at a terminal what to type instead.
    """
    if not isinstance(reply, str):
        return invalid
    return AnswerInvalid(f"{reply!r} is not an answer this pause takes ({invalid}); answer with "
                         f"{ANSWER_FORMS}", invalid.errors)


def json_answer(text: str) -> Any:
    """``text`` parsed as JSON whose objects name each key once.

    ``{"approved": false, "approved": true}`` means nothing certain: Python keeps the last key,
    other readers the first. The HTTP API refuses it (:mod:`symfonic.transports.http.strict_json`,
    which needs the HTTP extra); the terminal refuses it the same way.

    Raises:
        json.JSONDecodeError: ``text`` is not JSON.
        AnswerInvalid: an object names a key more than once.
    """
    return json.loads(text, object_pairs_hook=_once_each)


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) < len(pairs):
        names = [name for name, _ in pairs]
        twice = [name for name in document if names.count(name) > 1]
        raise AnswerInvalid(f"the key {twice[0]!r} appears more than once in an object: name "
                            "each key once", [{"loc": [name], "msg": "repeated key"}
                                              for name in twice])
    return document


def print_outcome(outcome: RunOutcome, *, first: bool = False) -> None:
    """How a turn ended; a failed turn exits with :attr:`Exit.TURN_FAILED`."""
    if outcome.status == "completed":
        console.print(f"[green]completed[/]: {escape(str(outcome.output))}", highlight=False)
    elif outcome.status == "paused" and outcome.interrupt is not None:
        pause = outcome.interrupt
        question = escape(json.dumps(pause.payload.get("question")))
        console.print(f"[yellow]{'paused' if first else 'paused again'}[/] for {escape(pause.name)} "
                      f"{question}; token: {pause.token}", highlight=False)
        console.print(f"  run: {pause.run_id}  pause: {pause.interrupt_id}  call: "
                      f"{pause.tool_call_id}  expires: {moment(pause.expires_at)}", highlight=False)
    else:
        fail(Exit.TURN_FAILED, f"the turn failed: {outcome.error_type or 'error'}: {outcome.error}")
