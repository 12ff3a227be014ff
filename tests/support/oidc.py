"""A real OpenID provider for the tests: panva's ``oidc-provider`` (npm), run with Node on loopback.

``tests/oidc`` holds its package files; ``.ci/run`` installs them (``npm ci``). Its development
login page takes any password: the person is whoever types their id (``ada``, ``grace``,
``bob``: their names, emails and groups are in ``tests/oidc/provider.mjs``).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from symfonic.transports.http.oidc_config import OIDCConfig
from tests.support.browser import IN_CI
from tests.support.servers import loopback_socket

PROVIDER = Path(__file__).parents[1] / "oidc"
CLIENT_ID = "symfonic-inbox"
CLIENT_SECRET = "the test provider's client secret"


def provider_config(tenant: str = "acme") -> OIDCConfig:
    """An inbox registration at a provider that will listen on a port free now."""
    sock = loopback_socket()
    port = sock.getsockname()[1]
    sock.close()
    return OIDCConfig(issuer=f"http://127.0.0.1:{port}", client_id=CLIENT_ID,
                      client_secret=CLIENT_SECRET, tenant=tenant)


@contextmanager
def running_provider(config: OIDCConfig, redirect_uri: str) -> Iterator[str]:
    """The provider of ``config``, accepting ``redirect_uri``, until the block ends."""
    if not (PROVIDER / "node_modules" / "oidc-provider").exists():
        message = "no oidc-provider: run 'npm ci --prefix tests/oidc' (.ci/run does)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    env = {**os.environ, "OIDC_ISSUER": config.issuer, "OIDC_CLIENT_ID": config.client_id,
           "OIDC_CLIENT_SECRET": config.client_secret, "OIDC_REDIRECT_URI": redirect_uri}
    process = subprocess.Popen(["node", str(PROVIDER / "provider.mjs")], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert process.stdout is not None
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if line.startswith("ready "):
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not ready.wait(30) or process.poll() is not None:
            raise AssertionError(f"the OpenID provider did not start:\n{''.join(lines)}")
        yield config.issuer
    finally:
        process.terminate()
        process.wait(timeout=10)
        reader.join(timeout=10)
        process.stdout.close()
