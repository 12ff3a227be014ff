"""Exit codes, and the one way the CLI reports a failure: a single line on stderr.

A user's mistake or a configuration problem (a bad answer, a refused token, a missing extra, a
port in use) is not a bug, so it gets no traceback: one line saying what is wrong and what to do,
and an exit code a script can branch on, one per kind of failure. Only an exception nobody
expected keeps its traceback, because then the traceback is what someone needs to read.

The table (also printed at the end of ``symfonic --help``):

====  ===============  ==============================================================
code  name             when
====  ===============  ==============================================================
0     ok               done
1     bug              an unexpected exception (printed with its traceback)
2     usage            a bad argument: unknown agent, key or delivery id, existing dir
3     configuration    --app, secret, database URL, missing extra, environment variable
4     refused          the token or pause is refused: unknown, forged, expired, revoked,
                       already resumed, not interrupted, its agent changed
5     invalid answer   the answer is not JSON where JSON was meant, or fails the schema
6     store            the store is unreachable, or could not record an outcome
7     port in use      ``serve`` cannot listen on the port
8     turn failed      the turn ran and ended ``failed`` (the model or a tool failed)
9     audit broken     ``audit verify`` found a record that no longer fits its chain
10    would strand     ``pauses check``: the app would refuse pauses that still wait
130   interrupted      Ctrl-C
====  ===============  ==============================================================
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum
from typing import NoReturn

import typer

from symfonic.agent import SessionAwaitingAnswer
from symfonic.capabilities.human.audience import AlreadyAnswered, NotAnApprover, PauseAssigned
from symfonic.platform.continuation import (
    AgentNotServed,
    AnswerInvalid,
    ClaimLost,
    ContinuationUnavailable,
    IncompatibleDefinition,
    OutcomeUnknown,
    RecoveryRefused,
    UnknownPauseToken,
)
from symfonic.services.conversation import StoreError, StoreUnavailable


class Exit(IntEnum):
    """The process's exit status, one per kind of failure (see the module docstring)."""

    OK = 0
    BUG = 1
    USAGE = 2
    CONFIGURATION = 3
    REFUSED = 4
    INVALID_ANSWER = 5
    STORE = 6
    PORT_IN_USE = 7
    TURN_FAILED = 8
    AUDIT_BROKEN = 9
    WOULD_STRAND = 10
    INTERRUPTED = 130


EPILOG = ("\b\nExit codes: 0 ok, 1 bug (traceback), 2 usage, 3 configuration (--app, secret, URL, "
          "missing extra), 4 token or pause refused, 5 invalid answer, 6 store unavailable, "
          "7 port in use, 8 the turn failed, 9 the audit trail does not verify, 10 a deploy would "
          "refuse waiting pauses, 130 interrupted.")
"""The table in one paragraph, for ``--help`` (``\\b`` keeps click from re-wrapping it oddly)."""


def fail(code: Exit, message: str) -> NoReturn:
    """Print ``symfonic: message`` as one line on stderr and exit with ``code``."""
    line = " ".join(message.split())  # a driver's message may span lines: one line, always
    sys.stderr.write(f"symfonic: {line}\n")
    sys.stderr.flush()
    raise typer.Exit(int(code))


def explain(error: BaseException) -> tuple[Exit, str] | None:
    """The exit code and line for an exception the CLI expects; None for anything else (a bug).

    Refusals keep their type's name in the line: ``PauseAlreadyResumed`` says more to someone who
    knows symfonic than a paraphrase would, and it is what the HTTP API's error codes echo.
    """
    name = type(error).__name__
    match error:
        case UnknownPauseToken():
            return Exit.REFUSED, f"{name}: {error}"
        case RecoveryRefused() | IncompatibleDefinition() | SessionAwaitingAnswer():
            return Exit.REFUSED, f"{name}: {error}"
        case NotAnApprover() | AlreadyAnswered() | PauseAssigned():
            return Exit.REFUSED, f"{name}: {error}"
        case AnswerInvalid():
            return Exit.INVALID_ANSWER, f"invalid answer: {error}"
        case AgentNotServed():
            return Exit.CONFIGURATION, f"{error} (is --app the app that made this pause?)"
        case ContinuationUnavailable():
            return Exit.CONFIGURATION, f"{name}: {error}"
        case StoreUnavailable():
            return Exit.STORE, (f"the store is unreachable: {error}; check that the database is up "
                                "and that --url or $SYMFONIC_DATABASE_URL names it")
        case OutcomeUnknown() | ClaimLost() | StoreError():
            return Exit.STORE, f"{name}: {error}"
        case typer.Abort():  # Ctrl-C or end of input at a prompt
            return Exit.INTERRUPTED, "interrupted"
        case ImportError():
            text = str(error)
            hint = "" if "pip install" in text else \
                " (is an extra missing? e.g. pip install 'symfonic-runtime[http]')"
            return Exit.CONFIGURATION, f"{text}{hint}"
    return None


@contextmanager
def plainly() -> Iterator[None]:
    """Turn the exceptions :func:`explain` knows into one line and their exit code."""
    try:
        yield
    except Exception as error:
        explained = explain(error)
        if explained is None:
            raise
        fail(*explained)
