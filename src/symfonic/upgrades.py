"""Upgrades: carrying pauses made by an earlier definition over a change to their contract.

A deploy that changes what a waiting pause depends on (its contract: the paused interaction's
answer, the parameters of its round's tools) refuses that pause by default
(:mod:`symfonic.platform.continuation.contract`). When the change is intended, the new definition
may declare how to carry those pauses over, per earlier definition::

    AgentSpec(..., upgrades={"support@3c03f42074af6ab5": Upgrade(
        arguments=lambda tool, args: {**args, "amount": f"{args['amount']:.2f}"}
        if tool == "issue_refund" else args)})

The key names the definition that made the pauses: its pin, or the digest after the ``@``. A
pause of that definition then resumes under this one whatever its contract changed, with:

- ``arguments`` applied to every call of its paused round (``(tool name, stored arguments) ->
  arguments for this definition's tool``), before anything runs: the approved call, and the
  calls of the round still to run, use what it returns (a recovery rebuilds the round the same
  way);
- ``answer`` applied to the answer given (by a person, to the form the pause was made with, or
  by the pause itself at its expiry), before it is checked against this definition's schema.

Both run before the pause is claimed: one that raises claims nothing and changes nothing, and an
answer it makes that this definition's schema refuses is ``AnswerInvalid``. ``symfonic pauses
check`` counts such pauses as resumed (``upgrade``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Upgrade", "upgrade_for"]


@dataclass(frozen=True, kw_only=True)
class Upgrade:
    """How to carry a pause of an earlier definition over to this one (see the module).

    Attributes:
        arguments: ``(tool name, stored arguments) -> arguments``, for each call of the paused
            round; None leaves them as stored.
        answer: ``answer -> answer`` in this definition's shape; None takes it as given.
    """

    arguments: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    answer: Callable[[Any], Any] | None = None


def upgrade_for(upgrades: Mapping[str, Upgrade], pin: str) -> Upgrade | None:
    """The upgrade declared for pauses of ``pin``: by the whole pin, or by its digest."""
    return upgrades.get(pin) or upgrades.get(pin.partition("@")[2])
