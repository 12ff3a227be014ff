"""The support desk example, end to end through the public API.

Run it with ``python examples/support_desk.py``: a turn pauses for approval of a refund on the
embedded SQLite default, and the same process resumes it from the token alone. ``symfonic demo``
does the same from the command line; ``symfonic resume TOKEN approve`` answers from another shell.
"""

from __future__ import annotations

import asyncio
import os

from symfonic import Host, Scope
from symfonic.examples.support import support_agent


async def main() -> None:
    secret = os.environ.get("SYMFONIC_SECRET", "example-secret-change-me-0123456789")
    async with Host.open(agents=[support_agent()], secret=secret) as host:
        agent = host.agent("support", Scope(tenant="demo"))
        outcome = await agent.run("Please refund order 42.", session_id=os.urandom(4).hex())
        assert outcome.interrupt is not None, outcome
        print(f"paused for {outcome.interrupt.name}: {outcome.interrupt.payload['question']}")
        print(f"resumable: {outcome.interrupt.resumable}")
        resumed = await host.continuation.resume(outcome.interrupt.token, {"approved": True})
        print(f"{resumed.status}: {resumed.output}")


if __name__ == "__main__":
    asyncio.run(main())
