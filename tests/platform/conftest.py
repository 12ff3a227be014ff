"""The continuation tests share the human-interaction tests' fixtures."""

from tests.support.hosts import calls_log, host

__all__ = ["calls_log", "host"]
