"""``tasks/list``: a tenant's tasks on one agent, newest first; ``input-required`` is the inbox.

Filtered by ``input-required``, the listing is read from the ledger's outstanding pauses
(``host.pauses``), the very list an inbox shows, each mapped to the task of its session; other
listings page through the task rows, each read through the ledger (:mod:`.views`). Page tokens
are opaque to the client: ``p.`` + a ledger cursor, or ``t.`` + a task row's position.
"""

from __future__ import annotations

import base64
import binascii
import json

from a2a.types import ListTasksRequest, ListTasksResponse, TaskState
from a2a.utils.errors import InvalidParamsError

from symfonic import Host, Scope
from symfonic.transports.a2a.tasks import TaskPage
from symfonic.transports.a2a.views import STATES, task_proto, task_store, view_of

DEFAULT_PAGE = 50
MAX_PAGE = 100


async def list_tasks(host: Host, agent: str, scope: Scope,
                     params: ListTasksRequest) -> ListTasksResponse:
    """A page of the tenant's tasks on ``agent``, filtered as ``params`` asks.

    Raises:
        InvalidParamsError: a page token this server did not give, or a bad page size.
    """
    size = params.page_size or DEFAULT_PAGE
    if not 1 <= size <= MAX_PAGE:
        raise InvalidParamsError(f"page_size must be between 1 and {MAX_PAGE}")
    store = await task_store(host)
    wanted = params.status if params.status != TaskState.TASK_STATE_UNSPECIFIED else None
    response = ListTasksResponse(page_size=size)
    if wanted == TaskState.TASK_STATE_INPUT_REQUIRED:
        cursor = _token(params.page_token, "p.")
        try:
            tickets = await host.pauses(scope, limit=size, after=cursor)
        except ValueError:
            raise InvalidParamsError("not a page token of this listing") from None
        for ticket in tickets:
            if ticket.agent != agent or (params.context_id and
                                         ticket.session_id != params.context_id):
                continue
            for task in await store.list_tasks(scope, agent, context_id=ticket.session_id,
                                               limit=1):
                view = await view_of(host, store, task)
                if view.state == "input-required":
                    response.tasks.append(task_proto(view))
        if len(tickets) == size:
            response.next_page_token = "p." + tickets[-1].cursor
        return response
    position = _position(_token(params.page_token, "t."))
    tasks = await store.list_tasks(scope, agent, context_id=params.context_id or None,
                                   limit=size, after=position)
    for task in tasks:
        view = await view_of(host, store, task)
        if wanted is None or STATES[view.state] == wanted:
            response.tasks.append(task_proto(view))
    if len(tasks) == size:
        last = tasks[-1]
        raw = json.dumps([last.created_at, last.id]).encode()
        response.next_page_token = "t." + base64.urlsafe_b64encode(raw).decode()
    return response


def _token(token: str, prefix: str) -> str | None:
    if not token:
        return None
    if not token.startswith(prefix):
        raise InvalidParamsError("not a page token of this listing")
    return token.removeprefix(prefix)


def _position(token: str | None) -> TaskPage | None:
    if token is None:
        return None
    try:
        created, task_id = json.loads(base64.urlsafe_b64decode(token))
        return float(created), str(task_id)
    except (ValueError, TypeError, binascii.Error):
        raise InvalidParamsError("not a page token of this listing") from None
