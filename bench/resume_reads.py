"""What a resume's reads before its claim cost: the ledger row and the turn state.

A resume reads the pause's ledger row and the turn state it resumes from. It sent them as two
statements at once (two driver calls, on two of the pool's connections); now it sends one
(`PauseLedger.get_paused`: the row, with the turn state in a scalar subquery). Both read the
same real pauses (the example's paused refund) from one database, in alternating blocks, alone
and 32 at a time; the host's CPU per read is the process's, which is what bounds a server's
throughput on PostgreSQL.

``python -m bench.resume_reads`` prints the table of docs/benchmarks.md's section;
``bench.run`` includes it.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.scratch import scratch_database
from symfonic import Host, Scope
from symfonic.examples.support import support_agent
from symfonic.stores.opening import Store

SECRET = "a-long-random-secret-for-the-bench"
PAUSES = 32


def ways(store: Store) -> dict[str, Callable[[str, str], Awaitable[Any]]]:
    async def two_statements(jti: str, checkpoint: str) -> Any:
        return await asyncio.gather(store.ledger.get(jti), store.checkpoints.load_state(checkpoint))

    return {"two statements at once (before)": two_statements,
            "one statement (get_paused)": store.ledger.get_paused}


async def timed(read: Callable[[str, str], Awaitable[Any]], pauses: list[tuple[str, str]],
                concurrent: int, rounds: int) -> tuple[float, float]:
    """Wall and process-CPU seconds per read."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        await asyncio.gather(*(read(*pauses[n % len(pauses)]) for n in range(concurrent)))
    count = rounds * concurrent
    return (time.perf_counter() - wall) / count, (time.process_time() - cpu) / count


async def measure(backend: str, blocks: int, reads: int) -> dict[str, Any]:
    found: dict[tuple[str, int], list[tuple[float, float]]] = {}
    with scratch_database(backend, "reads") as url:
        async with Host.open(url, agents=[support_agent()], secret=SECRET) as host:
            agent = host.agent("support", Scope(tenant="acme"))
            pauses = []
            for n in range(PAUSES):
                outcome = await agent.run("refund order 42", session_id=f"s{n}")
                assert outcome.interrupt is not None
                claims = host.continuation.verify(outcome.interrupt.token)
                pauses.append((claims.jti, claims.checkpoint))
            store = await host.store()
            by_way = ways(store)
            for read in by_way.values():  # the same answer both ways, and warm statements
                one = await read(*pauses[0])
                assert one[0] is not None and one[1] is not None
            for block in range(blocks):
                order = list(by_way.items())
                for label, read in order if block % 2 == 0 else reversed(order):
                    for concurrent in (1, 32):
                        found.setdefault((label, concurrent), []).append(
                            await timed(read, pauses, concurrent, max(1, reads // concurrent)))
    return {"backend": backend, "blocks": blocks,
            "cells": {key: (statistics.median(w for w, _ in values),
                            statistics.median(c for _, c in values))
                      for key, values in found.items()}}


def measure_reads(quick: bool, postgres: bool) -> list[dict[str, Any]]:
    blocks, reads = (2, 320) if quick else (8, 1280)
    backends = ["sqlite"] + (["postgres"] if postgres else [])
    return [asyncio.run(measure(backend, blocks, reads)) for backend in backends]


def reads_table(results: list[dict[str, Any]]) -> str:
    lines = ["| backend | reads at once | how | wall per read (us) | host CPU per read (us) |",
             "|---|---|---|---|---|"]
    for result in results:
        for (label, concurrent), (wall, cpu) in sorted(result["cells"].items(),
                                                       key=lambda item: item[0][1]):
            lines.append(f"| {result['backend']} | {concurrent} | {label} | {wall * 1e6:.0f} | "
                         f"{cpu * 1e6:.0f} |")
    return "\n".join(lines)


def reads_section(results: list[dict[str, Any]]) -> str:
    blocks = results[0]["blocks"] if results else 0
    return "\n\n".join([
        "## A resume's reads before its claim",
        "`python -m bench.resume_reads`: " + " ".join(__doc__.split("\n\n")[1].split()),
        f"Median of {blocks} alternating blocks per cell.",
        reads_table(results),
    ])


def main(argv: list[str]) -> None:
    print(reads_table(measure_reads("--quick" in argv, "--no-postgres" not in argv)))


if __name__ == "__main__":
    main(sys.argv[1:])
