"""Versions of an agent served side by side, and the check to run before a deploy.

**Versions.** ``Host.open(agents=[support_v2, support_v1])`` (or ``retired=[support_v1]``) serves
two definitions of one agent. The first serves every new run; each earlier one resumes the pauses
it made, for as long as it is served. A pause goes to the version whose pin it carries when that
version is served, else to the current one, which resumes it only if it keeps the pause's
contract (:mod:`symfonic.platform.continuation.contract`) or names its pin in
``compatible_with``. ``symfonic pauses list --version PIN`` shows what still waits on an old one,
so that it can be retired once drained.

**The check.** :func:`judge` reads the pauses that still wait, grouped by the definition that
made them and their contract (:meth:`PauseLedger.waiting_contracts`, one scan, no transcript),
and says for each group what the given definitions would do with it, by the very rules a resume
follows: resumed by its own version, by a definition that declares an upgrade for it
(:mod:`symfonic.upgrades`) or vouches for its pin, by one that keeps its contract; or refused,
with why. ``host.versions.check_compatibility(...)`` and ``symfonic pauses
check --app NEW`` run it against the definitions about to be deployed. It lives on
``host.versions`` rather than on ``Host`` itself, whose surface is a composition root's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from symfonic.agent import AgentSpec
from symfonic.platform.continuation.contract import How, judged
from symfonic.services.ledger import WaitingContract
from symfonic.stores.opening import Store

__all__ = ["CompatibilityReport", "ServedVersions", "Verdict", "judge", "resuming_version",
           "served_versions"]

def served_versions(agents: Sequence[AgentSpec],
                    retired: Sequence[AgentSpec] = ()) -> dict[str, tuple[AgentSpec, ...]]:
    """Every definition by agent name, in the order given, ``retired`` ones after.

    Raises:
        ValueError: one definition given twice, or a retired version of no served agent.
    """
    versions: dict[str, list[AgentSpec]] = {}
    for spec in agents:
        versions.setdefault(spec.name, []).append(spec)
    for spec in retired:
        if spec.name not in versions:
            raise ValueError(f"retired version {spec.pin} is of no agent this host serves: "
                             "serve its current version too")
        versions[spec.name].append(spec)
    for name, specs in versions.items():
        pins = [spec.pin for spec in specs]
        if len(set(pins)) != len(pins):
            raise ValueError(f"agent {name!r} is listed twice with the same definition ({pins}): "
                             "versions served side by side must differ")
    return {name: tuple(specs) for name, specs in versions.items()}


class Hosting(Protocol):
    """What the versions need of the host that serves them."""

    async def store(self) -> Store: ...

    def now(self) -> float: ...


class ServedVersions:
    """A host's definitions by agent, the current one first: ``host.versions``."""

    def __init__(self, host: Hosting, agents: Sequence[AgentSpec],
                 retired: Sequence[AgentSpec] = ()) -> None:
        self._host = host
        self._by_name = served_versions(agents, retired)

    def of(self, name: str) -> tuple[AgentSpec, ...]:
        """Every served definition of the agent ``name``, the current one first (empty when it
        is not served)."""
        return self._by_name.get(name, ())

    def current(self) -> dict[str, AgentSpec]:
        """The definition of each agent that serves new runs."""
        return {name: versions[0] for name, versions in self._by_name.items()}

    def resuming(self, pin: str) -> AgentSpec | None:
        """The definition that resumes a pause of ``pin`` (see :func:`resuming_version`); None
        when its agent is not served."""
        versions = self._by_name.get(pin.partition("@")[0])
        return None if not versions else resuming_version(versions, pin)

    def rewrap(self, wrap: Callable[[AgentSpec], AgentSpec]) -> None:
        """Replace every definition by ``wrap(definition)`` (the workers make them durable)."""
        self._by_name = {name: tuple(wrap(spec) for spec in versions)
                         for name, versions in self._by_name.items()}

    async def check_compatibility(self, agents: Sequence[AgentSpec] | None = None,
                                  retired: Sequence[AgentSpec] = ()) -> CompatibilityReport:
        """What a deploy of ``agents`` (and ``retired`` versions; default: this host's own)
        would do to the pauses that still wait in the host's database: per agent and paused
        definition, how many would resume and how, how many would be refused and why. One
        grouped scan of the ledger, no transcript."""
        versions = self._by_name if agents is None else served_versions(agents, retired)
        groups = await (await self._host.store()).ledger.waiting_contracts(self._host.now())
        return await judge(versions, groups)


def resuming_version(versions: Sequence[AgentSpec], pin: str) -> AgentSpec:
    """The version that resumes a pause of ``pin``: its own when served, else the current."""
    return next((spec for spec in versions if spec.pin == pin), versions[0])


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """What a deploy does to one group of waiting pauses.

    Attributes:
        agent: The agent's name.
        paused_pin: The definition that made them.
        interaction: The interaction they wait on.
        count: How many.
        how: ``own_version`` (that definition is served), ``upgrade`` (the serving one declares
            how to carry them over), ``compatible_with`` (the serving one vouches for the pin),
            ``contract_kept`` (the serving one keeps their contract), or ``refused``.
        resumed_by: The pin that would resume them; None when refused.
        why: Why they would be refused, in one sentence (empty otherwise).
        changes: The contract's changes that refuse them, each said plainly.
    """

    agent: str
    paused_pin: str
    interaction: str
    count: int
    how: How
    resumed_by: str | None
    why: str = ""
    changes: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        return self.how == "refused"

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "paused_pin": self.paused_pin,
                "interaction": self.interaction, "count": self.count, "how": self.how,
                "resumed_by": self.resumed_by, "why": self.why, "changes": list(self.changes)}


@dataclass(frozen=True)
class CompatibilityReport:
    """Every group's :class:`Verdict`, by agent and paused definition."""

    verdicts: tuple[Verdict, ...]

    @property
    def refused(self) -> int:
        """How many waiting pauses the deploy would refuse."""
        return sum(v.count for v in self.verdicts if v.refused)

    @property
    def resumed(self) -> int:
        """How many it would resume."""
        return sum(v.count for v in self.verdicts if not v.refused)

    @property
    def ok(self) -> bool:
        """No waiting pause would be refused."""
        return self.refused == 0

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "resumed": self.resumed, "refused": self.refused,
                "verdicts": [v.to_dict() for v in self.verdicts]}


async def judge(versions: Mapping[str, Sequence[AgentSpec]],
                groups: Sequence[WaitingContract]) -> CompatibilityReport:
    """What ``versions`` (by agent name, the current one first) would do to each group: the
    version a resume would pick (:func:`resuming_version`), judged as a resume judges
    (:func:`~symfonic.platform.continuation.contract.judged`)."""
    verdicts = [await _verdict(versions, group) for group in groups]
    verdicts.sort(key=lambda v: (v.agent, v.refused, v.paused_pin, v.interaction))
    return CompatibilityReport(tuple(verdicts))


async def _verdict(versions: Mapping[str, Sequence[AgentSpec]], group: WaitingContract) -> Verdict:
    name = group.pin.partition("@")[0]
    facts = Verdict(agent=name, paused_pin=group.pin, interaction=group.name, count=group.count,
                    how="refused", resumed_by=None)
    served = versions.get(name)
    if not served:
        return dataclasses.replace(facts, why=f"no agent named {name!r} is served")
    spec = resuming_version(served, group.pin)
    how, changes = await judged(spec, group)
    if how != "refused":
        return dataclasses.replace(facts, how=how, resumed_by=spec.pin)
    why = (f"{spec.pin} changed what resuming them depends on" if changes else
           "stored before contracts: only its own definition resumes it, or one that names its "
           "pin in compatible_with")
    return dataclasses.replace(facts, why=why, changes=tuple(changes))
