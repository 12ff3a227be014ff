"""pyinstrument evidence for what bounds a cell: where a pause + resume cycle spends its time.

Seeding runs outside the profiled region; the profiler is started and stopped around each
cycle, and the session accumulates. Besides pyinstrument's own tree (trimmed to frames above a
few percent) the profile is summarised by component: every sample's self time is charged to the
innermost frame on its stack that belongs to a known component (so ``json.loads`` called by
symfonic's transcript decoder counts as decoding), the rest to the runtime itself. Time spent
suspended (``[await]``) or idle in the event loop counts as the database: it is the only thing
either system awaits here. pyinstrument samples one thread, so what LangGraph's background
threads do (its checkpoint writes under ``durability="async"``) shows only as the calling thread
waiting for them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from pyinstrument import Profiler
from pyinstrument.frame import Frame
from pyinstrument.renderers import ConsoleRenderer

from bench.latency import Subject

DATABASE = "database: statements, commits, waiting on I/O and thread hand-offs"
CODEC = "encoding / decoding messages and checkpoints"
TOKENS = "signing / verifying pause tokens (PyJWT)"
MESSAGES = "langchain-core message objects, the add_messages reducer, pydantic validation"
THREADS = ("waiting on background threads (LangGraph writes checkpoints there under "
           "durability='async': serialising, SQL, commit)")
RUNTIME = "the runtime itself (turn loop / graph engine, validation, events)"

_CODEC_FUNCTIONS = {"messages_of", "_decoded", "decode_stored", "message_rows", "dump_json", "_dump",
                    "record_of", "pause_row", "from_dict", "to_dict", "_loads", "_json"}
_DATABASE_FUNCTIONS = {"_call", "_read", "_write", "_transaction", "_fetchall", "_rowcount",
                       "_connection", "_flush", "_group", "_attempt", "_in_savepoint", "write",
                       "call", "_patiently", "_on_the_thread"}
"""The stores' plumbing (SQLite's grouped writes in :mod:`symfonic.stores.sqlite_writes` too)."""


@dataclass
class Profile:
    label: str
    system: str
    history: int
    backend: str
    text: str
    components: dict[str, float] = field(default_factory=dict)


def component(frame: Frame, inherited: str) -> str | None:
    path = frame.file_path or ""
    function = frame.function
    if function == "[await]" or (path == "<built-in>" and function.endswith(".poll")):
        # Suspended or idle in the event loop: in this workload the only thing either system
        # awaits is its database (the model is a plain function), so waiting is the database.
        return DATABASE
    if path == "<built-in>" and function == "lock.acquire":
        return THREADS  # pyinstrument samples one thread: the work itself is out of sight
    if "/jwt/" in path or (inherited == TOKENS and "/json/" in path):
        return TOKENS
    if "/symfonic/stores/" in path and function in _DATABASE_FUNCTIONS:
        return DATABASE
    if ("/psycopg" in path or "/aiosqlite/" in path or "/langgraph/checkpoint/sqlite/" in path
            or "/langgraph/checkpoint/postgres/" in path):
        return DATABASE
    if "/symfonic/" in path and function in _CODEC_FUNCTIONS:
        return CODEC
    if "/langgraph/checkpoint/serde/" in path or "ormsgpack" in path or "/json/" in path:
        return CODEC
    if ("/langchain_core/messages/" in path or "/langgraph/graph/message.py" in path
            or "/pydantic" in path):
        return MESSAGES
    return None


def components(root: Frame) -> dict[str, float]:
    """Share of the total time per component (self time charged to the innermost match)."""
    totals: dict[str, float] = {}
    stack: list[tuple[Frame, str]] = [(root, RUNTIME)]
    while stack:
        frame, inherited = stack.pop()
        charged = component(frame, inherited) or inherited
        totals[charged] = (totals.get(charged, 0.0) + frame.time
                           - sum(child.time for child in frame.children))
        stack.extend((child, charged) for child in frame.children)
    whole = sum(totals.values()) or 1.0
    ranked = sorted(totals.items(), key=lambda item: item[1], reverse=True)
    return {name: share / whole for name, share in ranked}


async def profile_cycles(subject: Subject, history: int, cycles: int, label: str) -> Profile:
    profiler = Profiler(interval=0.0005, async_mode="enabled")
    run = uuid.uuid4().hex[:8]
    for index in range(cycles):
        session = f"profile-{run}-{index}"
        await subject.seed(session, history)
        profiler.start()
        handle = await subject.pause(session)
        await subject.resume(handle)
        profiler.stop()
    tree = profiler.output(ConsoleRenderer(unicode=False, color=False, show_all=False,
                                           time="percent_of_total",
                                           processor_options={"filter_threshold": 0.03}))
    flat = profiler.output(ConsoleRenderer(unicode=False, color=False, flat=True,
                                           time="percent_of_total",
                                           processor_options={"filter_threshold": 0.02}))
    last = profiler.last_session
    root = last.root_frame() if last is not None else None
    text = (f"{cycles} pause + resume cycles\n\n{_trim(tree)}\n\nhottest functions (self time):\n"
            + "\n".join(_trim(flat).splitlines()[:14]))
    return Profile(label, subject.system, history, subject.backend, text,
                   components(root) if root is not None else {})


def _trim(text: str) -> str:
    """Drop pyinstrument's banner; keep the body."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("Profile at")), -1)
    body = lines[start + 1:] if start >= 0 else lines
    return "\n".join(line for line in body if line.strip())
