"""``symfonic``: the command line.

``run`` starts a turn and prints its outcome (a pause prints its token); ``resume`` answers a pause
from its token; ``demo`` does both in the terminal; ``pauses`` lists, shows, revokes and recovers a
tenant's pauses; ``serve`` starts the HTTP service and inbox (``--reload`` for development), whose
API keys ``keys`` manages; ``webhooks`` retries given-up deliveries; ``audit`` exports and
verifies the decisions' hash-chained trail; ``db migrate`` creates or
upgrades the schema; ``new`` writes a project of your own to start from; ``worker`` runs the
app's background turns (:mod:`~symfonic.cli.working`).

Every command but ``new`` acts on an app, a :class:`~symfonic.Host`: ``--app module:attribute``,
else ``$SYMFONIC_APP``, else ``[tool.symfonic] app`` in the nearest ``pyproject.toml``, else the
example support agent. :mod:`symfonic.cli.loading` says how ``--url``, the secret and the
environment meet a user's host.

A user's mistake or a configuration problem prints one line on stderr and exits with a code of its
own; only a bug shows a traceback. The codes, one per kind of error (usage 2, configuration 3, a
refused token 4, an invalid answer 5, the store 6, a busy port 7, a failed turn 8, an audit trail
that does not verify 9), are tabled in :mod:`~symfonic.cli.exits` and at the end of
``symfonic --help``.

The modules: :mod:`~symfonic.cli.exits` (the codes, and the one line), :mod:`~symfonic.cli.loading`
(the app), :mod:`~symfonic.cli.common` (options, running a command against the app),
:mod:`~symfonic.cli.turns`, :mod:`~symfonic.cli.pauses`, :mod:`~symfonic.cli.serving` (with
:mod:`~symfonic.cli.reloading`), :mod:`~symfonic.cli.admin`, :mod:`~symfonic.cli.audit` and
:mod:`~symfonic.cli.scaffold`.
"""

from __future__ import annotations

from symfonic.cli import admin, audit, pauses, scaffold, serving, turns, working
from symfonic.cli.common import app
from symfonic.cli.exits import Exit

__all__ = ["Exit", "app", "main"]
_COMMANDS = (admin, audit, pauses, scaffold, serving, turns, working)
"""Importing these registers their commands on :data:`app`."""


def main() -> None:
    """The ``symfonic`` console script."""
    app()
