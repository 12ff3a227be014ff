"""Following a pause up while nobody answers it: reminders, then an escalation.

Declared with the interaction (``Approval``, ``Interrupt``, or ``HumanInteraction`` for every
interaction without its own), beside ``ttl`` and ``on_expiry``:

- ``remind_after``: one delay or several (``timedelta(minutes=10)``, or ``[10 min, 30 min]``),
  counted from the moment the pause was made; each reminder announces the pause again to the
  people who have not answered it (``pause.reminded``);
- ``escalate_after`` with ``escalate_to``: at that delay the audience grows by those entries
  (``group:finance-leads``), which the audit trail records, and they are told (``pause.escalated``).

The schedule is stored with the pause, as absolute times, so it survives every restart, and each
step is taken once by whichever host gets to it first (:mod:`symfonic.platform.timers`). Nothing
fires once the pause was answered, revoked, or expired.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from symfonic.capabilities.human.entries import audience_of

__all__ = ["FollowUp", "follow_up_of"]

Delays = timedelta | Sequence[timedelta] | None


@dataclass(frozen=True)
class FollowUp:
    """The reminders and the escalation of one interaction, as delays from the pause."""

    remind_after: tuple[timedelta, ...] = ()
    escalate_after: timedelta | None = None
    escalate_to: tuple[str, ...] = ()

    @property
    def declared(self) -> bool:
        return bool(self.remind_after) or self.escalate_after is not None

    def schedule(self, issued_at: float, expires_at: float) -> list[dict[str, Any]]:
        """The steps as stored with a pause: absolute times, in order, those before its expiry
        only (a step after it could never be taken)."""
        steps: list[dict[str, Any]] = [
            {"at": issued_at + delay.total_seconds(), "kind": "remind", "n": n}
            for n, delay in enumerate(sorted(self.remind_after), start=1)]
        if self.escalate_after is not None:
            steps.append({"at": issued_at + self.escalate_after.total_seconds(),
                          "kind": "escalate", "to": list(self.escalate_to)})
        return sorted((s for s in steps if s["at"] < expires_at), key=lambda s: s["at"])

    def describe(self) -> dict[str, Any]:
        """For the definition's digest, only where declared (see ``HumanInteraction.describe``)."""
        return {"remind_after": [d.total_seconds() for d in self.remind_after],
                "escalate_after": (None if self.escalate_after is None
                                   else self.escalate_after.total_seconds()),
                "escalate_to": list(self.escalate_to)}


NONE = FollowUp()


def follow_up_of(remind_after: Delays, escalate_after: timedelta | None,
                 escalate_to: Sequence[str], owner: str) -> FollowUp:
    """The declaration checked: positive delays, and an escalation that names whom to.

    Raises:
        ValueError: a delay that is not a positive timedelta, an escalation without
            ``escalate_to`` (or entries without ``escalate_after``), or an entry that is not an
            audience entry.
    """
    delays = (() if remind_after is None else (remind_after,)
              if isinstance(remind_after, timedelta) else tuple(remind_after))
    for delay in (*delays, *(() if escalate_after is None else (escalate_after,))):
        if not isinstance(delay, timedelta) or delay <= timedelta(0):
            raise ValueError(f"{owner}: a reminder or escalation delay is a positive timedelta, "
                             f"not {delay!r}")
    if isinstance(escalate_to, str):
        raise TypeError(f"{owner}: escalate_to is a list of entries, not one string: "
                        f"[{escalate_to!r}]")
    entries = audience_of(escalate_to)
    if (escalate_after is None) != (not entries):
        raise ValueError(f"{owner}: escalate_after and escalate_to go together (when, and to "
                         "whom)")
    return FollowUp(remind_after=delays, escalate_after=escalate_after, escalate_to=entries)
