"""Memory: a host's RSS over 100,000 sessions paused and resumed, and what one cached message costs.

The host's one structure that grows with traffic by design is its transcript cache
(``symfonic.platform.transcripts``), bounded by a number of messages. Whether the RSS is bounded
is therefore two questions: does anything *else* grow per session, and what does the cache cost
at its limit. Raw RSS alone answers neither while the cache is still filling, so two hosts run the
same workload side by side, each in a process of its own (the RSS is the host's alone): the host
as it is, and the same host whose cache keeps nothing (``capacity=0``). The second one's RSS must
stop growing; the difference between the two is the cache.

Every session is fresh: ``agent.run`` until it pauses, ``host.continuation.resume`` until it
completes, 16 at once, over SQLite in a temporary directory. The RSS (``VmRSS``) is read after a
``gc.collect()`` at every tenth of the run. What one cached message costs is measured apart, in a
third process: sessions of the bench's 200-character messages appended to SQLite, then read into a
``CachedTranscripts``, counted by tracemalloc (Python's own allocations) and by the RSS they add.

``python -m bench.memory [--quick]`` prints the section; ``python -m bench.memory probe host URL N
CAPACITY`` and ``probe cache FOLDER SESSIONS`` are one process's measurement, printed as JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = 100_000
QUICK_SESSIONS = 10_000
SAMPLES = 10
"""RSS readings per run after the first (at 0 sessions): one every tenth."""
TASKS = 16
CACHE_SESSIONS = 1_000
QUICK_CACHE_SESSIONS = 200
SESSION_MESSAGES = 100
"""Messages per session when measuring the cache: 1,000 sessions hold 100,000 messages."""
GROWTH_BOUND = 4 * 2**20
"""What the host without the cache may still grow over the run's second half, in bytes (about 84
bytes a session over 50,000 sessions: less than one small dict or object kept per session)."""
SIZED_AT = 1024
"""Bytes a cached message is assumed to cost where ``DEFAULT_CAPACITY`` is chosen."""
MIB = 2**20


@dataclass(frozen=True)
class HostRun:
    sessions: list[int]
    rss: list[int]
    """Bytes, read after ``gc.collect()`` once ``sessions[i]`` sessions completed."""
    cached: list[int]
    """Messages the host's transcript cache held at each reading."""
    seconds: float

    def growth(self, first: int, last: int) -> int:
        return self.rss[last] - self.rss[first]


@dataclass(frozen=True)
class MemoryResult:
    cached: HostRun
    """The host as it is: its transcript cache at the default capacity."""
    uncached: HostRun
    """The same host whose transcript cache keeps nothing."""
    capacity: int
    messages: int
    """Messages read into the cache to measure what one costs."""
    traced_per_message: float
    rss_per_message: float

    @property
    def middle(self) -> int:
        return len(self.cached.sessions) // 2

    @property
    def cache_bytes(self) -> int:
        """The cache's share of the RSS at the end, read as the host's over the one without it:
        the two differ in nothing else."""
        return self.cached.rss[-1] - self.uncached.rss[-1]

    @property
    def run_per_message(self) -> float:
        """What a cached message of this workload costs (short messages, a tool call, and each
        session's own entry shared by its two), to set beside the 200-character measurement."""
        return self.cache_bytes / self.cached.cached[-1] if self.cached.cached[-1] else float("nan")

    @property
    def second_half(self) -> int:
        """The growth that would betray a per-session structure other than the cache."""
        return self.uncached.growth(self.middle, -1)

    @property
    def bounded(self) -> bool:
        return (self.second_half <= GROWTH_BOUND
                and all(held <= self.capacity for held in self.cached.cached))


def _rss() -> int:
    """The current resident set; where ``/proc`` is missing, the peak, which can only overstate."""
    with contextlib.suppress(OSError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _collected_rss() -> int:
    gc.collect()
    return _rss()


async def _host_probe(url: str, sessions: int, capacity: int | None) -> dict[str, Any]:
    from bench.symfonic_side import SymfonicSubject
    from symfonic.platform.transcripts import CachedTranscripts

    subject = SymfonicSubject("sqlite", url)
    if capacity is not None:  # before the first run: every agent and resume reads it from the host
        subject.host.transcripts = CachedTranscripts(subject.host._transcript_port, capacity=capacity)
    await subject.open()
    step = sessions // SAMPLES
    readings = {"sessions": [0], "rss": [_collected_rss()], "cached": [0]}
    started = time.perf_counter()

    async def drive(numbers: range) -> None:
        queue = iter(numbers)

        async def cycles() -> None:
            for number in queue:  # shared: each task takes the next session
                await subject.resume(await subject.pause(f"s{number}"))

        await asyncio.gather(*(cycles() for _ in range(TASKS)))

    try:
        for done in range(step, sessions + 1, step):
            await drive(range(done - step, done))
            readings["sessions"].append(done)
            readings["rss"].append(_collected_rss())
            readings["cached"].append(subject.host.transcripts.held)
    finally:
        await subject.close()
    return {**readings, "seconds": time.perf_counter() - started}


async def _cache_probe(folder: str, sessions: int) -> dict[str, Any]:
    """What the cache's messages cost: counted by the RSS they add, then by tracemalloc on a second
    cache filled the same way (tracemalloc's own records would inflate an RSS read under it)."""
    from bench.symfonic_side import SCOPE
    from bench.workload import history_roles
    from symfonic import Message
    from symfonic.platform.transcripts import CachedTranscripts
    from symfonic.services.conversation import TranscriptService, TranscriptTail
    from symfonic.stores.opening import open_store

    store = await open_store(f"sqlite:///{folder}/cache.db")
    history = tuple(Message(role, text)  # type: ignore[arg-type]
                    for role, text in history_roles(SESSION_MESSAGES))
    names = [f"c{n}" for n in range(sessions)]
    for name in names:
        await store.transcripts.append(TranscriptTail(scope=SCOPE, session_id=name, start=0,
                                                      messages=history))

    async def opened() -> TranscriptService:
        return store.transcripts

    async def filled() -> CachedTranscripts:
        cache = CachedTranscripts(opened)
        for name in names:
            await cache.load(SCOPE, name)  # decoded afresh from SQLite, as a host reads them
        return cache

    try:
        for name in names:  # warm SQLite's page cache and the allocator before the baseline
            await store.transcripts.load(SCOPE, name)
        before = _collected_rss()
        kept = await filled()
        rss = _collected_rss() - before
        tracemalloc.start()
        traced_before = tracemalloc.get_traced_memory()[0]
        also = await filled()
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - traced_before
        tracemalloc.stop()
        del kept, also
    finally:
        await store.close()
    messages = sessions * SESSION_MESSAGES
    return {"messages": messages, "traced": traced / messages, "rss": rss / messages}


def _probe(*arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bench.memory", "probe", *arguments], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _answer(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=1800)
    if process.returncode != 0:
        raise RuntimeError(f"memory probe {process.args!r} failed:\n{err}")
    answer: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return answer


def _host_run(answer: dict[str, Any]) -> HostRun:
    return HostRun(sessions=answer["sessions"], rss=answer["rss"], cached=answer["cached"],
                   seconds=answer["seconds"])


def measure_memory(quick: bool = False) -> MemoryResult:
    from symfonic.platform.transcripts import DEFAULT_CAPACITY

    sessions = QUICK_SESSIONS if quick else SESSIONS
    with tempfile.TemporaryDirectory(prefix="symfonic-bench-memory-") as folder:
        # The two hosts at once: they share nothing but the machine, and RSS is per process.
        hosts = [_probe("host", f"sqlite:///{folder}/{name}.db", str(sessions), capacity)
                 for name, capacity in (("cached", "default"), ("uncached", "0"))]
        try:
            cached, uncached = (_host_run(_answer(process)) for process in hosts)
        finally:  # one probe failed: the other must not go on writing into a removed folder
            for process in hosts:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        if any(uncached.cached):
            raise RuntimeError("the host without a cache cached messages: it no longer reads "
                               "host.transcripts at each run, and the comparison means nothing")
        cache = _answer(_probe("cache", folder, str(QUICK_CACHE_SESSIONS if quick
                                                   else CACHE_SESSIONS)))
    return MemoryResult(cached=cached, uncached=uncached, capacity=DEFAULT_CAPACITY,
                        messages=cache["messages"], traced_per_message=cache["traced"],
                        rss_per_message=cache["rss"])


def _mib(size: float) -> str:
    return f"{size / MIB:.1f}"


def memory_table(result: MemoryResult) -> str:
    rows = ["| sessions paused and resumed | RSS, the host (MiB) | messages in its transcript "
            "cache | RSS, the host without the cache (MiB) |", "|---|---|---|---|"]
    for index, sessions in enumerate(result.cached.sessions):
        rows.append(f"| {sessions:,} | {_mib(result.cached.rss[index])} | "
                    f"{result.cached.cached[index]:,} | {_mib(result.uncached.rss[index])} |")
    return "\n".join(rows) + "\n"


def memory_section(result: MemoryResult) -> str:
    first, last = result.cached.sessions[result.middle], result.cached.sessions[-1]
    full = result.cached.cached[-1] >= result.capacity
    return (
        "## Memory: a host's RSS over sessions paused and resumed\n\n"
        f"{last:,} fresh sessions, each paused (`agent.run`) and resumed (`host.continuation."
        f"resume`) to completion, {TASKS} at once, over SQLite; the RSS read after a "
        "`gc.collect()` at every tenth. Two hosts run side by side, each in a process of its "
        "own: the host as it is, and the same host whose transcript cache keeps nothing. The "
        f"cache is bounded by a number of messages ({result.capacity:,} by default) and is the "
        "one structure meant to grow with traffic, so the verdict is in two parts: the host "
        f"without it must grow by at most {_mib(GROWTH_BOUND)} MiB from {first:,} sessions to "
        f"{last:,} (it grew {_mib(result.second_half)} MiB; "
        f"{_mib(result.uncached.growth(0, result.middle))} MiB before, start-up and warm-up "
        "included), and the cache must never hold more than its capacity. A session leaves two "
        "of its four messages in the cache (the two its resume read back; the completed turn's "
        "are written, not read), so this workload fills the cache at exactly "
        f"{result.capacity // 2:,} "
        + ("sessions: the run ends with the cache at its limit, the host at its ceiling for "
           "messages of this size.\n\n" if full else
           f"sessions; this run stopped at {result.cached.cached[-1]:,} cached messages.\n\n")
        + memory_table(result)
        + f"\nAt the end the cache accounts for {_mib(result.cache_bytes)} MiB, "
          f"{result.run_per_message:.0f} bytes per cached message of this workload (a short user "
          "message, or an assistant message with one `ask_user` call). Measured apart, with "
          f"{result.messages:,} messages of 200 characters (the bench's history messages) read "
          f"from SQLite into a `CachedTranscripts`: {result.traced_per_message:.0f} bytes per "
          f"message by tracemalloc, {result.rss_per_message:.0f} by the RSS they add, so a full "
          f"cache of such messages holds about "
          f"{_mib(result.capacity * result.rss_per_message)} MiB. The cache is bounded by a "
          "count, not by bytes: longer messages (tool results) cost proportionally more.\n")


def memory_checks(result: MemoryResult) -> list[tuple[str, str, bool]]:
    last = result.cached.sessions[-1]
    bounded = (f"RSS {_mib(result.cached.rss[-1])} MiB after {last:,} sessions, of which the "
               f"transcript cache {_mib(result.cache_bytes)} MiB ({result.cached.cached[-1]:,} "
               f"messages, limit {result.capacity:,}); without the cache "
               f"{_mib(result.second_half)} MiB growth over the second half "
               f"(bound {_mib(GROWTH_BOUND)} MiB)")
    per_message = (f"{result.traced_per_message:.0f} B per 200-character message (tracemalloc), "
                   f"{result.rss_per_message:.0f} B by RSS; {result.run_per_message:.0f} B per "
                   f"message of the run; the default capacity assumes about {SIZED_AT} B")
    return [
        ("Memory: RSS of a host after 100,000 sessions paused and resumed stays bounded "
         "(caches have limits)", bounded, result.bounded),
        ("Memory: bytes per cached message reported", per_message,
         result.traced_per_message <= SIZED_AT),
    ]


def main() -> None:
    if sys.argv[1:2] == ["probe"]:
        kind, *rest = sys.argv[2:]
        if kind == "host":
            url, sessions, capacity = rest
            answer = asyncio.run(_host_probe(url, int(sessions),
                                             None if capacity == "default" else int(capacity)))
        else:
            answer = asyncio.run(_cache_probe(rest[0], int(rest[1])))
        print(json.dumps(answer))
        return
    result = measure_memory(quick="--quick" in sys.argv)
    print(memory_section(result))
    for target, measured, passed in memory_checks(result):
        print(f"- [{'x' if passed else ' '}] {target}: {measured}")


if __name__ == "__main__":
    main()
