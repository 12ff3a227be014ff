"""A process that resumes a pause and is killed (``kill -9``) in the middle of its tool."""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta

from symfonic import Host
from tests.platform.lease_agents import SECRET, spec


async def main(url: str, token: str, lease: float) -> None:
    async with Host.open(url, agents=[spec()], secret=SECRET,
                         claim_lease=timedelta(seconds=lease)) as host:
        await host.continuation.resume(token, {"approved": True})


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
