"""One background round, again and again: how a serving host keeps its timers going.

The expiry decisions (:mod:`.expiry`) and the reminders and escalations (:mod:`.timers`) are each
a round that reads what is due and takes it; a host repeats them until it stops. A round that
fails (the store down, say) is logged and tried again at the next: one failure must not end the
loop, and with it every later reminder.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

logger = logging.getLogger("symfonic.polling")
POLL_SECONDS = 5.0
"""How often a serving host looks for what is due: steps fall due minutes or hours after their
pause, so a few seconds late is on time."""


async def repeatedly(round_: Callable[[], Awaitable[object]], what: str, *,
                     every: float = POLL_SECONDS) -> None:
    """Run ``round_`` every ``every`` seconds until cancelled; ``what`` names it in the log."""
    while True:
        try:
            await round_()
        except Exception:  # one round's failure must not end the loop
            logger.warning("could not take %s; trying again in %.0f s", what, every, exc_info=True)
        await asyncio.sleep(every)
