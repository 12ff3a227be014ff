"""One connection to an MCP server, held open by a task of its own and shared by every caller.

The SDK's ``Client`` runs anyio task groups: the task that enters ``async with Client(...)`` must be
the one that leaves it, or anyio refuses ("exited non-innermost cancel scope"). A toolset is used by
many tasks (each run, each tool call) and closed by yet another, so a dedicated task enters the
client, publishes its session and waits to be told to stop; callers send their requests through
that session from wherever they are, which the SDK allows.

The connection opens on first use. It is known to be gone when a request fails with the connection
closed, or, on servers that support ``subscriptions/listen``, when the listen stream the holding
task keeps open breaks (the stdio process exited, the HTTP server went away); the next request
then connects again. Concurrent first requests share one connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import TypeVar

import anyio
from mcp.client import Client, ClientRequestContext, ClientSession, IncomingMessage, Transport
from mcp.client.stdio import StdioServerParameters
from mcp.client.subscriptions import ListenNotSupportedError, Subscription, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp_types import (
    ElicitRequestParams,
    ElicitResult,
    Implementation,
    ListRootsResult,
    ToolListChangedNotification,
)

from symfonic.toolsets.mcp.errors import MCPConnectionError, connection_lost, explain

__all__ = ["Connection", "Target"]

logger = logging.getLogger("symfonic.mcp")
T = TypeVar("T")
Target = Callable[[AsyncExitStack], StdioServerParameters | Transport]
"""What the SDK client connects to, made anew for each connection; resources it opens (an HTTP
client) go on the stack, which is closed with the connection."""


@dataclass
class _Link:
    """One open connection: its session and the task that holds it open."""

    session: ClientSession
    task: asyncio.Task[None]
    stop: asyncio.Event
    loop: asyncio.AbstractEventLoop
    broken: bool = False

    @property
    def alive(self) -> bool:
        return not self.broken and not self.task.done()


class Connection:
    """The connection of one toolset.

    Args:
        name: The toolset's name, for messages.
        where: The command or URL, for messages.
        target: Builds the SDK client (see :data:`Target`).
        timeout: Seconds to connect; also each request's read timeout.
        on_tools_changed: Called when the server says its tool listing changed, and when a new
            connection replaces a lost one (the server may have changed while it was away).
    """

    def __init__(self, *, name: str, where: str, target: Target, timeout: float,
                 on_tools_changed: Callable[[], None]) -> None:
        self._name = name
        self._where = where
        self._target = target
        self._timeout = timeout
        self._on_tools_changed = on_tools_changed
        self._link: _Link | None = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self._closes = 0

    @property
    def connected(self) -> bool:
        """True while a connection is open and not known to be lost."""
        return self._link is not None and self._link.alive

    async def request(self, send: Callable[[ClientSession], Awaitable[T]]) -> T:
        """Run ``send`` on the session, connecting first if needed.

        A lost connection is dropped, so the next request reconnects; the error is raised as it came
        (the caller knows whether its request may have run).

        Raises:
            MCPConnectionError: the server could not be reached.
        """
        link = await self._current()
        try:
            return await send(link.session)
        except Exception as error:
            if connection_lost(error):
                link.broken = True
            raise

    async def close(self) -> None:
        """Stop the holding task, which closes the session and ends the server process."""
        link, self._link = self._link, None
        self._closes += 1  # a connection being opened now is closed as soon as it opens
        if link is not None:
            await self._stop(link)

    async def _current(self) -> _Link:
        loop = asyncio.get_running_loop()
        link = self._link
        if link is not None and link.loop is not loop:
            if not link.loop.is_closed():
                raise MCPConnectionError(f"MCP server {self._name!r} is connected from another event loop; "
                                         "close() the toolset there before using it here", server=self._name)
            self._link = link = None  # ending, its loop cancelled the holding task and the process
        if link is not None and link.alive:
            return link
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        async with self._lock:
            link = self._link
            if link is not None and link.alive:
                return link
            if link is not None:
                self._link = None
                await self._stop(link)
                self._on_tools_changed()  # the server may have changed while it was away
            closes = self._closes
            link = await self._open()
            if closes != self._closes:
                await self._stop(link)
                raise MCPConnectionError(f"the toolset of MCP server {self._name!r} was closed while "
                                         "connecting", server=self._name)
            self._link = link
            return link

    @staticmethod
    async def _stop(link: _Link) -> None:
        link.stop.set()
        if link.loop is asyncio.get_running_loop():
            await asyncio.wait([link.task])

    async def _open(self) -> _Link:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[ClientSession] = loop.create_future()
        stop = asyncio.Event()
        task = loop.create_task(self._hold(ready, stop), name=f"symfonic-mcp-{self._name}")
        try:
            async with asyncio.timeout(self._timeout):
                session = await ready
        except BaseException as error:
            ready.cancel()
            task.cancel()
            await asyncio.wait([task])  # the holder unwinds the client, so no process is left behind
            if isinstance(error, TimeoutError):
                raise MCPConnectionError(f"MCP server {self._name!r} ({self._where}) did not answer within "
                                         f"{self._timeout:g} s", server=self._name) from None
            if isinstance(error, Exception):
                raise MCPConnectionError(f"could not connect to MCP server {self._name!r} ({self._where}): "
                                         f"{explain(error)}", server=self._name) from error
            raise
        return _Link(session=session, task=task, stop=stop, loop=loop)

    async def _hold(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        """The holding task: enter the client, listen, publish the session, wait for ``stop``, leave.

        The listen stream opens before the session is published, so no change the server makes
        after a caller's first request can go unannounced.
        """
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(self._client(stack))
                subscription = await self._listen(client, stack)
                if ready.done():  # the opener gave up meanwhile
                    return
                ready.set_result(client.session)
                await self._wait(subscription, stop)
        except Exception as error:
            if not ready.done():
                ready.set_exception(error)
            elif connection_lost(error):
                logger.info("the connection to MCP server %r was lost: %s", self._name, explain(error))
            else:
                logger.warning("the connection to MCP server %r ended: %s", self._name, explain(error),
                               exc_info=error)

    async def _listen(self, client: Client, stack: AsyncExitStack) -> Subscription | None:
        """A ``subscriptions/listen`` stream for tool changes, where the server has one.

        On protocol 2026-07-28 a server sends ``tools/list_changed`` only on such a stream (earlier
        ones send it unasked); the events reach the message handler like any notification. The
        stream also tells when the connection is gone, before any request fails on it.
        """
        try:
            return await stack.enter_async_context(client.listen(tools_list_changed=True))
        except (ListenNotSupportedError, MCPError, SubscriptionLost, TimeoutError) as refused:
            logger.debug("MCP server %r offers no listen stream: %s", self._name, explain(refused))
            return None

    @staticmethod
    async def _wait(subscription: Subscription | None, stop: asyncio.Event) -> None:
        """Until ``stop``, or until the listen stream ends, which means the connection is gone."""
        if subscription is None:
            await stop.wait()
            return
        async with anyio.create_task_group() as group:

            async def drain() -> None:
                async for _ in subscription:
                    pass  # the message handler sees each event too
                group.cancel_scope.cancel()  # the server closed the stream: treat it as gone

            group.start_soon(drain)
            await stop.wait()
            group.cancel_scope.cancel()

    def _client(self, stack: AsyncExitStack) -> Client:
        return Client(self._target(stack), read_timeout_seconds=self._timeout,
                      message_handler=self._on_message, elicitation_callback=_elicit_mid_call,
                      list_roots_callback=_no_roots, client_info=_client_info(),
                      cache=None)  # listings are cached by the toolset, and dropped on list_changed

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, ToolListChangedNotification):
            self._on_tools_changed()
        elif isinstance(message, Exception):
            logger.debug("MCP server %r: transport error: %s", self._name, explain(message))


async def _elicit_mid_call(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    """Servers on protocols before 2026-07-28 ask in the middle of a call, which cannot pause a turn:
    the question is cancelled (no person saw it), and the server goes on without an answer.

    Having this callback declares the elicitation capability, which servers check before they
    return an ``input_required`` result; those arrive as results, not through here.
    """
    logger.info("MCP server asked %r in the middle of a call; cancelled, since only an input_required "
                "result can pause a turn", params.message)
    return ElicitResult(action="cancel")


async def _no_roots(context: ClientRequestContext) -> ListRootsResult:
    """symfonic exposes no files to MCP servers: the roots are an empty list."""
    return ListRootsResult(roots=[])


def _client_info() -> Implementation:
    try:
        return Implementation(name="symfonic", version=version("symfonic-runtime"))
    except PackageNotFoundError:
        return Implementation(name="symfonic", version="0")
