"""PostgreSQL: many hosts sharing one database (``pip install 'symfonic-runtime[postgres]'``).

:class:`PostgresStore` composes one small class per core port (transcripts and turn states, the
pause ledger, the outbox) over one :class:`PostgresDatabase`, which owns
the pool, the deadlines and the one-round-trip transaction.
"""

from symfonic.stores.postgres.database import PostgresDatabase, PostgresPort
from symfonic.stores.postgres.store import PostgresStore

__all__ = ["PostgresDatabase", "PostgresPort", "PostgresStore"]
