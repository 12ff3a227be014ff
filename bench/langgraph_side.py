"""The same workload on LangGraph, written the way its documentation teaches it.

The state is ``MessagesState`` (the ``add_messages`` reducer); a ``model`` node is the same
deterministic policy as symfonic's ``FunctionModel`` (async under the async savers, where a sync
node would cost a thread hand-off per step); an ``ask_user`` node calls ``interrupt()``
and turns the answer into a ``ToolMessage``; the turn is resumed with ``Command(resume=...)``.
Durability is LangGraph's default (``"async"``). History is written into the thread's state with
``update_state(..., as_node="model")`` before the measured turn, so the thread holds it the way
earlier turns would have left it.

Two flavours of each checkpointer are measured: the async savers (``AsyncSqliteSaver`` over
aiosqlite, ``AsyncPostgresSaver`` over a psycopg pool), which are what an asyncio service uses and
what the concurrency benchmark needs, and the sync savers (``SqliteSaver``, ``PostgresSaver`` over
one connection). Targets are checked against whichever of the two is faster.

The race graph's ``apply`` node calls ``interrupt()`` and then appends a line to the side-effect
log: the code after the interrupt, which LangGraph runs again on every resume.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import aiosqlite
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt
from psycopg import Connection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from bench.symfonic_side import SIDE_EFFECTS_VARIABLE
from bench.workload import ANSWER, FINAL_PREFIX, QUESTION, USER_INPUT, history_roles

PG_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


def model_node(state: MessagesState) -> dict[str, list[AnyMessage]]:
    messages = state["messages"]
    last = messages[-1]
    if isinstance(last, HumanMessage):
        call = {"name": "ask_user", "args": {"question": QUESTION}, "id": f"ask-{len(messages)}"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(content=FINAL_PREFIX + str(last.content))]}
    return {"messages": [AIMessage(content="How can I help?")]}


def ask_node(state: MessagesState) -> dict[str, list[AnyMessage]]:
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    call = last.tool_calls[0]
    answer = interrupt({"question": call["args"]["question"]})
    return {"messages": [ToolMessage(content=str(answer), tool_call_id=call["id"])]}


async def amodel_node(state: MessagesState) -> dict[str, list[AnyMessage]]:
    return model_node(state)


async def aask_node(state: MessagesState) -> dict[str, list[AnyMessage]]:
    return ask_node(state)


def _route(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "ask_user" if isinstance(last, AIMessage) and last.tool_calls else END


def ask_graph(checkpointer: Any, *, asynchronous: bool = False) -> Any:
    """The graph; ``asynchronous`` nodes for ``ainvoke``, which otherwise hands every sync node
    to a thread (measured: the async nodes are LangGraph's faster setup under ``ainvoke``)."""
    graph = StateGraph(MessagesState)
    graph.add_node("model", amodel_node if asynchronous else model_node)
    graph.add_node("ask_user", aask_node if asynchronous else ask_node)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", _route, ["ask_user", END])
    graph.add_edge("ask_user", "model")
    return graph.compile(checkpointer=checkpointer)


class RaceState(TypedDict):
    change: str
    messages: Annotated[list[AnyMessage], add_messages]


def apply_node(state: RaceState) -> dict[str, list[AnyMessage]]:
    decision = interrupt({"apply": state["change"]})
    if isinstance(decision, dict) and decision.get("approved"):
        directory = Path(os.environ[SIDE_EFFECTS_VARIABLE])
        with (directory / f"{state['change']}.log").open("a", encoding="utf-8") as log:
            log.write(f"{os.getpid()}\n")
    return {"messages": [AIMessage(content=f"applied {state['change']}")]}


def race_graph(checkpointer: Any) -> Any:
    graph = StateGraph(RaceState)
    graph.add_node("apply", apply_node)
    graph.add_edge(START, "apply")
    graph.add_edge("apply", END)
    return graph.compile(checkpointer=checkpointer)


def history_messages(count: int) -> list[AnyMessage]:
    return [HumanMessage(content=text) if role == "user" else AIMessage(content=text)
            for role, text in history_roles(count)]


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _check_paused(result: dict[str, Any]) -> None:
    if "__interrupt__" not in result:
        raise RuntimeError(f"LangGraph did not pause: {sorted(result)}")


def _check_completed(result: dict[str, Any]) -> None:
    last = result["messages"][-1]
    if last.content != FINAL_PREFIX + ANSWER:
        raise RuntimeError(f"LangGraph did not complete the resumed turn: {last!r}")


class LangGraphSubject:
    """The async savers: ``ainvoke`` until the interrupt, ``ainvoke(Command(resume=...))``."""

    system = "langgraph"

    def __init__(self, backend: str, target: str) -> None:
        self.backend = backend
        self.target = target  # a file path (sqlite) or a connection URL (postgres)
        self._histories: dict[int, list[AnyMessage]] = {}
        self._sqlite: aiosqlite.Connection | None = None
        self._pool: AsyncConnectionPool[Any] | None = None

    async def open(self) -> LangGraphSubject:
        saver: Any
        if self.backend == "sqlite":
            self._sqlite = await aiosqlite.connect(self.target)
            saver = AsyncSqliteSaver(self._sqlite)
        else:
            self._pool = AsyncConnectionPool(self.target, min_size=1, max_size=10, open=False,
                                             kwargs=PG_KWARGS)
            await self._pool.open(wait=True)
            saver = AsyncPostgresSaver(self._pool)
        await saver.setup()
        self.graph = ask_graph(saver, asynchronous=True)
        return self

    async def seed(self, session: str, count: int) -> None:
        if count:
            messages = self._histories.setdefault(count, history_messages(count))
            await self.graph.aupdate_state(_config(session), {"messages": messages}, as_node="model")

    async def pause(self, session: str) -> str:
        result = await self.graph.ainvoke({"messages": [HumanMessage(content=USER_INPUT)]},
                                          _config(session))
        _check_paused(result)
        return session

    async def resume(self, session: str) -> None:
        _check_completed(await self.graph.ainvoke(Command(resume=ANSWER), _config(session)))

    async def configure_sqlite(self, trace: Callable[[str], None] | None,
                               autocheckpoint: int) -> dict[str, str]:
        assert self._sqlite is not None
        await self._sqlite.execute(f"PRAGMA wal_autocheckpoint = {int(autocheckpoint)}")
        await self._sqlite.set_trace_callback(trace)  # type: ignore[arg-type]
        return {"synchronous": await _async_synchronous(self._sqlite),
                "journal_mode": await _async_pragma(self._sqlite, "journal_mode"),
                "page_size": await _async_pragma(self._sqlite, "page_size")}

    async def close(self) -> None:
        if self._sqlite is not None:
            await self._sqlite.close()
        if self._pool is not None:
            await self._pool.close()


class LangGraphSyncSubject:
    """The sync savers over one connection: ``invoke`` (it blocks the loop; runs are sequential)."""

    system = "langgraph-sync"

    def __init__(self, backend: str, target: str) -> None:
        self.backend = backend
        self.target = target
        self._histories: dict[int, list[AnyMessage]] = {}
        self._sqlite: sqlite3.Connection | None = None
        self._pg: Connection[Any] | None = None

    async def open(self) -> LangGraphSyncSubject:
        saver: Any
        if self.backend == "sqlite":
            self._sqlite = sqlite3.connect(self.target, check_same_thread=False)
            saver = SqliteSaver(self._sqlite)
        else:
            self._pg = Connection.connect(self.target, **PG_KWARGS)
            saver = PostgresSaver(self._pg)
        saver.setup()
        self.graph = ask_graph(saver)
        return self

    async def seed(self, session: str, count: int) -> None:
        if count:
            messages = self._histories.setdefault(count, history_messages(count))
            self.graph.update_state(_config(session), {"messages": messages}, as_node="model")

    async def pause(self, session: str) -> str:
        result = self.graph.invoke({"messages": [HumanMessage(content=USER_INPUT)]},
                                   _config(session))
        _check_paused(result)
        return session

    async def resume(self, session: str) -> None:
        _check_completed(self.graph.invoke(Command(resume=ANSWER), _config(session)))

    async def configure_sqlite(self, trace: Callable[[str], None] | None,
                               autocheckpoint: int) -> dict[str, str]:
        assert self._sqlite is not None
        self._sqlite.execute(f"PRAGMA wal_autocheckpoint = {int(autocheckpoint)}")
        self._sqlite.set_trace_callback(trace)
        value = str(self._sqlite.execute("PRAGMA synchronous").fetchone()[0])
        return {"synchronous": _SYNCHRONOUS.get(value, value),
                "journal_mode": str(self._sqlite.execute("PRAGMA journal_mode").fetchone()[0]),
                "page_size": str(self._sqlite.execute("PRAGMA page_size").fetchone()[0])}

    async def close(self) -> None:
        if self._sqlite is not None:
            self._sqlite.close()
        if self._pg is not None:
            self._pg.close()


class RaceLangGraph:
    """The race graph over a sync saver of its own (one per thread or process)."""

    def __init__(self, backend: str, target: str) -> None:
        self.backend = backend
        self.target = target
        self._conn: Any = None

    def open(self) -> RaceLangGraph:
        saver: Any
        if self.backend == "sqlite":
            self._conn = sqlite3.connect(self.target, check_same_thread=False)
            saver = SqliteSaver(self._conn)
        else:
            self._conn = Connection.connect(self.target, **PG_KWARGS)
            saver = PostgresSaver(self._conn)
        saver.setup()
        self.graph = race_graph(saver)
        return self

    def pause(self, change: str) -> str:
        result = self.graph.invoke({"change": change,
                                    "messages": [HumanMessage(content=f"apply change {change}")]},
                                   _config(change))
        _check_paused(result)
        return change

    def resume(self, change: str) -> str:
        """What the resume did: ``completed``, ``paused`` or the exception's name."""
        try:
            result = self.graph.invoke(Command(resume={"approved": True}), _config(change))
        except Exception as error:
            return type(error).__name__
        return "paused" if "__interrupt__" in result else "completed"

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


_SYNCHRONOUS = {"0": "OFF", "1": "NORMAL", "2": "FULL", "3": "EXTRA"}


async def _async_pragma(conn: aiosqlite.Connection, name: str) -> str:
    async with conn.execute(f"PRAGMA {name}") as cursor:
        row = await cursor.fetchone()
    return str(row[0]) if row else "?"


async def _async_synchronous(conn: aiosqlite.Connection) -> str:
    value = await _async_pragma(conn, "synchronous")
    return _SYNCHRONOUS.get(value, value)
