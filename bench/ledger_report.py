"""The ledger-size part's report: its tables, its targets, and what bounds a sweep that missed.

Kept apart from the measuring (:mod:`bench.ledger_size`) so that each stays one job.
``python -m bench.ledger_report [--quick] [--no-postgres]`` measures and prints the section.
"""

from __future__ import annotations

import sys

from bench.latency import quantile
from bench.ledger_size import CALLS, DEFAULT, PAUSERS, TENANTS, LedgerResult, Sweep, measure_ledger
from bench.server_activity import Activity
from bench.targets import Check
from symfonic.services.ledger import SWEEP_BATCH

NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
SLOWEST_MS = 50.0
"""A sweep must never keep a pause waiting longer than this."""


def _q(samples: list[float], q: float) -> float:
    """The ``q`` quantile, in milliseconds."""
    return quantile(samples, q) * 1000


def _ms(samples: list[float], *quantiles: float) -> str:
    return " / ".join(f"{v:.{1 if v >= 10 else 2}f}" for v in (_q(samples, q) for q in quantiles))


def ledger_table(results: list[LedgerResult]) -> str:
    rows = ["| backend | pauses stored | seeding (s) | pause + resume, empty: p50 / p5 / p95 (ms) | "
            "with the ledger full | full / empty | first page, p50 / p95 (ms) | page after a cursor "
            "halfway |", "|---|---|---|---|---|---|---|---|"]
    rows += [f"| {NAMES[r.backend]} | {r.stored:,} | {r.seed_seconds:.1f} | {_ms(r.empty, .5, .05, .95)} "
             f"| {_ms(r.full, .5, .05, .95)} | {r.ratio:.2f}x | {_ms(r.first_page, .5, .95)} | "
             f"{_ms(r.middle_page, .5, .95)} |" for r in results]
    rows += ["", "| backend | sweep | batch | rows changed | sweep time (s) | pauses during it | "
             "pause p50 / p99 / max (ms) | same load, no sweep | the server meanwhile |",
             "|---|---|---|---|---|---|---|---|---|"]
    rows += [f"| {NAMES[r.backend]} | {s.where} | {s.batch:,} | {s.rows:,} | {s.seconds:.2f} | "
             f"{len(s.pauses)} | {_ms(s.pauses, .5, .99, 1)} | {_ms(r.idle, .5, .99, 1)} | "
             f"{'' if s.server is None else s.server.describe()} |"
             for r in results for s in r.sweeps]
    return "\n".join(rows) + "\n"


def ledger_section(results: list[LedgerResult]) -> str:
    stored, outstanding = (results[0].stored, results[0].outstanding) if results else (0, 0)
    return (f"## Ledger size: pausing, listing and sweeping with {stored:,} pauses stored\n\n"
            "Seeded in SQL through the store's schema (COPY + VACUUM ANALYZE on PostgreSQL, "
            "executemany + ANALYZE on SQLite): copies of a real paused and a real completed row, "
            f"each with its own checkpoint, over {TENANTS} tenants and 40 days; {outstanding:,} "
            f"outstanding for the measured tenant, {outstanding:,} past their expiry over the "
            "others, the rest mostly answered. Pause + resume is timed on a fresh and on the seeded "
            "store in alternating blocks; the tenant's first page of outstanding pauses "
            f"(`host.pauses`: 100 tickets with their tokens) and the page after a cursor halfway, "
            f"{CALLS} calls each (judged on the p95). The expired pauses are then swept "
            f"(`host.sweep_expired`) while {PAUSERS} tasks on the host pause and resume, every pause "
            "overlapping the sweep counted: in the host's process (on SQLite its batches share the "
            "store's one writing connection with the pauses), in another (`symfonic pauses sweep`; "
            "on SQLite a pause waits for the file's write lock), and there with smaller batches; "
            "the swept rows are made outstanding again before each. Targets judged at "
            f"`SWEEP_BATCH` ({SWEEP_BATCH}). On PostgreSQL, the server's own work during each "
            "sweep is read from its statistics views (checkpoints, `pg_stat_wal`, "
            "`pg_stat_user_tables`) before and after it.\n\n" + ledger_table(results)
            + sweep_bounds(results))


def ledger_checks(results: list[LedgerResult]) -> list[Check]:
    def check(target: str, measured: str, passed: bool,
              absolute: tuple[float, float, str] | None = None) -> Check:
        return Check(target, measured, passed, ("own part", target), absolute)

    checks = []
    for r in results:
        name = NAMES[r.backend]
        page = _q(r.first_page, .95)
        checks.append(check(f"{name}: pause + resume with {r.stored:,} pauses stored within 1.2x of "
                            f"an empty ledger", f"{r.ratio:.2f}x ({_ms(r.full, .5)} vs "
                            f"{_ms(r.empty, .5)} ms)", r.ratio <= 1.2))
        checks.append(check(f"{name}: first page of {r.outstanding:,} outstanding pauses in ≤5 ms",
                            f"p50 {_ms(r.first_page, .5)} ms, p95 {_ms(r.first_page, .95)} ms",
                            page <= 5, (page, 5.0, "ms")))
        checks += [check(f"{name}: sweeping {s.rows:,} expired pauses ({s.where}) never blocks a "
                         f"pause more than {SLOWEST_MS:g} ms", f"max {_ms(s.pauses, 1)} ms, p99 "
                         f"{_ms(s.pauses, .99)} ms over {len(s.pauses)} pauses; the sweep took "
                         f"{s.seconds:.1f} s", bool(s.pauses) and _q(s.pauses, 1) <= SLOWEST_MS)
                   for s in r.sweeps if s.batch == SWEEP_BATCH]
    return checks


def _missed(sweep: Sweep) -> bool:
    return sweep.batch == SWEEP_BATCH and bool(sweep.pauses) and _q(sweep.pauses, 1) > SLOWEST_MS


def sweep_bounds(results: list[LedgerResult]) -> str:
    """For each sweep that let a pause wait past the target, what ran beside that pause."""
    notes = []
    for r in results:
        smaller = {s.where: s for s in r.sweeps if s.batch < SWEEP_BATCH}
        for s in filter(_missed, r.sweeps):
            text = (f"- **{NAMES[r.backend]}, sweep {s.where}.** The slowest of {len(s.pauses)} "
                    f"pauses took {_ms(s.pauses, 1)} ms (p99 {_ms(s.pauses, .99)} ms; the same load "
                    f"without a sweep: max {_ms(r.idle, 1)}, p99 {_ms(r.idle, .99)}). ")
            text += ("A pause queues for the file's write lock, which a batch holds while it "
                     "commits (the sweep rests as long as each batch took), and a commit that "
                     "crosses `wal_autocheckpoint` copies the log back itself" if r.backend == "sqlite"
                     else "A batch changes only expired rows, picked with `SKIP LOCKED`, and no "
                     "pause writes those, so a pause does not queue for the sweep's row locks")
            helped = True
            if s.where in smaller:
                text += (f". The same sweep in batches of {smaller[s.where].batch} peaked at "
                         f"{_ms(smaller[s.where].pauses, 1)} ms")
                helped = _q(smaller[s.where].pauses, 1) < _q(s.pauses, 1)
            if _q(r.idle, 1) > SLOWEST_MS:
                text += (f". Without any sweep the same load's slowest pause took {_ms(r.idle, 1)} ms, "
                         "over the limit itself: this part's processes share the machine's 2 cores, and "
                         "a pause whose process is not scheduled waits whatever the sweep does")
            notes.append(text + ". " + _server_bound(s.server, helped) + "\n")
    return "" if not notes else "\nWhat bounds the slowest pause of a sweep that missed:\n\n" + "".join(notes)


def _server_bound(server: Activity | None, smaller_helped: bool = True) -> str:
    if server is None:
        if smaller_helped:
            return "What would move it: smaller batches, since each wait is at most one batch's commit."
        return ("Smaller batches did not lower it, so the wait is not one batch's commit but the "
                "checkpoint a commit runs when it crosses `wal_autocheckpoint`, or the machine. "
                "Checkpointing from a connection and a thread of its own (the writer's "
                "`wal_autocheckpoint` off, a `PRAGMA wal_checkpoint(PASSIVE)` beside it) was "
                "tried and declined: on these 2 cores the checkpoints' thread and fsyncs compete "
                "with the commits', and a log that grows between checkpoints slows every read of "
                "it, so the mean pause + resume rose by 3-15% for a p99 a little lower. What would "
                "move it: cores to spare beside the host, or PostgreSQL.")
    ran = f"Meanwhile the server ran {server.describe()}"
    if server.requested:
        return (f"{ran}: the log written meanwhile, mostly the sweep's updates, outgrew "
                "`max_wal_size` and forced a checkpoint, and a commit whose log flush lands in its "
                "writes and fsyncs waits for them. What would move it: pacing the sweep by the log "
                "it writes rather than by time, or a `max_wal_size` its log does not reach.")
    if server.checkpoints or server.autovacuums:
        return (f"{ran}, on its own schedule (the checkpoint timer; autovacuum, which the "
                "sweep's updates invite): a commit that lands in a checkpoint's fsyncs or beside "
                "a vacuum's writes waits for the disk. What would move it is the server's, not "
                "symfonic's: the WAL on a disk of its own, so that a commit's flush does not queue "
                "behind the data files' fsyncs.")
    return (f"{ran}: nothing the server counts. What is left is the machine: the host, the "
            "sweeping process and the server share 2 cores, and a pause whose process is not "
            "scheduled waits. What would move it: a sweeper that does not share cores with the "
            "hosts.")


def main() -> None:
    results = measure_ledger(quick="--quick" in sys.argv,
                             postgres=None if "--no-postgres" in sys.argv else DEFAULT)
    print(ledger_section(results))
    for check in ledger_checks(results):
        print(f"{'PASS' if check.passed else 'MISS'}  {check.target}: {check.measured}")


if __name__ == "__main__":
    main()
