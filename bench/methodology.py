"""The method section of ``docs/benchmarks.md``: how each number was obtained."""

METHOD = """## Method

**Workload.** One human-in-the-loop turn, the same on both sides: a user message; the model
asks the person a question; the turn pauses; the answer resumes it; the model reads the answer
and completes. The model is a deterministic Python function of the transcript
(`symfonic.models.FunctionModel`; a LangGraph node with the same policy), so there is no network
and no model cost. symfonic runs through `Host.open(url, agents=[spec], secret=...)`,
`agent.run(...)` and `host.continuation.resume(token, answer)` with `HumanInteraction()`
(`ask_user`). LangGraph runs a `MessagesState` graph (`model` -> `ask_user` node calling
`interrupt()` -> `model`), resumed with `Command(resume=answer)`, default durability (`"async"`),
measured with its async savers (`AsyncSqliteSaver` over aiosqlite, `AsyncPostgresSaver` over a
psycopg pool; the nodes are `async def` there, LangGraph's faster setup under `ainvoke`, which
hands a plain node to a thread) and its sync savers (`SqliteSaver`, `PostgresSaver` over one
connection, plain nodes).

**History.** The number of messages already in the session before the measured turn:
alternating user and assistant messages of 200 characters of made-up words drawn at random,
seeded by position (the same text on every run and on both sides; it compresses about as well as
real conversation, where a repeated sentence let PostgreSQL's TOAST shrink LangGraph's checkpoint
blobs ~10x). symfonic: appended to the host's
store with `store.transcripts.append(TranscriptTail(...))` as the session's earlier turns on this host would
have left it: all but the last two messages, which the host then reads once (as the previous
turn's start did), then the last two; LangGraph: written into the thread state with
`update_state(config, {"messages": history}, as_node="model")`. Every sample is a fresh session
seeded outside the timed region. At history 0 each side starts a new conversation as its users
do: symfonic's turn is run without a session id (the agent names the session, and a session it
named has nothing to read), LangGraph's with a new thread id, which its API requires and whose
checkpoint it reads.

**symfonic, resumed on another host.** The "resume later, anywhere" case: the history is
appended by one host, the turn is paused on a second and resumed on a third, all over the same
database, so neither the pausing nor the resuming host has read the session before and each
reads all of it from the database. The plain "symfonic" rows use one host for everything, like a
single server handling a conversation.

**Latency.** `time.perf_counter()` around the call that starts the turn until the pause is in
hand (symfonic: the `RunOutcome` with its token; LangGraph: the `__interrupt__` result), and
around the resume call until the completed turn. Systems alternate within each sample and the
order flips between samples. The garbage collector stays on; objects allocated before the
measurements (imports, warm-up) are frozen with `gc.freeze()`, and the young generations are
collected before each operation (untimed), so each operation pays for its own garbage only. Medians and p95
(inclusive quantiles) over the samples listed. The round trip is pause + resume of one sample.
The history cells run one after the other, so the last one's database and heap hold what the
earlier ones left; the warm pause's target is read instead from pauses of one host taken
alternately at history 0 and 5,000 after the cells (the warm host's pause table), each resumed
untimed, so that both see the same database and heap and the ratio is the history's alone.
Before each of those pauses, at either history, a session of 5,000 messages is seeded (untimed:
the measured one, or for history 0 one beside it), so both start from the same CPU caches; when
only the pause at 5,000 followed such a seeding, it ran cold against a warm pause at 0 and the
ratio read 1.23x where it reads 1.05x with the same code (SQLite, while this was written).

**Bytes and commits, SQLite.** Before each operation (untimed) the probe runs
`PRAGMA wal_checkpoint(RESTART)` and commits one row of its own, so the WAL starts over under new
salts and is live again (the first commit after a restart also rewrites and syncs the WAL header,
about 0.3 ms here, which no measured operation should pay); after the operation, the probe walks
the WAL frame headers with the new salts and subtracts its own. Bytes = frames x (page size +
24-byte frame header): the pages each commit physically wrote. Commits = frames whose "database size
after commit" field is set (one per committed write transaction). Automatic checkpoints are
switched off on the measured connections during the latency cells (`wal_autocheckpoint = 0`), so
neither system checkpoints inside a timed operation. As a cross-check, `COMMIT` statements are
also counted with `sqlite3.Connection.set_trace_callback` on symfonic's store connection
(`store._conn`) and LangGraph's saver connection ("traced").

**Bytes and commits, PostgreSQL.** Each system has its own database; `pg_walinspect` lists the
WAL records between `pg_current_wal_insert_lsn()` before the operation and
`pg_current_wal_flush_lsn()` after it. Records touching a relation of the measured database name
its transactions (xids); commits = `Transaction/COMMIT` records of those xids (write transactions
only: read-only statements assign no xid); bytes = total record length, full-page images
included, of those xids' records plus xid-less records on the database's relations. Other
databases on the server are excluded by oid. A temporary physical replication slot, advanced to
the start of each operation, keeps the server from recycling the WAL before it is read.
Full-page images make PostgreSQL bytes vary with the server's checkpoint timing, which is why
medians are reported.

**What a resume commits.** The claim (one commit) and the outcome with the turn's messages (one
commit), plus one commit per tool call that runs during the resumed turn: each tool's result is
stored as the tool completes, so a resumer killed after a refund never loses the fact that it ran
(recovery reads it back instead of running the refund again). This workload's resume answers an
`ask_user` question and runs no tool, so it makes 2; an approval whose tool then runs makes 3.
Lease renewals add one small commit per third of the lease (30 s by default) while a turn runs
longer than that.

**Floor.** SQLite: `BEGIN IMMEDIATE; INSERT` of one small row; `COMMIT` in WAL mode with
`synchronous=FULL` (symfonic's store default) on a file in the same directory. PostgreSQL: one
autocommit `INSERT` of a small row (`synchronous_commit=on`). Floor samples are taken between the
history-0 samples, side by side with them.

**Throughput.** asyncio tasks in one process share one symfonic host (SQLite: one writing
connection whose concurrent writes share commits; PostgreSQL: a pool of up to 10) or one
LangGraph async saver (one aiosqlite connection; `AsyncPostgresSaver` over a pool of up to 10).
Each task runs pause + resume cycles back to back on fresh sessions (history 0) until the
deadline; the rate is completed cycles over the wall time until the last task finished. WAL
autocheckpoint is back at SQLite's default here. Levels run in turn, the systems alternating,
each level for the same time per system. "CPU time per pause + resume" is the process time of
many cycles over symfonic's in-memory store divided by their number: symfonic's own work, with
no I/O to wait for.

**Decoding.** A session of 5,000 stored messages is read back: the rows decoded alone
(`symfonic.stores.sql.messages_of`, as a host that never read the session does), and the store's
whole `load` (fetching the rows included), each the median of 15 reads, per message.

**Correctness.** The race workloads have a side effect after the pause: symfonic's approval-gated
`apply_change` tool, LangGraph's node code after `interrupt()`; each run appends one line to a
per-trial log, so the line count is how many times the rest of the turn ran. The benchmark's
process pauses the turn; two resumers, each with its own host or saver and connection, resume it
at once (released by a barrier): as two threads, and as two spawned processes on the same
database file or database. "Second resume": one resume completes, then another resume of the same
pause.

**Noise.** The machine is shared (other people's builds and tests, and the same PostgreSQL
server), so absolute times move from run to run, PostgreSQL's most (see the p95 columns).
Ratios are taken from systems measured alternately within the same samples, which is what makes
them comparable; a target close to its threshold can still pass in one run and miss in the next.
The machines themselves differ by several times from one day to the next, which moves every
absolute target (CPU per cycle, microseconds per message, a page's milliseconds): `python -m
bench.calibrate` compares a machine with this report's in a few seconds (CPU per in-memory cycle,
floor commit) before a full run. The run itself times the code of the report the absolute targets
were read on (git `39b26ad`, `bench/reference.py`) on this machine: the factor between that and
the 0.31 ms that report measured is in the machine table, and a missed absolute target is also
read divided by it (what bounds the misses).

**Profiles.** pyinstrument (0.5 ms interval, async mode) over a few pause + resume cycles per
cell, seeding excluded; trees trimmed to frames above 3% of the total, and the hottest functions
by self time. The profiler slows Python code more than I/O, so read the shares, not the times.
"""
