"""memory_entries: expires_at, when an entry may be forgotten

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-10 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.storage.types

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    for table in ("memory_entries", "memory_entry_versions"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column("expires_at", app.storage.types.UTCDateTime(), nullable=True)
            )


def downgrade() -> None:
    for table in ("memory_entries", "memory_entry_versions"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("expires_at")
