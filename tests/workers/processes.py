"""``symfonic worker`` processes for the tests, started and killed for real."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APP = "tests.workers.agents:app"
READY_SECONDS = 30.0


class Worker:
    def __init__(self, process: asyncio.subprocess.Process, log: Path) -> None:
        self.process = process
        self.log = log

    async def said(self, words: str, seconds: float = READY_SECONDS) -> str:
        """The next line of its output containing ``words`` (earlier lines are skipped)."""
        assert self.process.stdout is not None
        while True:
            line = await asyncio.wait_for(self.process.stdout.readline(), seconds)
            if not line:
                raise AssertionError(f"the worker ended without saying {words!r}: "
                                     f"{self.log.read_text()}")
            if words in line.decode():
                return line.decode()

    def kill(self) -> None:
        """``kill -9``: no cleanup, no lock released by the process itself."""
        self.process.send_signal(signal.SIGKILL)

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), 15)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


async def start_worker(url: str, folder: Path, name: str, *args: str, **env: str) -> Worker:
    """A worker process on ``url`` (``args`` added to its command line), returned once it says it
    runs."""
    log = folder / f"{name}.stderr"
    command = shutil.which("symfonic", path=str(Path(os.sys.executable).parent))  # type: ignore[attr-defined]
    assert command is not None
    with log.open("w") as stderr:  # the child keeps its own copy
        process = await asyncio.create_subprocess_exec(
            command, "worker", "--app", APP, "--executor-id", name, *args, cwd=REPO,
            stdout=asyncio.subprocess.PIPE, stderr=stderr,
            env={**os.environ, "SYMFONIC_DATABASE_URL": url, "PYTHONPATH": str(REPO), **env})
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), READY_SECONDS)
    except TimeoutError:
        process.kill()
        raise AssertionError(f"worker {name} did not start: {log.read_text()}") from None
    assert b"running" in line, (line, log.read_text())
    return Worker(process, log)


@asynccontextmanager
async def workers_on(url: str, folder: Path) -> AsyncIterator[Callable[..., Awaitable[Worker]]]:
    started: list[Worker] = []

    async def start(name: str, *args: str, **env: str) -> Worker:
        worker = await start_worker(url, folder, name, *args, **env)
        started.append(worker)
        return worker

    try:
        yield start
    finally:
        await asyncio.gather(*(w.stop() for w in started))


async def until(check: Callable[[], bool], seconds: float = 30.0) -> None:
    """Wait until ``check()`` holds (it reads files or rows another process writes)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not check():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for another process")
        await asyncio.sleep(0.02)
