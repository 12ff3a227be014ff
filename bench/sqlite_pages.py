"""Which b-trees the pages a pause + resume writes to SQLite belong to: the profile behind the
bytes target.

The example's pause + resume runs on a SQLite file (after warm-up cycles, so that the tables
have their working shape); before each, the WAL is checkpointed and truncated, and after it the
WAL's frame headers are read: each frame is one 4 KiB page one commit wrote, and its page number
is mapped to its table or index through SQLite's ``dbstat`` table. Averaged over the measured
cycles, by commit (the pause, the resume's claim, its outcome).

A page written under an ``sqlite_autoindex_*`` name is the primary-key index of a table that
also has a rowid b-tree: what a WITHOUT ROWID table would not write. That is the change the
report named for this target, so this section measures what it could save before it is made.

``python -m bench.sqlite_pages [--quick]`` prints the section; ``bench.run`` includes it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import struct
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.symfonic_side import ask_cycle, ask_spec
from bench.workload import SECRET
from symfonic import Host

COMMITS = ("pause", "claim", "outcome")
FRAME_HEADER = 24
WAL_HEADER = 32


@dataclass(frozen=True)
class PageProfile:
    cycles: int
    page_size: int
    pages: dict[str, Counter[str]]
    """Per commit, pages written by b-tree name, summed over ``cycles``."""
    row_bytes: dict[str, float]
    """Per table, its rows' mean payload in bytes (``dbstat``'s leaf pages)."""

    def per_cycle(self, commit: str, tree: str) -> float:
        return self.pages[commit][tree] / self.cycles

    def trees(self) -> list[str]:
        total: Counter[str] = Counter()
        for counts in self.pages.values():
            total.update(counts)
        return [name for name, _ in total.most_common()]

    def total(self, only: str = "") -> float:
        return sum(count for counts in self.pages.values() for name, count in counts.items()
                   if name.startswith(only)) / self.cycles

    def kib(self, pages: float) -> float:
        return pages * (self.page_size + FRAME_HEADER) / 1024


def _commits(wal: Path) -> tuple[int, list[list[int]]]:
    """The page size and, per commit in the WAL, the page numbers it wrote."""
    data = wal.read_bytes()
    page_size = struct.unpack(">I", data[8:12])[0]
    commits: list[list[int]] = [[]]
    offset = WAL_HEADER
    while offset + FRAME_HEADER <= len(data):
        page, size_after_commit = struct.unpack(">II", data[offset:offset + 8])
        commits[-1].append(page)
        if size_after_commit:
            commits.append([])
        offset += FRAME_HEADER + page_size
    return page_size, [pages for pages in commits if pages]


async def measure_pages(cycles: int = 30, warmup: int = 300) -> PageProfile:
    with tempfile.TemporaryDirectory(prefix="symfonic-bench-pages-") as folder:
        path = Path(folder) / "pages.db"
        host = Host.open(f"sqlite:///{path}", agents=[ask_spec()], secret=SECRET)
        pages: dict[str, Counter[str]] = {commit: Counter() for commit in COMMITS}
        page_size = 4096
        async with host:
            cycle = ask_cycle(host)
            for n in range(warmup):
                await cycle(f"warm-{n}")
            probe = sqlite3.connect(path)
            try:
                for n in range(cycles):
                    probe.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                    await cycle(f"measured-{n}")
                    page_size, commits = _commits(path.with_name(path.name + "-wal"))
                    if len(commits) != len(COMMITS):
                        raise RuntimeError(f"a pause + resume made {len(commits)} commits, not 3")
                    names = dict(probe.execute("SELECT pageno, name FROM dbstat").fetchall())
                    for commit, written in zip(COMMITS, commits, strict=True):
                        pages[commit].update(names.get(page, "(free list)") for page in written)
                row_bytes = {name: payload / cells for name, payload, cells in probe.execute(
                    "SELECT name, SUM(payload), SUM(ncell) FROM dbstat WHERE pagetype = 'leaf' "
                    "AND name IN ('symfonic_pauses', 'symfonic_checkpoints', "
                    "'symfonic_messages', 'symfonic_audit') GROUP BY name").fetchall()}
            finally:
                probe.close()
    return PageProfile(cycles, page_size, pages, row_bytes)


def pages_table(profile: PageProfile) -> str:
    rows = ["| b-tree | " + " | ".join(COMMITS) + " | per pause + resume |",
            "|---|" + "---|" * (len(COMMITS) + 1)]
    for tree in profile.trees():
        cells = " | ".join(f"{profile.per_cycle(commit, tree):.2f}" for commit in COMMITS)
        total = sum(profile.per_cycle(commit, tree) for commit in COMMITS)
        rows.append(f"| `{tree}` | {cells} | {total:.2f} |")
    sums = " | ".join(f"{sum(profile.pages[commit].values()) / profile.cycles:.2f}"
                      for commit in COMMITS)
    rows.append(f"| all | {sums} | {profile.total():.2f} |")
    return "\n".join(rows) + "\n"


def pages_section(profile: PageProfile) -> str:
    total, keyed = profile.total(), profile.total("sqlite_autoindex_")
    ledger = profile.total("symfonic_pauses")
    sizes = {name: profile.row_bytes.get(name, 0.0) for name in (
        "symfonic_pauses", "symfonic_checkpoints", "symfonic_messages", "symfonic_audit")}
    audit_key = (profile.per_cycle("claim", "sqlite_autoindex_symfonic_audit_1")
                 + profile.per_cycle("outcome", "sqlite_autoindex_symfonic_audit_1"))
    return (
        "## SQLite pages: which b-trees a pause + resume writes\n\n"
        f"`python -m bench.sqlite_pages`: the example's pause + resume on a SQLite file, "
        f"{profile.cycles} cycles after the tables took their working shape; after each, the "
        "WAL's frames (one page written by one commit each) mapped to their table or index "
        "through SQLite's `dbstat`. Pages per cycle, by commit:\n\n"
        + pages_table(profile) +
        f"\n{total:.1f} pages, {profile.kib(total):.0f} KiB of WAL per pause + resume. "
        f"The pauses' table and its indexes write {ledger:.1f} of them: a pause's row and its "
        "entries in the indexes the ledger is listed (by scope and status, by session) and swept "
        "(outstanding by expiry, claimed by lease, answered) by; each change of status moves "
        "the row's entry in every index that holds the status. "
        f"`sqlite_autoindex_*` pages ({keyed:.1f}) are the primary-key indexes of tables that "
        "also have a rowid b-tree: the most a WITHOUT ROWID layout could save, "
        f"{profile.kib(keyed):.0f} KiB, leaving {profile.kib(total - keyed):.0f} KiB. It was not "
        "taken: in a WITHOUT ROWID table the row lives in its key's b-tree, whose cells spill "
        "to an overflow page past about 1 KiB of payload (past about 4 KiB in a rowid table). "
        f"A pause's row is {sizes['symfonic_pauses']:.0f} bytes on average here (its question, "
        "answer schema and tools' schemas), so on the ledger the change trades its key page for "
        f"an overflow page. Checkpoints ({sizes['symfonic_checkpoints']:.0f} bytes) and "
        f"transcript segments ({sizes['symfonic_messages']:.0f}) fit in this benchmark's short "
        "turns, but a segment holds a whole turn's messages, so any turn whose messages hold "
        "more than about 1,000 characters would write an overflow page where it saves a key "
        "page. Where it cannot cost, the audit trail "
        f"({sizes['symfonic_audit']:.0f} bytes a row), it saves {audit_key:.1f} pages a cycle, "
        f"{audit_key / total:.0%} of the whole. What the bytes target misses by is the "
        "ledger's indexes, which "
        "listing and sweeping need.\n")


def main() -> None:
    quick = "--quick" in sys.argv
    profile = asyncio.run(measure_pages(cycles=10 if quick else 30, warmup=100 if quick else 300))
    print(pages_section(profile))


if __name__ == "__main__":
    main()
