"""PostgreSQL: the tenant tables as Citus can place them on a worker (docs/cluster.md).

1. An empty index on each searched table that names `jet_english`: Citus orders what it
   creates on a new node by the dependencies it follows, which include an index's
   expression but not a generated column's, so the text search configuration now comes
   before those tables. The predicate is never true, so the index holds no row.
2. The entries revision trigger (0005) split in two: Citus creates no trigger that fires on
   TRUNCATE on a table's shard, so the combined one never fired where the rows are and the
   revision stood still; DML and TRUNCATE now have a trigger each.

Revision ID: 0012
Revises: 0010
Create Date: 2026-12-02 04:30:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The tables whose generated search_vector column uses the configuration (migration 0001).
_TABLES = ("memory_events", "memory_entries")
_BUMP = "FOR EACH STATEMENT EXECUTE FUNCTION memory_entries_revision_bump()"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(
            f"CREATE INDEX ix_{table}_search_config ON {table} (seq) "
            "WHERE 'jet_english'::regconfig IS NULL"
        )
    op.execute("DROP TRIGGER memory_entries_revision_bump ON memory_entries")
    op.execute(
        "CREATE TRIGGER memory_entries_revision_bump "
        f"AFTER INSERT OR UPDATE OR DELETE ON memory_entries {_BUMP}"
    )
    op.execute(f"CREATE TRIGGER memory_entries_truncated AFTER TRUNCATE ON memory_entries {_BUMP}")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER memory_entries_truncated ON memory_entries")
    op.execute("DROP TRIGGER memory_entries_revision_bump ON memory_entries")
    op.execute(
        "CREATE TRIGGER memory_entries_revision_bump "
        f"AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON memory_entries {_BUMP}"
    )
    for table in _TABLES:
        op.execute(f"DROP INDEX ix_{table}_search_config")
