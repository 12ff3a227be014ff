"""``symfonic serve --processes N``: one listening socket, N server processes accepting on it.

One Python process serving the API is bound by its own CPU long before the database is: each
request's JSON, validation and driver calls run on one core. Several processes on one database
are what symfonic is built for (every claim, sweep, delivery and timer is decided in the store),
so the server scales out on one machine the way it does across machines:

- the parent binds the port once and starts ``N`` children, each a whole ``symfonic serve`` (its
  own host, store connections, event loop and background loops) that inherits the listening
  socket; the kernel hands each new connection to one of them;
- the first child is the *primary*: it issues the development key and prints the banner; the
  others find the key in the store, as any server on the database does, and say only that they
  serve. They are started only once the primary says (through a pipe) that it serves, its key
  written: a guess at how long that takes would let another process, reading the keys before
  the key was there, refuse the printed key until its next refresh;
- ``SIGTERM`` or ``SIGINT`` to the parent is passed on to every child, which drains as one server
  does (``--grace``), and the parent exits once they all have: 0 when each stopped cleanly;
- a child that dies on its own stops the others (a supervisor above, systemd or a container
  runtime, restarts the whole server): half a server that looks whole is worse than none.

Background runs stay with ``symfonic worker`` processes: the children submit them
(``--workers 0``), since each DBOS executor in a server process would compete for the same
queues without the server's knowledge.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import NoReturn

__all__ = ["PRIMARY_VARIABLE", "READY_VARIABLE", "SOCKET_VARIABLE", "inherited_socket",
           "serve_processes", "started_signal"]

SOCKET_VARIABLE = "SYMFONIC_SERVE_SOCKET"
"""The file descriptor of the listening socket a child inherits."""
PRIMARY_VARIABLE = "SYMFONIC_SERVE_PRIMARY"
"""``1`` in the child that issues the development key and prints the banner."""
READY_VARIABLE = "SYMFONIC_SERVE_READY"
"""The file descriptor the primary writes one byte to once it serves (its key in the store)."""
BACKLOG = 2048
POLL = 0.2
STARTUP_SECONDS = 120.0
"""How long the primary may take to start (open the store, migrate it, bind its keys)."""


def inherited_socket() -> socket.socket | None:
    """The listening socket the parent handed this process; None when it was started alone."""
    fd = os.environ.get(SOCKET_VARIABLE)
    return None if not fd else socket.socket(fileno=int(fd))


def is_primary() -> bool:
    """Whether this process issues the development key and prints the banner (a process started
    alone does)."""
    return os.environ.get(PRIMARY_VARIABLE, "1") == "1"


def started_signal() -> Callable[[], None] | None:
    """What the primary calls once it serves, to have the parent start the other processes;
    None in a process that no parent waits for."""
    fd = os.environ.pop(READY_VARIABLE, None)
    if not fd:
        return None

    def started() -> None:
        with os.fdopen(int(fd), "wb") as pipe:
            pipe.write(b"1")

    return started


def serve_processes(count: int, *, host: str, port: int,
                    arguments: Callable[[int], Sequence[str]]) -> NoReturn:
    """Bind ``host:port``, start ``count`` children running ``symfonic <arguments(port)>`` on
    it (the port bound, for ``--port 0``), and supervise them until they stop (see the module's
    docstring); exits with their status."""
    listening = _listen(host, port)
    command = [sys.executable, "-c", "from symfonic.cli import main; main()",
               *arguments(listening.getsockname()[1])]
    inherited = {SOCKET_VARIABLE: str(listening.fileno())}
    children: list[subprocess.Popen[bytes]] = []
    stopping = False

    def stop(_signum: int, _frame: object) -> None:
        # SIGTERM, whatever came: a Ctrl-C in a terminal reaches the children too, and a second
        # SIGINT would make uvicorn cut its connections instead of draining them.
        nonlocal stopping
        stopping = True
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)  # before any child: a stop while the primary starts
    signal.signal(signal.SIGINT, stop)  # must not leave it running without its parent
    readable, writable = os.pipe()
    children.append(subprocess.Popen(
        command, env={**os.environ, **inherited, PRIMARY_VARIABLE: "1",
                      READY_VARIABLE: str(writable)},
        pass_fds=(listening.fileno(), writable)))
    os.close(writable)  # the primary's now: the pipe ends when it writes or stops
    if _started(children[0], readable) and not stopping:
        children.extend(subprocess.Popen(
            command, env={**os.environ, **inherited, PRIMARY_VARIABLE: "0"},
            pass_fds=(listening.fileno(),)) for _ in range(count - 1))
    listening.close()  # the children hold it now
    while any(child.poll() is None for child in children):
        ended = [child for child in children if child.poll() is not None]
        if ended and not stopping:  # one died on its own: stop the rest
            sys.stderr.write(f"symfonic: server process {ended[0].pid} stopped (status "
                             f"{ended[0].returncode}); stopping the others\n")
            stop(signal.SIGTERM, None)
        time.sleep(POLL)
    bad = [child.returncode for child in children if child.returncode not in (0, 130)]
    raise SystemExit(0 if not bad else bad[0] if bad[0] > 0 else 1)


def _started(primary: subprocess.Popen[bytes], readable: int) -> bool:
    """Wait for the primary to say it serves. False when it stopped first (the supervision then
    reports its status) or did not start in time (it is stopped)."""
    try:
        ready, _, _ = select.select([readable], [], [], STARTUP_SECONDS)
        said = os.read(readable, 1) if ready else b""
    finally:
        os.close(readable)
    if not ready:
        sys.stderr.write(f"symfonic: server process {primary.pid} did not start within "
                         f"{STARTUP_SECONDS:.0f} s; stopping it\n")
        primary.terminate()
    return said == b"1"


def _listen(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    listening = socket.socket(family, kind, proto)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening.bind(address)
    listening.listen(BACKLOG)
    listening.set_inheritable(True)
    return listening
