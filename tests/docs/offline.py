"""An environment for docs builds and samples that reaches no network."""

from __future__ import annotations

import os

DEAD_PROXY = "http://127.0.0.1:9"
"""The discard port: a sample or a build that tries to reach the internet fails at once."""


def offline_environment(**extra: str) -> dict[str, str]:
    """This process's environment without symfonic's or the model providers' settings (a sample
    must not depend on the reader's shell), with every proxy pointed at a dead port."""
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith(("SYMFONIC_", "OPENAI_", "ANTHROPIC_"))
                   and name.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    environment.update(HTTP_PROXY=DEAD_PROXY, HTTPS_PROXY=DEAD_PROXY, ALL_PROXY=DEAD_PROXY,
                       NO_PROXY="127.0.0.1,localhost", NO_MKDOCS_2_WARNING="1",
                       PYTHONDONTWRITEBYTECODE="1")
    environment.update(extra)
    return environment
