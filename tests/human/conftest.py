"""The human-interaction tests' fixtures (shared with the continuation tests)."""

from tests.support.hosts import calls_log, host

__all__ = ["calls_log", "host"]
