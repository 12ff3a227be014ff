"""Benchmarks of symfonic side by side with LangGraph (DESIGN §7). Not part of the test suite.

Run everything with ``python -m bench.run`` (``--quick`` for a smoke run); the report is written
to ``docs/benchmarks.md``. Needs ``pip install -e '.[bench]'`` and, for the PostgreSQL half, a
server reachable at ``--postgres`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``).
"""
