"""Which b-trees the pages a pause + resume writes to SQLite belong to: the profile behind the
bytes target.

The example's pause + resume runs on a SQLite file (after warm-up cycles, so that the tables
have their working shape); before each, the WAL is checkpointed and truncated, and after it the
WAL's frame headers are read: each frame is one page one commit wrote, and its page number is
mapped to its table or index through SQLite's ``dbstat`` table. Averaged over the measured
cycles, by commit (the pause, the resume's claim, its outcome).

The same is measured twice, one file after the other, the files differing in nothing but their
page size: one symfonic created (:data:`~symfonic.stores.sqlite.database.PAGE_SIZE`) and one
created beforehand with SQLite's default page of 4 KiB, which symfonic keeps, as it keeps any
existing file's. That pair is the A/B of the page size; the pages per b-tree are what schema
22's indexes changed. Pages are counted, not timed, so the order cannot favour either.

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
SQLITE_DEFAULT_PAGE = 4096
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


@dataclass(frozen=True)
class PageSizes:
    """The same profile on a file symfonic created and on one made with SQLite's default page."""

    symfonic: PageProfile
    sqlite_default: PageProfile


async def measure_page_sizes(cycles: int = 30, warmup: int = 300) -> PageSizes:
    return PageSizes(await measure_pages(cycles, warmup),
                     await measure_pages(cycles, warmup, page_size=SQLITE_DEFAULT_PAGE))


async def measure_pages(cycles: int = 30, warmup: int = 300, *,
                        page_size: int | None = None) -> PageProfile:
    """The profile on a file symfonic creates, or on one created beforehand with ``page_size``
    (symfonic keeps an existing file's page size)."""
    with tempfile.TemporaryDirectory(prefix="symfonic-bench-pages-") as folder:
        path = Path(folder) / "pages.db"
        if page_size is not None:
            made = sqlite3.connect(path)
            made.execute(f"PRAGMA page_size = {page_size}")
            made.execute("VACUUM")  # writes the file's header: its page size is now fixed
            made.close()
        host = Host.open(f"sqlite:///{path}", agents=[ask_spec()], secret=SECRET)
        pages: dict[str, Counter[str]] = {commit: Counter() for commit in COMMITS}
        written_size = 0
        async with host:
            cycle = ask_cycle(host)
            for n in range(warmup):
                await cycle(f"warm-{n}")
            probe = sqlite3.connect(path)
            try:
                for n in range(cycles):
                    probe.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                    await cycle(f"measured-{n}")
                    written_size, commits = _commits(path.with_name(path.name + "-wal"))
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
    if page_size is not None and written_size != page_size:
        raise RuntimeError(f"the file was made with pages of {page_size}, its log has {written_size}")
    return PageProfile(cycles, written_size, pages, row_bytes)


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


def pages_section(sizes: PageSizes) -> str:
    profile, default = sizes.symfonic, sizes.sqlite_default
    total, keyed = profile.total(), profile.total("sqlite_autoindex_")
    ledger = profile.total("symfonic_pauses")
    row = {name: profile.row_bytes.get(name, 0.0) for name in (
        "symfonic_pauses", "symfonic_checkpoints", "symfonic_messages", "symfonic_audit")}
    saved = 1 - profile.kib(total) / default.kib(default.total())
    return (
        "## SQLite pages: which b-trees a pause + resume writes\n\n"
        f"`python -m bench.sqlite_pages`: the example's pause + resume on a SQLite file, "
        f"{profile.cycles} cycles after the tables took their working shape; after each, the "
        "WAL's frames (one page written by one commit each) mapped to their table or index "
        "through SQLite's `dbstat`. Pages per cycle, by commit, on a file symfonic created "
        f"(pages of {profile.page_size} bytes):\n\n"
        + pages_table(profile) +
        f"\n{total:.1f} pages, {profile.kib(total):.0f} KiB of WAL per pause + resume. The same "
        f"on a file created beforehand with SQLite's default page ({default.page_size} bytes; "
        "symfonic keeps an existing file's page size): "
        f"{default.total():.1f} pages, {default.kib(default.total()):.0f} KiB. The smaller page "
        f"writes {saved:.0%} fewer bytes: most of what a cycle changes is one small entry of an "
        "index on a page of its own, and a commit writes each page it changed whole. "
        f"The pauses' table and its indexes write {ledger:.1f} pages: the row, and its entries "
        "in the partial indexes of schema 22 it is listed by (waiting pauses by tenant and by "
        "session, in-flight ones by tenant) and swept by (waiting by expiry, claimed by lease, "
        "answered); none of them holds the status in its key, so a claim takes the entry out "
        "of the waiting ones and into the in-flight ones, and an outcome drops it, where until "
        "schema 21 each change of status moved the entries of the two indexes that held every "
        "pause (5.2 and 3.1 pages a cycle then, 2.0 and 2.0 for the waiting ones now, 2.0 for "
        "the in-flight one). "
        f"`sqlite_autoindex_*` pages ({keyed:.1f}) are the primary-key indexes of tables that "
        "also have a rowid b-tree: what a WITHOUT ROWID layout could save at most. Not taken: "
        "in a WITHOUT ROWID table the row lives in its key's b-tree, whose cells spill to an "
        "overflow page past about a quarter of a page of payload (past nearly a whole page in "
        f"a rowid table). A pause's row is {row['symfonic_pauses']:.0f} bytes on average here, "
        "and every change of status would rewrite that overflow page; checkpoints "
        f"({row['symfonic_checkpoints']:.0f} bytes) and transcript segments "
        f"({row['symfonic_messages']:.0f}) fit in this benchmark's short turns, not in turns "
        "whose messages hold a few hundred characters. The audit trail "
        f"({row['symfonic_audit']:.0f} bytes a row), where it looked free, was tried with "
        "schema 22 and wrote as many pages (6.8 a cycle against 6.9): keyed by tenant and "
        "sequence, its rows land inside the b-tree and split it where the rowid table "
        "appends.\n")


def main() -> None:
    quick = "--quick" in sys.argv
    sizes = asyncio.run(measure_page_sizes(cycles=10 if quick else 30,
                                           warmup=100 if quick else 300))
    print(pages_section(sizes))


if __name__ == "__main__":
    main()
