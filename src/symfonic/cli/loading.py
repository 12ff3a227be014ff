"""Finding and loading the app every command acts on: a :class:`~symfonic.Host`.

Where the app comes from, first found wins:

1. ``--app module:attribute``;
2. ``$SYMFONIC_APP``;
3. ``app = "module:attribute"`` under ``[tool.symfonic]`` in the ``pyproject.toml`` of the current
   directory or its nearest parent (the nearest ``pyproject.toml`` decides, with or without that
   table: it is the project you are in);
4. the example support agent, :func:`symfonic.examples.support.app`.

The attribute is a ``Host``, or a function taking no arguments (sync or async) that returns one,
as uvicorn takes an ASGI app or (there with ``--factory``) a factory: a callable that is not a
Host is called. The current directory, and the directory of the ``pyproject.toml`` that named the
app, are put first on ``sys.path``, so a project's own modules import without installing it.

How the command line's settings meet a user's host, and why:

- ``--url`` is exported as ``$SYMFONIC_DATABASE_URL`` *before* the app is imported, so an app that
  calls ``Host.open(agents=...)`` without a URL (as ``symfonic new`` writes it) opens the store the
  command names. An app that fixes its own store (another URL, or a store object) contradicts
  ``--url``: that is a configuration error (exit 3), never silently ignored, since acting on
  another database than the one named would be the worst possible outcome of a typo.
- The secret: with ``$SYMFONIC_SECRET`` unset, the development secret (``.symfonic/secret``,
  created on first use, readable by its owner only) is exported as ``$SYMFONIC_SECRET`` before the
  app is imported, so that two commands in two shells agree on it; an app that passes its own
  ``secret=`` keeps it. A ``$SYMFONIC_SECRET`` shorter than 16 characters is refused here, with
  the fix, before an app fails on it.
- ``$SYMFONIC_CLAIM_LEASE`` is read by the example app; a user's app chooses its own lease
  (``Host.open(claim_lease=...)``), which the command line cannot change after the fact.
- ``$SYMFONIC_WEBHOOK_URLS`` turns on ``host.notifications`` for every app, so that pauses made by
  ``symfonic run`` are announced too, not only those of ``symfonic serve``: configuring webhooks
  and announcing nothing would be a silent failure.
- A factory runs in the command's event loop. ``symfonic serve`` runs it in a loop of its own,
  before the server's starts: a factory should compose the host, not open its store (the command,
  or the server, opens it).
"""

from __future__ import annotations

import importlib
import inspect
import os
import secrets
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from symfonic.cli.exits import Exit, fail
from symfonic.errors import SymfonicError
from symfonic.platform.host import SECRET_VARIABLE, Host

APP_VARIABLE = "SYMFONIC_APP"
URL_VARIABLE = "SYMFONIC_DATABASE_URL"
WEBHOOKS_VARIABLE = "SYMFONIC_WEBHOOK_URLS"
DEFAULT_APP = "symfonic.examples.support:app"
DEV_SECRET_FILE = Path(".symfonic/secret")
MIN_SECRET = 16
"""What ``TokenKeys`` accepts; checked here to say how to fix it, before an app trips on it."""


@dataclass(frozen=True)
class AppSource:
    """Which app to load, and who named it (for the messages)."""

    target: str
    """``module:attribute``."""
    origin: str
    """Where the target was read: ``--app``, ``$SYMFONIC_APP``, a pyproject.toml, the default."""
    root: Path | None = None
    """The directory of the pyproject.toml that named the app, put on ``sys.path`` too."""


def find_app(flag: str | None, cwd: Path | None = None) -> AppSource:
    """The app named by ``--app``, ``$SYMFONIC_APP``, the nearest pyproject.toml, or the default."""
    if flag is not None and flag.strip():
        return AppSource(flag.strip(), "--app")
    configured = os.environ.get(APP_VARIABLE, "").strip()
    if configured:
        return AppSource(configured, f"${APP_VARIABLE}")
    pyproject = nearest_pyproject(cwd or Path.cwd())
    if pyproject is not None:
        target = app_in(pyproject)
        if target is not None:
            return AppSource(target, f"[tool.symfonic] app in {pyproject}", pyproject.parent)
    return AppSource(DEFAULT_APP, "the default app (the example support agent)")


def nearest_pyproject(start: Path) -> Path | None:
    for folder in (start.resolve(), *start.resolve().parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def app_in(pyproject: Path) -> str | None:
    """``[tool.symfonic] app`` of ``pyproject``, None when it has none."""
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as unreadable:
        fail(Exit.CONFIGURATION, f"cannot read {pyproject}: {unreadable}")
    tool = data.get("tool")
    table = tool.get("symfonic") if isinstance(tool, dict) else None
    value = table.get("app") if isinstance(table, dict) else None
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        fail(Exit.CONFIGURATION, f"[tool.symfonic] app in {pyproject} must be a string "
                                 "'module:attribute', e.g. app = \"desk.app:app\"")
    return value.strip()


def development_secret() -> str:
    """The local development secret, made on first use (owner-only permissions)."""
    if not DEV_SECRET_FILE.exists():
        DEV_SECRET_FILE.parent.mkdir(parents=True, exist_ok=True)
        DEV_SECRET_FILE.touch(mode=0o600)
        DEV_SECRET_FILE.write_text(secrets.token_urlsafe(32))
    return DEV_SECRET_FILE.read_text().strip()


def prepare_environment(url: str | None) -> None:
    """Export ``--url`` and the secret for the app to pick up (see the module docstring)."""
    if url:
        os.environ[URL_VARIABLE] = url
    secret = os.environ.get(SECRET_VARIABLE, "")
    if not secret:
        os.environ[SECRET_VARIABLE] = development_secret()
    elif len(secret) < MIN_SECRET:
        fail(Exit.CONFIGURATION, f"${SECRET_VARIABLE} has {len(secret)} characters; pause tokens "
             f"need a secret of at least {MIN_SECRET}: set it to a long random string, e.g. "
             "python -c 'import secrets; print(secrets.token_urlsafe(32))'")


def resolve(source: AppSource) -> object:
    """Import ``source.target`` and return the attribute it names."""
    module_name, colon, attribute = source.target.partition(":")
    if not colon or not module_name or not attribute:
        fail(Exit.CONFIGURATION, f"the app {source.target!r} (from {source.origin}) is not "
             "'module:attribute', e.g. 'desk.app:app'")
    for folder in (source.root, Path.cwd()):
        if folder is not None and str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    try:
        value: object = importlib.import_module(module_name)
    except ModuleNotFoundError as missing:
        if missing.name is not None and (module_name + ".").startswith(missing.name + "."):
            fail(Exit.CONFIGURATION, f"cannot import the app {source.target!r} (from "
                 f"{source.origin}): no module named {missing.name!r} here; run symfonic from "
                 "your project's directory, or correct the module name")
        fail(Exit.CONFIGURATION, f"importing the app {source.target!r} failed: {missing}; "
             "install what it needs")
    except SyntaxError as broken:
        fail(Exit.CONFIGURATION, f"the app {source.target!r} does not compile: {broken.msg} "
             f"({broken.filename}, line {broken.lineno})")
    except (ImportError, ValueError, SymfonicError) as refused:
        fail(Exit.CONFIGURATION, f"importing the app {source.target!r} failed: {refused}")
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            fail(Exit.CONFIGURATION, f"the app module {module_name!r} has no attribute "
                 f"{attribute!r} (from {source.origin})")
    return value


async def build(source: AppSource) -> Host:
    """The Host ``source`` names: the attribute itself, or what its factory returns."""
    value = resolve(source)
    if isinstance(value, Host):
        return value
    if not callable(value):
        fail(Exit.CONFIGURATION, f"the app {source.target!r} is a {type(value).__name__}, not a "
             "symfonic Host nor a function returning one")
    try:
        inspect.signature(value).bind()
    except TypeError:
        fail(Exit.CONFIGURATION, f"the app factory {source.target!r} must take no arguments")
    except ValueError:  # no signature to read (a builtin): calling it will tell
        pass
    try:
        made = value()
        if inspect.isawaitable(made):
            made = await made
    except (ImportError, ValueError, SymfonicError) as refused:
        fail(Exit.CONFIGURATION, f"the app factory {source.target!r} failed: {refused}")
    if not isinstance(made, Host):
        fail(Exit.CONFIGURATION, f"the app factory {source.target!r} returned a "
             f"{type(made).__name__}, not a symfonic Host")
    return made


async def load_host(flag: str | None, url: str | None) -> Host:
    """The app's host, configured from the command line and the environment (module docstring)."""
    prepare_environment(url)
    source = find_app(flag)
    host = await build(source)
    if url and host.url != url:
        fail(Exit.CONFIGURATION, f"--url {url} cannot apply: the app {source.target!r} opens its "
             f"own store ({host.url or 'a store object'}); drop --url, or let the app call "
             "Host.open() without a URL so that --url and $SYMFONIC_DATABASE_URL choose")
    if os.environ.get(WEBHOOKS_VARIABLE, "").strip():
        host.enable_notifications()
    return host
