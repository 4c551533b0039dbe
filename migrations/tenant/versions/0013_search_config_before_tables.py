"""PostgreSQL: an empty index on each searched table that names `jet_english`, so Citus
creates the text search configuration before those tables when it copies them to a node.

Citus orders what it creates on a new node by the dependencies it follows; a generated
column's use of the configuration is not one of them, but an index expression's is. The
predicate is never true, so the index holds no row and costs an insert nothing (PostgreSQL
folds the constant predicate). docs/cluster.md, Adding a worker.

Revision ID: 0013
Revises: 0010
Create Date: 2026-12-02 04:30:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The tables whose generated search_vector column uses the configuration (migration 0001).
_TABLES = ("memory_events", "memory_entries")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(
            f"CREATE INDEX ix_{table}_search_config ON {table} (seq) "
            "WHERE 'jet_english'::regconfig IS NULL"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"DROP INDEX ix_{table}_search_config")
