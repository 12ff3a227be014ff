"""``symfonic serve --processes N``: one port, N server processes on one database, the load
spread between them by the kernel, stopped together.

Which process holds a connection is read from ``/proc`` (the sockets each child's file
descriptors name, against ``/proc/net/tcp``): the test sees the kernel spread connections, and
each process answer them, without the server saying which it is.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.support.processes import Server, refund_entries, refused, symfonic
from tests.support.servers import free_port

pytestmark = pytest.mark.e2e  # starts servers


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry))
    return sorted(found)


def established(pid: int, port: int) -> int:
    """How many connections to ``port`` the process ``pid`` holds open."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port, state, inode = int(fields[1].split(":")[1], 16), fields[3], fields[9]
        if local_port == port and state == "01" and inode in inodes:
            count += 1
    return count


def both_ready(server: Server) -> str:
    """The development key, once the primary and the other process both serve.

    The other process starts only once the primary serves, its key in the store: else it could
    read the keys before that one was written, and refuse it until its next refresh."""
    key = server.wait_for(r"API key:\s+(sfk_\S+)").group(1)
    while server.output.count("Application startup complete") < 2:
        server.wait_for("Application startup complete")
    assert server.output.index("Application startup complete") < server.output.index(
        "also serving on"), server.output
    return key


def test_several_processes_serve_one_port_and_stop_together(tmp_path: Path) -> None:
    port = free_port()
    server = Server(tmp_path, "serve", "--port", str(port), "--processes", "2")
    try:
        key = both_ready(server)
        pids = children_of(server.process.pid)
        assert len(pids) == 2, pids
        headers = {"Authorization": f"Bearer {key}"}
        clients = [httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30)
                   for _ in range(16)]
        try:
            with ThreadPoolExecutor(16) as pool:  # each opens its connection and keeps it open
                codes = list(pool.map(lambda client: client.get("/v1/pauses").status_code,
                                      clients))
            assert codes == [200] * 16
            held = [established(pid, port) for pid in pids]
            assert sum(held) == 16 and all(h > 0 for h in held), held

            def cycle(client: httpx.Client) -> str:
                run = client.post("/v1/agents/support/runs",
                                  json={"input": "Please refund order 42."}).json()
                resumed = client.post(f"/v1/pauses/{run['interrupt']['token']}/resume",
                                      json={"answer": {"approved": True}})
                return str(resumed.json()["status"])

            with ThreadPoolExecutor(8) as pool:
                assert list(pool.map(cycle, clients)) == ["completed"] * 16
        finally:
            for client in clients:
                client.close()
    finally:
        assert server.stop() == 0, server.output
    assert len(refund_entries(tmp_path)) == 16  # every refund once, whichever process ran it
    assert all(not Path(f"/proc/{pid}").exists() for pid in pids)


def test_a_process_that_dies_stops_the_server(tmp_path: Path) -> None:
    port = free_port()
    server = Server(tmp_path, "serve", "--port", str(port), "--processes", "2")
    try:
        both_ready(server)
        first, second = children_of(server.process.pid)
        os.kill(second, signal.SIGKILL)
        assert server.process.wait(30) != 0
        server.wait_for(f"server process {second} stopped")
        deadline = time.monotonic() + 10
        while Path(f"/proc/{first}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not Path(f"/proc/{first}").exists()
    finally:
        server.stop()


def test_processes_and_reload_or_workers_are_refused(tmp_path: Path) -> None:
    refused(symfonic(tmp_path, "serve", "--processes", "2", "--reload", check=False), 2,
            "--processes")
    refused(symfonic(tmp_path, "serve", "--processes", "2", "--workers", "2", check=False), 2,
            "symfonic worker")
