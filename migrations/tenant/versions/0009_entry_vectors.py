"""memory_entry_vectors: entries' embeddings per model (search by meaning), the indexer's
lease per model, and the tenant's keyword-only switch

A vector row goes with its entry (ON DELETE CASCADE; SQLite runs with foreign keys on), so
deleting and erasing an entry remove it in the same transaction.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 01:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import app.storage.types

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memory_entry_vectors",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("entry_seq", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["entry_seq"], ["memory_entries.seq"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("model", "entry_seq"),
    )
    op.create_index(
        "ix_memory_entry_vectors_entry_seq", "memory_entry_vectors", ["entry_seq"], unique=False
    )
    op.create_table(
        "memory_embedding_leases",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("owner", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("until", app.storage.types.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("model"),
    )
    op.create_table(
        "memory_search_settings",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("keyword_only", sa.Boolean(), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_memory_search_settings_one_row"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.execute("INSERT INTO memory_search_settings (id, keyword_only) VALUES (1, false)")


def downgrade() -> None:
    op.drop_table("memory_search_settings")
    op.drop_table("memory_embedding_leases")
    op.drop_index("ix_memory_entry_vectors_entry_seq", table_name="memory_entry_vectors")
    op.drop_table("memory_entry_vectors")
